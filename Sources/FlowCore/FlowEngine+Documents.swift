import FoundationEssentials

/// What the widgets would show, asked from outside the push cycle: for a picture of a saved state
/// (`flowbridge render`), where nothing is pushed and the clock is the state's own.
extension FlowEngine {
    /// Each widget's document (flow and progress) computed at `now`, quantized per its policy, by
    /// widget name. Widgets with nothing to show yet are left out, as they are never pushed. The
    /// engine is not changed: the documents are computed on a copy, and its sign warnings are not
    /// reported again.
    public func currentDocuments(at now: Date) -> [String: WidgetContent] {
        var engine = self
        var ignored: [Output] = []
        var documents: [String: WidgetContent] = [:]
        for position in engine.widgets.indices {
            let flow = engine.content(of: position, at: now, into: &ignored)
            if flow.inputs == nil, flow.output == nil, flow.storage == nil, flow.exchange == nil { continue }
            documents[engine.widgets[position].config.name] = .flow(flow)
        }
        for position in engine.gauges.indices {
            guard let gauge = engine.gaugeDocument(of: position, at: now) else { continue }
            documents[engine.gauges[position].config.name] = .progress(gauge.content)
        }
        return documents
    }

    /// The latest moment the engine knows of: its clock, else (a restored state, before any event)
    /// its newest reading or sample of a total. Nil for a state without any.
    public var latestKnownTime: Date? {
        if let clock { return clock }
        var times = sources.compactMap { $0.reading?.at }
        for widget in widgets {
            for node in widget.nodes {
                if let sample = node.total?.lastSample { times.append(node.total?.countedUntil ?? sample.at) }
                if let counted = node.total?.counter?.lastAt { times.append(counted) }
            }
        }
        return times.max()
    }
}
