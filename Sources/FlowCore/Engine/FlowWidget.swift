import FoundationEssentials

extension FlowEngine {
    struct Term: Sendable {
        var source: Int
        var sign: Double

        /// The terms of a rate that sums sources (none for the balance), by source position.
        static func list(of rate: RateSpec, sources index: [String: Int]) -> [Term] {
            guard case .sum(let list) = rate else { return [] }
            return list.map { Term(source: index[$0.source]!, sign: $0.negated ? -1 : 1) }
        }
    }

    struct NodeState: Sendable {
        /// What a node is, fixed once the engine is built. Behind one reference: a node is copied
        /// wherever a document is made, and a copy of the config's texts and arrays retained each
        /// of them, at every message.
        final class Setup: Sendable {
            let place: NodePlace
            let config: NodeConfig
            /// Empty for the derived output.
            let terms: [Term]
            let level: Int?
            /// Per account (in the order of `accounts`): which direction, and the counter source it reads.
            let accountKinds: [EnergyAccount]
            let counters: [Int?]
            /// The account the widget shows, by position.
            let shown: Int?
            let maxGapSeconds: Double
            let isBalance: Bool

            init(
                place: NodePlace, config: NodeConfig, terms: [Term], level: Int?, accountKinds: [EnergyAccount], counters: [Int?],
                shown: Int?, maxGapSeconds: Double
            ) {
                self.place = place
                self.config = config
                self.terms = terms
                self.level = level
                self.accountKinds = accountKinds
                self.counters = counters
                self.shown = shown
                self.maxGapSeconds = maxGapSeconds
                isBalance = config.rate == .balance
            }

            /// The rate a node of signed value `raw` shows (before quantizing): inputs and the
            /// output are magnitudes; exchange and storage are signed.
            func rate(_ raw: Double) -> Double { place.slot == .inputs || place.slot == .output ? max(0, raw) : raw }
        }

        let setup: Setup
        /// Every direction's energy today, shown or not.
        var accounts: [EnergyTotal]

        init(
            place: NodePlace, config: NodeConfig, terms: [Term], level: Int?, accounts: [(EnergyAccount, EnergyTotal, Int?)],
            shown: Int?, maxGapSeconds: Double
        ) {
            setup = Setup(
                place: place, config: config, terms: terms, level: level, accountKinds: accounts.map(\.0),
                counters: accounts.map(\.2), shown: shown, maxGapSeconds: maxGapSeconds)
            self.accounts = accounts.map(\.1)
        }

        init(setup: Setup, accounts: [EnergyTotal]) {
            self.setup = setup
            self.accounts = accounts
        }

        /// Node `node` at `place` of a flow widget, its accounts at 0, as `config` (whose every
        /// name exists) builds it.
        init(place: NodePlace, node: NodeConfig, in config: FlowConfig, sources index: [String: Int]) {
            let terms = Term.list(of: node.rate, sources: index)
            let accounts = node.accountTotals(in: place.slot).map { account, total in
                (account, EnergyTotal(spec: total), total.counterSource.map { index[$0]! })
            }
            let shown = node.shownAccount(in: place.slot).flatMap { shown in accounts.firstIndex { $0.0 == shown } }
            let gapSources = terms.map(\.source) + accounts.compactMap(\.2)
            self.init(
                place: place, config: node, terms: terms, level: node.level.map { index[$0]! }, accounts: accounts, shown: shown,
                maxGapSeconds: gapSources.map { config.sources[$0].integrationGapSeconds }.min() ?? SourceConfig.defaultMaxGapSeconds)
        }

        var place: NodePlace { setup.place }
        // Lent, not returned: a field read through a getter copied the whole config first.
        var config: NodeConfig { _read { yield setup.config } }
        var terms: [Term] { _read { yield setup.terms } }
        var level: Int? { setup.level }
        var maxGapSeconds: Double { setup.maxGapSeconds }
        var isBalance: Bool { setup.isBalance }
        /// The total the widget shows: the shown account's.
        var total: EnergyTotal? {
            get { setup.shown.map { accounts[$0] } }
            set { if let shown = setup.shown, let newValue { accounts[shown] = newValue } }
        }
        /// The counter source the shown total reads.
        var counter: Int? { setup.shown.flatMap { setup.counters[$0] } }
        /// Whether any account integrates the rate.
        var integrates: Bool { accounts.contains { $0.direction != nil } }
        /// Every account's energy today, by direction.
        var accountsKWh: [EnergyAccount: Double] {
            Dictionary(uniqueKeysWithValues: zip(setup.accountKinds, accounts.map(\.energyKWh)))
        }
    }

