import FlowCore
import FoundationEssentials

/// A push in one line a person reads, made from the document the widget shows after it (never
/// from the patch, which says only what changed):
///
///     12:41:07 power: Solar 3.2 kW → Home 1.0 kW, Battery +800 W 76%, Grid −1.4 kW export; today Solar 12.4 kWh, Grid 3.1 kWh
///     12:41:07 battery: Battery 76% ↑; Charging 800 W, Charged today 3.2 kWh, Full in 1 h 20 min
///
/// Signs are the widget's: the storage + filling, − draining; the exchange + importing, − exporting,
/// said in words too. What the engine marks held (a node or bar showing a held reading of a silent
/// meter, `held`) is marked `(held)`, as the picture draws it dashed; a node the user colors gray is
/// not. `run --summary` prints it under each push's NDJSON line.
public enum PushSummary {
    /// The whole line: the push's local time (`HH:MM:SS` in `zone`), the widget and the document.
    public static func line(widget: String, document: WidgetContent, held: HeldMark, at: Date, zone: any LocalTimeZone) -> String {
        "\(zone.clockText(at: at, today: at, withSeconds: true)) \(widget): \(text(document, held: held, at: at, zone: zone))"
    }

    /// The document alone. `at` places a progress bar's self-advancing window (its fraction then).
    public static func text(_ document: WidgetContent, held: HeldMark, at: Date, zone: any LocalTimeZone) -> String {
        switch document {
        case .flow(let flow): text(flow, held: held.nodes)
        case .progress(let progress): text(progress, isHeld: held.bar, at: at, zone: zone)
        }
    }

    static func text(_ flow: FlowContent, held: Set<NodePlace>) -> String {
        let nodes = flow.nodes
        guard !nodes.isEmpty else { return "no readings yet" }
        let inputCount = flow.inputs?.count ?? 0
        func name(_ place: NodePlace, _ node: FlowNode) -> String {
            node.name ?? FlowPicture.defaultName(of: place, inputCount: inputCount)
        }
        func reading(_ place: NodePlace, _ node: FlowNode) -> String {
            var words = [name(place, node)]
            if let rate = node.rate {
                switch place {
                case .input, .output: words.append(power(rate, unit: flow.unit))
                case .storage, .exchange: words.append(signed(rate, unit: flow.unit))
                }
                if place == .exchange, let direction = direction(ofExchange: rate, unit: flow.unit) { words.append(direction) }
            }
            if place == .storage, let level = node.level { words.append(DisplayNumber.percent(level / 100)) }
            if held.contains(place) { words.append("(held)") }
            return words.joined(separator: " ")
        }
        let produced = nodes.filter { if case .input = $0.place { true } else { false } }.map { reading($0.place, $0.node) }
        let others = nodes.filter { if case .input = $0.place { false } else { true } }.map { reading($0.place, $0.node) }
        var text = produced.joined(separator: " + ")
        if !others.isEmpty {
            // Production goes to the home: an arrow when the first of the rest is the home itself.
            let joiner = produced.isEmpty ? "" : flow.output != nil ? " → " : ", "
            text += joiner + others.joined(separator: ", ")
        }
        let totalUnit = DisplayNumber.totalUnit(forRateUnit: flow.unit)
        let totals = nodes.compactMap { place, node in
            node.total.map { "\(name(place, node)) \(DisplayNumber.total($0, unit: totalUnit))" }
        }
        if !totals.isEmpty { text += "; today " + totals.joined(separator: ", ") }
        return text
    }

    static func text(_ progress: ProgressContent, isHeld: Bool, at: Date, zone: any LocalTimeZone) -> String {
        var head = [DisplayNumber.percent(ProgressPicture.fraction(of: progress, at: at))]
        if let label = progress.shared.label { head.insert(label, at: 0) }
        if let trend = progress.trend { head.append(arrow(trend)) }
        if let end = progress.endDate.flatMap(RFC3339.parse), progress.startDate != nil {
            head.append("→ 100% at \(zone.clockText(at: end, today: at))")
        }
        if isHeld { head.append("(held)") }
        var text = head.joined(separator: " ")
        let rows = (progress.statRows ?? []).map { row in ([row.label, row.value] + (row.unit.map { [$0] } ?? [])).joined(separator: " ") }
        if !rows.isEmpty { text += "; " + rows.joined(separator: ", ") }
        return text
    }

    /// The arrow the line shows a trend with.
    static func arrow(_ trend: ProgressContent.Trend) -> String {
        switch trend {
        case .up: "↑"
        case .down: "↓"
        case .flat: "→"
        }
    }

    /// A rate's size for reading: in watts below 1 kW, in kW with one decimal above (`350 W`,
    /// `3.2 kW`); other units as the pictures print them.
    static func power(_ rate: Double, unit: String?) -> String {
        guard unit == "W", abs(rate).rounded() >= 1000 else { return DisplayNumber.rate(rate, unit: unit) }
        return DisplayNumber.fixed(abs(rate) / 1000, decimals: 1) + " kW"
    }

    /// The size with the widget's sign: `+800 W`, `−1.4 kW`; nothing before a rate shown as 0.
    static func signed(_ rate: Double, unit: String?) -> String {
        let size = power(rate, unit: unit)
        guard size.contains(where: { $0 != "0" && $0.isNumber }) else { return size }
        return (rate < 0 ? "−" : "+") + size
    }

    /// `import` or `export`, for an exchange whose rate shows as more than 0.
    static func direction(ofExchange rate: Double, unit: String?) -> String? {
        guard signed(rate, unit: unit) != power(rate, unit: unit) else { return nil }
        return rate > 0 ? "import" : "export"
    }
}
