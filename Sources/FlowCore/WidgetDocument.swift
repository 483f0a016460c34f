import FoundationEssentials

/// From readings to a widget's document: the nodes' values, the balance, the stale marker, the
/// sign check, and the offer to the patch policy.
extension FlowEngine {
    typealias BalanceParts = (raw: Double, inputs: Double, exchange: Double, storage: Double)

    /// The derived output's balance at an instant.
    enum Balance {
        case known(BalanceParts)
        /// A stale exchange or storage term (these sources) makes it unknown: never dropped
        /// silently, or the output would disagree with what the widget shows for them.
        case unknown(stale: [Int])
        /// A measured node has never read.
        case notYet
    }

    /// A node's signed value before the slot's clamp.
    struct NodeValue {
        var raw: Double
        /// The balance's parts while the derived output is known: what the sign check reads.
        var parts: BalanceParts?
        /// Silent sources whose last reading the node shows (`when_stale: hold`): the stale marker
        /// grays the node and names them.
        var heldFor: [Int] = []
    }

    /// The color of a node that shows a held reading.
    static let staleColor = "gray"

    /// The sum of a measured node's terms with its `when_stale`; nil while one of them has never
    /// read, or when a stale one clears the node.
    func measured(_ node: NodeState, at now: Date) -> NodeValue? {
        var result = NodeValue(raw: 0)
        for term in node.terms {
            guard let value = value(ofSource: term.source, at: now) else { return nil }
            if isStale(source: term.source, at: now) {
                switch node.config.whenStale {
                case .hold: if isSilent(source: term.source, at: now) { result.heldFor.append(term.source) }
                case .zero: continue
                case .clear: return nil
                }
            }
            result.raw += term.sign * value
        }
        return result
    }

    /// Σ inputs + exchange − storage of widget `position`. A stale input counts 0 W (inverters
    /// sleep at night); a stale exchange or storage makes the balance unknown. Asked several times
    /// per message, so it reads the nodes in place rather than copying them.
    func balance(ofWidget position: Int, at now: Date) -> Balance {
        var parts: BalanceParts = (0, 0, 0, 0)
        var stale: [Int] = []
        for index in widgets[position].nodes.indices where !widgets[position].nodes[index].isBalance {
            let slot = widgets[position].nodes[index].place.slot
            var sum = 0.0
            for term in widgets[position].nodes[index].terms {
                guard let value = value(ofSource: term.source, at: now) else { return .notYet }
                if isStale(source: term.source, at: now) {
                    if slot != .inputs { stale.append(term.source) }
                    continue
                }
                sum += term.sign * value
            }
            switch slot {
            case .inputs: parts.inputs += max(0, sum)
            case .exchange: parts.exchange = sum
            case .storage: parts.storage = sum
            case .output: break
            }
        }
        guard stale.isEmpty else { return .unknown(stale: stale) }
        parts.raw = parts.inputs + parts.exchange - parts.storage
        return .known(parts)
    }

    /// A node's value as the widget shows it (before the slot's clamp), or nil when it is not
    /// drawn. An unknown balance follows the output's `when_stale`: hold keeps the last known
    /// value, zero shows 0, clear removes the node.
    func value(of node: NodeState, inWidget position: Int, at now: Date) -> NodeValue? {
        guard node.isBalance else { return measured(node, at: now) }
        switch balance(ofWidget: position, at: now) {
        case .known(let parts):
            return NodeValue(raw: parts.raw, parts: parts)
        case .notYet:
            return nil
        case .unknown(let stale):
            switch node.config.whenStale {
            case .hold:
                return widgets[position].lastKnownBalance.map { NodeValue(raw: $0, heldFor: stale.filter { isSilent(source: $0, at: now) }) }
            case .zero: return NodeValue(raw: 0)
            case .clear: return nil
            }
        }
    }

    /// The rate a node shows (before quantizing), or nil when it is not drawn.
    func rate(of node: NodeState, inWidget position: Int, at now: Date) -> Double? {
        value(of: node, inWidget: position, at: now).map { node.isMagnitude ? max(0, $0.raw) : $0.raw }
    }

    /// The rate a node's total integrates: the shown rate, except that an unknown balance is no
    /// rate at all (a held value is no energy).
    func integrationRate(of node: NodeState, inWidget position: Int, at now: Date) -> Double? {
        guard node.isBalance else { return rate(of: node, inWidget: position, at: now) }
        guard case .known(let parts) = balance(ofWidget: position, at: now) else { return nil }
        return max(0, parts.raw)
    }

    /// Remembers the balance while it is known (between offers: a burst still settling).
    mutating func noteBalance(of position: Int, at now: Date) {
        guard widgets[position].balanceNode != nil, case .known(let parts) = balance(ofWidget: position, at: now) else { return }
        widgets[position].lastKnownBalance = parts.raw
    }

    /// The balance turned unknown (a term went stale): its total stops here, so that no energy is
    /// counted across the unknown stretch when the readings return.
    mutating func interruptUnknownBalances(at now: Date) {
        for position in widgets.indices {
            guard let node = widgets[position].balanceNode, widgets[position].nodes[node].total?.lastSample != nil else { continue }
            if case .known = balance(ofWidget: position, at: now) { continue }
            widgets[position].nodes[node].total?.interrupt()
        }
    }

