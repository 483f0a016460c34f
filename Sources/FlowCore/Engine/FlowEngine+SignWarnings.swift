import FoundationEssentials

/// The warnings about signs that are probably wrong: an input that reads negative, or a balance
/// that stays below 0 (`ClampWatch`), with which `invert` to toggle.
extension FlowEngine {
    /// Says so when a sign is probably wrong: an input that reads clearly negative, or a balance
    /// that only a flipped exchange or storage could make positive, for most of the last minutes
    /// (a moment's negative balance is meters reporting apart, no evidence).
    mutating func checkSigns(
        of node: NodeState, value: NodeValue, at position: Int, now: Date, into out: inout [Output]
    ) {
        let name = board.widgets[position].name
        if let parts = value.parts {
            let gross = parts.inputs + abs(parts.exchange) + abs(parts.storage)
            let clamped = -parts.raw > max(50, 0.05 * gross)
            guard board.widgets[position].flow!.clampWatch.record(clamped: clamped, at: now) else { return }
            var suspects: [String] = []
            if parts.exchange != 0, parts.inputs - parts.exchange - parts.storage >= 0 { suspects.append(describe(.exchange, inWidget: position)) }
            if parts.storage != 0, parts.inputs + parts.exchange + parts.storage >= 0 { suspects.append(describe(.storage, inWidget: position)) }
            let hint = suspects.isEmpty
                ? "check the signs of the exchange and the storage"
                : "a sign is probably wrong: \(suspects.joined(separator: ", or "))"
            note(.warning, key: "balance:\(name)", at: now, into: &out) {
                "widget '\(name)': for \(ClampWatch.windowMinutes) minutes the balance has mostly been below 0 (now inputs \(JSONValue.format(parts.inputs.rounded())) W + exchange \(JSONValue.format(parts.exchange.rounded())) W − storage \(JSONValue.format(parts.storage.rounded())) W = \(JSONValue.format(parts.raw.rounded())) W), so the output shows 0. \(hint)"
            }
        } else if node.place.slot == .inputs, value.raw < -50 {
            let sum = value.raw
            let names = sourceNames(node)
            note(.warning, key: "negative:\(name):\(node.place)", at: now, into: &out) {
                "widget '\(name)': input \(node.config.name ?? node.place.description) reads \(JSONValue.format(sum.rounded())) W; production cannot be negative, it shows 0: check `invert` on \(names)"
            }
        }
    }

    func describe(_ slot: FlowSlot, inWidget position: Int) -> String {
        guard let node = board.widgets[position].flow!.nodes.first(where: { $0.place.slot == slot }) else { return slot.rawValue }
        let meaning = slot == .exchange ? "+ must mean importing" : "+ must mean filling"
        return "the \(slot.rawValue) (\(sourceNames(node)); \(meaning)): toggle `invert` on it"
    }

    func sourceNames(_ node: NodeState) -> String {
        node.terms.map { "source '\(bank.sources[$0.source].config.name)'" }.joined(separator: ", ")
    }
}
