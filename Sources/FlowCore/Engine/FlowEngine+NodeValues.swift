import FoundationEssentials

/// What a node shows before its document is made: a measured node's sum of terms with its
/// `when_stale`, the derived output's balance (known, unknown or not yet), and the rates the totals
/// integrate.
extension FlowEngine {
    typealias BalanceParts = (raw: Double, inputs: Double, exchange: Double, storage: Double)

    /// The derived output's balance at an instant.
    enum Balance {
        case known(BalanceParts)
        /// A stale exchange or storage term makes it unknown: never dropped silently, or the
        /// output would disagree with what the widget shows for them (which of them are silent:
        /// `heldSources`).
        case unknown
        /// A measured node has never read.
        case notYet
    }

    /// A node's signed value before the slot's clamp. A value, no list: the nodes' values are
    /// worked out at every offer (four a reading, every reading pushed), and a list in each, even
    /// an empty one, was released at every one of them.
    struct NodeValue {
        var raw: Double
        /// The balance's parts while the derived output is known: what the sign check reads.
        var parts: BalanceParts?
        /// The node shows the last reading of a silent source (`when_stale: hold`): the stale
        /// marker grays it and names the sources (`heldSources`, asked only then).
        var isHeld = false
    }

    /// The sum of a measured node's terms with its `when_stale`; nil while one of them has never
    /// read, or when a stale one clears the node.
    func measured(_ node: NodeState, at now: Date) -> NodeValue? {
        var result = NodeValue(raw: 0)
        for term in node.terms {
            guard let value = value(ofSource: term.source, at: now) else { return nil }
            if isStale(source: term.source, at: now) {
                switch node.config.whenStale {
                case .hold: if isSilent(source: term.source, at: now) { result.isHeld = true }
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
    /// per message, so it reads the nodes in place rather than copying each of them: the array
    /// itself is held once (one retain), not reached through the widget's template at every use.
    func balance(ofWidget position: Int, at now: Date) -> Balance {
        let nodes = board.widgets[position].flow!.nodes
        var parts: BalanceParts = (0, 0, 0, 0)
        var stale = false
        for index in nodes.indices where !nodes[index].isBalance {
            let slot = nodes[index].place.slot
            var sum = 0.0
            for term in nodes[index].terms {
                guard let value = value(ofSource: term.source, at: now) else { return .notYet }
                if isStale(source: term.source, at: now) {
                    if slot != .inputs { stale = true }
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
        guard !stale else { return .unknown }
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
        case .unknown:
            switch node.config.whenStale {
            case .hold:
                return board.widgets[position].flow!.lastKnownBalance.map { raw in
                    NodeValue(raw: raw, isHeld: !heldSources(of: node, inWidget: position, at: now).isEmpty)
                }
            case .zero: return NodeValue(raw: 0)
            case .clear: return nil
            }
        }
    }

    /// The silent sources whose last readings a held node shows (`NodeValue.isHeld`), for the
    /// stale marker to name: a measured node's own terms, or for the derived output the exchange
    /// and storage terms that make the balance unknown. Worked out only for a node held.
    func heldSources(of node: NodeState, inWidget position: Int, at now: Date) -> [Int] {
        guard node.config.whenStale == .hold else { return [] }
        guard node.isBalance else { return silentStale(node.terms, at: now) }
        let nodes = board.widgets[position].flow!.nodes
        return nodes.indices.filter { !nodes[$0].isBalance && nodes[$0].place.slot != .inputs }.flatMap { silentStale(nodes[$0].terms, at: now) }
    }

    /// The sources of `terms` that are stale and silent.
    func silentStale(_ terms: [Term], at now: Date) -> [Int] {
        terms.map(\.source).filter { isStale(source: $0, at: now) && isSilent(source: $0, at: now) }
    }

    /// The rate a node shows (before quantizing), or nil when it is not drawn.
    func rate(of node: NodeState, inWidget position: Int, at now: Date) -> Double? {
        value(of: node, inWidget: position, at: now).map { node.setup.rate($0.raw) }
    }

    /// Remembers the balance while it is known (between offers: a burst still settling).
    mutating func noteBalance(of position: Int, at now: Date) {
        if let raw = knownBalance(ofWidget: position, at: now) { board.widgets[position].flow!.lastKnownBalance = raw }
    }

    /// Widget `position`'s balance at `now`, if it derives its output and the balance is known.
    /// Asked apart from the change it leads to: bound in a mutating method, a field read through
    /// the widget's optional template copied the whole widget, at every message.
    func knownBalance(ofWidget position: Int, at now: Date) -> Double? {
        guard board.widgets[position].flow!.balanceNode != nil, case .known(let parts) = balance(ofWidget: position, at: now) else { return nil }
        return parts.raw
    }
}