    /// A flow widget's own state (`spec/flow-template.txt`): its nodes and their day, its money,
    /// what its accounts last sent, and the evidence of a wrong sign. What it shares with a
    /// progress widget (its policy, the sources it reads) is its `WidgetMachine`'s.
    struct FlowWidget: Sendable {
        /// What a flow widget is, fixed once the engine is built. Behind one reference, so that the
        /// widget's state stays small (its config alone is over a kilobyte): a field read through
        /// the machine's optional template is then read in place, where a state this large was
        /// copied whole to read it, at every message.
        final class Setup: Sendable {
            let config: FlowWidgetConfig
            /// Per source, by its position: the nodes whose total integrates when it reads. Arrays,
            /// not dictionaries: a dictionary hashed the position at every reading.
            let integrateOn: [[Int]]
            /// Per source, by its position: the accounts (node, account) that read it as their
            /// counter, in the nodes' order.
            let countersOf: [[(node: Int, account: Int)]]
            /// The derived output's node, if the widget has one.
            let balanceNode: Int?
            /// The storage node's level source.
            let levelSource: Int?

            init(config: FlowWidgetConfig, nodes: [NodeState], integrateOn: [[Int]], balanceNode: Int?) {
                self.config = config
                self.integrateOn = integrateOn
                // One list per source, as `integrateOn` has.
                var countersOf = [[(node: Int, account: Int)]](repeating: [], count: integrateOn.count)
                for (node, state) in nodes.enumerated() {
                    for (account, counter) in state.setup.counters.enumerated() {
                        if let counter { countersOf[counter].append((node, account)) }
                    }
                }
                self.countersOf = countersOf
                self.balanceNode = balanceNode
                levelSource = nodes.first { $0.place == .storage }?.level
            }
        }

        let setup: Setup
        var nodes: [NodeState]
        /// The balance the last time it was known: what the output keeps showing with
        /// `when_stale: hold` while a stale exchange or storage makes it unknown.
        var lastKnownBalance: Double?
        /// Whether the output's clamp at 0 persists (a wrong sign) or was a moment's (meters
        /// apart). Recorded while the widget's content is made, in place: nothing is copied for it.
        var clampWatch = ClampWatch()
        /// When the widget's accounts last went out, what they were (`roundedAccountsKWh`), and
        /// whether a reading moved them since.
        var accountsSentAt: Date?
        var accountsSent: [Double]?
        /// The money the last accounts carried, as `rounded` makes it.
        var moneySent: [Double?]?
        var accountsMoved = false
        /// The day's money; nil without a tariff, or without an exchange node to price.
        var money: DayMoney?
        /// What the accounts and money held when the open slot began.
        var slotBase = SlotBase()
        /// The derived output's day when it integrates: production + import + discharge − export −
        /// charge of the other nodes so far, before the clamp at 0 its account shows.
        var balanceKWh = 0.0
        /// The lowest and highest level the storage node read today (%).
        var levelRange: ClosedRange<Double>?

        /// Takes `level` (%) into the day's range of the storage's level.
        mutating func widenLevelRange(by level: Double) {
            levelRange = min(levelRange?.lowerBound ?? level, level)...max(levelRange?.upperBound ?? level, level)
        }

        // Lent, not returned: a field read through a getter copied the whole config first.
        var config: FlowWidgetConfig { _read { yield setup.config } }
        var integrateOn: [[Int]] { _read { yield setup.integrateOn } }
        var countersOf: [[(node: Int, account: Int)]] { _read { yield setup.countersOf } }
        var balanceNode: Int? { setup.balanceNode }
        /// The derived output, where it counts a total: every other account's energy moves its day
        /// (`moveBalance`), and the share moved is priced as its consumption.
        var countedBalanceNode: Int? { balanceNode.flatMap { nodes[$0].integrates ? $0 : nil } }
        var levelSource: Int? { setup.levelSource }