    // MARK: - Documents

    /// The widget's content now, quantized per its policy. A node showing a held reading of a
    /// silent meter is gray, and the subtitle says which meters are silent since when (unless the
    /// widget's `stale_marker` is off).
    mutating func content(of position: Int, at now: Date, into out: inout [Output]) -> FlowContent {
        // The widget's parts are read in place: a copy of the whole widget state is made for
        // nothing at every message.
        let policy = widgets[position].config.policy
        let staleMarker = widgets[position].config.staleMarker
        var content = FlowContent(shared: widgets[position].config.shared, unit: widgets[position].config.unit)
        // Nodes whose meters are silent while the widget shows their last reading, and since when.
        var silent: [Int: Date] = [:]
        for index in widgets[position].nodes.indices {
            let node = widgets[position].nodes[index]
            guard let value = value(of: node, inWidget: position, at: now) else { continue }
            if let parts = value.parts { widgets[position].lastKnownBalance = parts.raw }
            checkSigns(of: node, value: value, at: position, now: now, into: &out)
            let rate = node.isMagnitude ? max(0, value.raw) : value.raw
            var total: Double?
            if let energy = node.total, energy.isCounting {
                total = PatchPolicy.quantize(energy.energyKWh, step: policy.totalStep)
            }
            var level: Double?
            if let source = node.level, let reading = sources[source].reading {
                level = min(100, max(0, PatchPolicy.quantize(reading.value, step: policy.levelStep)))
            }
            var color = node.config.color
            if staleMarker, !value.heldFor.isEmpty {
                color = Self.staleColor
                noteSilent(index, heldFor: value.heldFor, inWidget: position, at: now, into: &silent)
            }
            let shown = FlowNode(
                name: node.config.name, rate: PatchPolicy.quantize(rate, step: policy.rateStep), total: total,
                level: level, icon: node.config.icon, color: color)
            switch node.place {
            case .input: content.inputs = (content.inputs ?? []) + [shown]
            case .output: content.output = shown
            case .storage: content.storage = shown
            case .exchange: content.exchange = shown
            }
        }
        if !silent.isEmpty { content.shared.subtitle = staleSubtitle(silentNames(silent, inWidget: position), at: now) }
        return content
    }

    /// Notes the nodes a stale marker names for node `index` of widget `position`, which shows held
    /// readings of the silent `sources`, with since when they are silent: the node itself, or for
    /// the derived output the exchange or storage it cannot do without.
    func noteSilent(_ index: Int, heldFor sources: [Int], inWidget position: Int, at now: Date, into silent: inout [Int: Date]) {
        let nodes = widgets[position].nodes
        for source in sources {
            let since = self.sources[source].lastValueAt ?? now
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
        silent.keys.sorted().map { (nodeName(widgets[position].nodes[$0]), silent[$0]!) }
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

    /// Says so when a sign is probably wrong: an input that reads clearly negative, or a balance
    /// that only a flipped exchange or storage could make positive, for most of the last minutes
    /// (a moment's negative balance is meters reporting apart, no evidence).
    mutating func checkSigns(
        of node: NodeState, value: NodeValue, at position: Int, now: Date, into out: inout [Output]
    ) {
        let name = widgets[position].config.name
        if let parts = value.parts {
            let gross = parts.inputs + abs(parts.exchange) + abs(parts.storage)
            let clamped = -parts.raw > max(50, 0.05 * gross)
            guard clampWatches[position].record(clamped: clamped, at: now) else { return }
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
        guard let node = widgets[position].nodes.first(where: { $0.place.slot == slot }) else { return slot.rawValue }
        let meaning = slot == .exchange ? "+ must mean importing" : "+ must mean filling"
        return "the \(slot.rawValue) (\(sourceNames(node)); \(meaning)): toggle `invert` on it"
    }

    func sourceNames(_ node: NodeState) -> String {
        node.terms.map { "source '\(sources[$0.source].config.name)'" }.joined(separator: ", ")
    }

    /// Offers the widget's content to its policy; a push goes out when the policy says so. While a
    /// burst of readings is still settling, an ordinary offer waits for its end.
    mutating func offer(_ position: Int, at now: Date, urgent: Bool, into out: inout [Output]) {
        if !urgent, widgets[position].policy.isSettling(at: now) { return }
        let candidate = content(of: position, at: now, into: &out)
        let name = widgets[position].config.name
        if candidate.inputs == nil, candidate.output == nil, candidate.storage == nil, candidate.exchange == nil {
            // Nothing to show: quiet before the first reading; later (every slot cleared as stale)
            // the widget cannot be sent an empty flow, so it keeps its last document, and the log says so.
            if widgets[position].policy.delivered != nil {
                note(.warning, key: "cleared:\(name)", at: now, into: &out) {
                    "widget '\(name)': every slot is stale and cleared; the widget keeps showing its last document"
                }
            }
            return
        }
        var violations: [ContentViolation] = []
        candidate.validate(into: &violations)
        guard isValid(violations, of: name, at: now, into: &out) else { return }
        if let push = widgets[position].policy.offer(flow: candidate, at: now, urgent: urgent) {
            out.append(.push(widget: name, at: now, push))
        }
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
}
