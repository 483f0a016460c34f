import FoundationEssentials

/// What both templates share: the offers of every widget, the check before a document is sent, the
/// stale marker (the node or bar grayed, the subtitle naming the silent meters), and the documents
/// asked for from outside the push cycle.
extension FlowEngine {
    /// Offers every widget its content: the flows, then the bars that read their totals.
    mutating func offerAll(at now: Date, urgent: Bool, into out: inout [Output]) {
        for position in board.widgets.indices { offer(position, at: now, urgent: urgent, into: &out) }
    }

    /// Offers widget `position` its document, made by its template; a push goes out when its
    /// policy says so. While a burst of readings is still settling, an ordinary offer waits for
    /// its end.
    mutating func offer(_ position: Int, at now: Date, urgent: Bool, into out: inout [Output]) {
        board.widgets[position].batchedSince = nil
        if !urgent, board.widgets[position].policy.isSettling(at: now) { return }
        if board.widgets[position].flow != nil {
            offerFlow(position, at: now, urgent: urgent, into: &out)
        } else {
            offerProgress(position, at: now, urgent: urgent, into: &out)
        }
    }

    /// Widget `position`'s document at `now` as its template makes it, with what of it is held;
    /// nil while it has nothing to show.
    mutating func shownDocument(of position: Int, at now: Date, into out: inout [Output]) -> ShownDocument? {
        guard board.widgets[position].flow != nil else {
            return gaugeDocument(of: position, at: now).map { ShownDocument(content: .progress($0.content), held: HeldMark(bar: $0.isHeld)) }
        }
        var held: Set<NodePlace> = []
        var balanceKnown = false
        let flow = content(of: position, at: now, held: &held, balanceKnown: &balanceKnown, into: &out)
        if flow.inputs == nil, flow.output == nil, flow.storage == nil, flow.exchange == nil { return nil }
        return ShownDocument(content: .flow(flow), held: HeldMark(nodes: held))
    }

    /// True when the document broke no rule (`violations` empty); otherwise the log says why it
    /// is not sent.
    mutating func isValid(_ violations: [ContentViolation], of name: String, at now: Date, into out: inout [Output]) -> Bool {
        guard violations.isEmpty else {
            note(.error, key: "invalid:\(name)", at: now, into: &out) {
                "widget '\(name)': not sent, the widget would reject it: \(violations.map(\.description).joined(separator: "; "))"
            }
            return false
        }
        return true
    }

    // MARK: - The stale marker

    /// The color of a node that shows a held reading.
    static let staleColor = "gray"

    /// Notes the nodes a stale marker names for node `index` of widget `position`, which shows held
    /// readings of the silent `sources`, with since when they are silent: the node itself, or for
    /// the derived output the exchange or storage it cannot do without.
    func noteSilent(_ index: Int, heldFor sources: [Int], inWidget position: Int, at now: Date, into silent: inout [Int: Date]) {
        let nodes = board.widgets[position].flow!.nodes
        for source in sources {
            let since = self.bank.sources[source].lastValueAt ?? now
            let named = nodes[index].isBalance
                ? nodes.indices.filter { other in
                    nodes[other].place.slot != .inputs && nodes[other].terms.contains { $0.source == source }
                }
                : [index]
            for other in named { silent[other] = min(silent[other] ?? since, since) }
        }
    }

    /// The silent nodes of widget `position` by name, in document order.
    func silentNames(_ silent: [Int: Date], inWidget position: Int) -> [(name: String, since: Date)] {
        silent.keys.sorted().map { (nodeName(board.widgets[position].flow!.nodes[$0]), silent[$0]!) }
    }

    /// A node's name for people: its configured name, else its slot.
    func nodeName(_ node: NodeState) -> String { node.config.name ?? node.place.slot.rawValue }

    /// `Grid: no reading since 14:02`, `Grid, Battery: no reading since 13:50` (the earliest).
    func staleSubtitle(_ silent: [(name: String, since: Date)], at now: Date) -> String {
        let names = silent.map(\.name)
        var who = names.joined(separator: ", ")
        if who.count > 40, names.count > 1 { who = "\(names[0]) +\(names.count - 1)" }
        return "\(who): no reading since \(zone.clockText(at: silent.map(\.since).min() ?? now, today: now))"
    }

    // MARK: - Documents asked for

    /// The document each widget shows now (its last push), by widget name.
    public var deliveredContent: [String: JSONValue] {
        var documents: [String: JSONValue] = [:]
        for widget in board.widgets { documents[widget.name] = widget.policy.delivered?.json }
        return documents
    }

    /// Each widget's document (flow and progress) computed at `now`, quantized per its policy, with
    /// what of it is held, by widget name. Widgets with nothing to show yet are left out, as they
    /// are never pushed. The engine is not changed: the documents are computed on a copy, and its
    /// sign warnings are not reported again.
    public func currentDocuments(at now: Date) -> [String: ShownDocument] {
        var engine = self
        var ignored: [Output] = []
        var documents: [String: ShownDocument] = [:]
        for position in engine.board.widgets.indices {
            documents[engine.board.widgets[position].name] = engine.shownDocument(of: position, at: now, into: &ignored)
        }
        return documents
    }
}