        /// Flow widget `widget` of `config` at the start of a day: its accounts at 0, its money
        /// (where priced) too.
        init(config widget: FlowWidgetConfig, in config: FlowConfig, sources index: [String: Int]) {
            var nodes = widget.nodes.map { place, node in NodeState(place: place, node: node, in: config, sources: index) }
            var integrateOn = [[Int]](repeating: [], count: config.sources.count)
            // The derived output's integrated day is the balance of the other accounts (see
            // `count`), not an integral of its own.
            for (position, node) in nodes.enumerated() where node.integrates && !node.isBalance {
                for source in node.terms.map(\.source) {
                    integrateOn[source].append(position)
                }
            }
            let balanceNode = nodes.firstIndex(where: \.isBalance)
            if let balance = balanceNode {
                // The derived output reads every rate the others read; its gap is the tightest of theirs.
                let rateSources = Set(nodes.flatMap { $0.terms.map(\.source) })
                let old = nodes[balance]
                nodes[balance] = NodeState(
                    setup: NodeState.Setup(
                        place: old.place, config: old.config, terms: [], level: nil, accountKinds: old.setup.accountKinds,
                        counters: old.setup.counters, shown: old.setup.shown,
                        maxGapSeconds: rateSources.map { config.sources[$0].integrationGapSeconds }.min() ?? old.maxGapSeconds),
                    accounts: old.accounts)
            }
            setup = Setup(config: widget, nodes: nodes, integrateOn: integrateOn, balanceNode: balanceNode)
            self.nodes = nodes
            money = config.isPriced(widget) ? DayMoney() : nil
        }

        /// Every source the widget reads: its nodes' rates, levels and counters.
        var sourcesRead: Set<Int> {
            Set(nodes.flatMap { $0.terms.map(\.source) }).union(nodes.compactMap(\.level))
                .union(nodes.flatMap { $0.setup.counters.compactMap { $0 } })
        }

        // MARK: - The accounts, as the sensors carry them
        //
        // Read on the widget itself, once reached: each step through the machine's optional
        // template to the nodes is a check of its tag, and these walk every account after each push.

        /// Every account at full resolution, node by node.
        var accountsKWh: [Double] { nodes.flatMap { node in node.accounts.map(\.energyKWh) } }

        /// Every account at Wh resolution, node by node: what the sensors carry, and so what
        /// counts as a move.
        var roundedAccountsKWh: [Double] { nodes.flatMap { node in node.accounts.map(Self.shownKWh) } }

        /// The accounts to hand over at `now`, marked sent; nil when they went out before (`sentAt`
        /// not nil) and neither they (at Wh resolution) nor the money (`roundedMoney`, as
        /// `FlowEngine.rounded` makes it) moved since.
        mutating func handOverAccounts(at now: Date, roundedMoney: [Double?]?, ifMovedSince sentAt: Date?) -> NodeAccounts? {
            accountsMoved = false
            if sentAt != nil, !accountsMovedSinceSent, roundedMoney == moneySent { return nil }
            accountsSentAt = now
            accountsSent = roundedAccountsKWh
            moneySent = roundedMoney
            return FlowEngine.accounts(of: self)
        }

        /// Whether an account moved at Wh resolution since the accounts last went out (or they
        /// never did): `roundedAccountsKWh` compared in place, as it is asked after every push.
        var accountsMovedSinceSent: Bool {
            guard let sent = accountsSent else { return true }
            var index = 0
            for node in nodes.indices {
                for account in nodes[node].accounts.indices {
                    guard index < sent.count, sent[index] == Self.shownKWh(nodes[node].accounts[account]) else { return true }
                    index += 1
                }
            }
            return index != sent.count
        }

        /// An account's energy at the Wh the sensors show.
        private static func shownKWh(_ account: EnergyTotal) -> Double { PatchPolicy.quantize(account.energyKWh, step: 0.001) }

        /// Moves the derived output's day by `kWh` (a supply adds, a use takes away; see
        /// `FlowEngine.count`) and returns what its account, clamped at 0, gained or lost by it; nil
        /// when it did not move, or the widget has no derived output that integrates. One call, so
        /// the widget is reached once for what used to be five reads and writes through its template.
        mutating func moveBalance(byKWh kWh: Double) -> Double? {
            guard let node = countedBalanceNode else { return nil }
            let before = max(0, balanceKWh)
            balanceKWh += kWh
            let after = max(0, balanceKWh)
            guard after != before else { return nil }
            nodes[node].accounts[0].add(after - before)
            return after - before
        }

        /// The wall clock stepped by `seconds` without that time passing: nothing integrates
        /// across it, and the clamp's evidence starts afresh.
        mutating func clockStepped(by seconds: Double) {
            clampWatch.reset()
            for node in nodes.indices {
                for account in nodes[node].accounts.indices { nodes[node].accounts[account].clockStepped(by: seconds) }
            }
        }
    }
}
