import FoundationEssentials

/// The heart of flowbridge: (message, time) in, merge patches and log lines out.
///
/// A pure state machine in the style of mqtt-nio's: it never reads a clock, a file or a socket.
/// Every input carries its time and every output is a value for the caller to act on, which is what
/// makes replay deterministic and midnight and DST testable. The caller delivers messages with
/// `receive`, and calls `tick` at `nextDeadline` (staleness, settled bursts, trailing pushes, local
/// midnight) even when no message arrives; the daemon also says when it subscribed
/// (`subscribed(at:)`) and when the wall clock stepped (`clockStepped(by:at:)`).
///
/// This file holds the engine's state and how a config builds it; the rest is in one file per part:
/// `+Sources` (messages in, the sources' readings and silence), `+Time` (ticks, deadlines, clock
/// steps, the local day), `+NodeValues` (a node's value, the balance), `+FlowDocuments` and
/// `+ProgressDocuments` (each template's document and offer), `+Documents` (what both share: the
/// stale marker, the documents asked for from outside), `+SignWarnings`, `+Accounts` (every
/// direction of the day), `+Money` (the day's money at the prices in force), `+State` (the saved
/// state) and `+Reload` (what a reloaded engine takes over).
public struct FlowEngine: Sendable {
    public enum Output: Sendable, Equatable {
        /// Send this to the widget.
        case push(widget: String, at: Date, PatchPolicy.Push)
        /// Write this to the log.
        case diagnostic(Diagnostic)
        /// Every account of the widget's nodes (kWh, full resolution) and, with a tariff, the
        /// day's money: with each push of the widget, and at most `accountsIntervalSeconds` apart
        /// while one moves.
        case accounts(widget: String, at: Date, NodeAccounts, money: MoneyReport?)
        /// A local day closed: every widget's totals, accounts and money of it (the day book's
        /// day rows). One per day, also for the days a long silence skips.
        indirect case closedDay(ClosedDay)
        /// A flow widget's 15-minute slot closed (the day book's slot rows).
        indirect case closedSlot(ClosedSlot)
        /// A payload a source did not read, and why.
        indirect case refused(Refusal)
        /// A source that had been sending values sent none for its `stale_after`.
        indirect case sourceSilent(SourceSilence)
        /// A source that had gone silent sent a value again.
        indirect case sourceBack(SourceSilence)
    }

    /// Totals of a finished local day, by `widget/node`.
    public struct ClosedDay: Sendable, Equatable {
        public var date: CivilDate
        public var totalsKWh: [String: Double]
        /// Each flow widget's accounts, summed by direction.
        public var accountsKWh: [String: [EnergyAccount: Double]]
        /// Each priced flow widget's money of the whole day (one day's standing charge).
        public var money: [String: MoneyReport] = [:]
        /// Each flow widget's accounts by node (keyed by the node's place, `inputs[0]`): the
        /// day book's day rows.
        public var nodeAccountsKWh: [String: [String: [EnergyAccount: Double]]] = [:]
        /// The day's length in hours (23 and 25 on the days the clocks change).
        public var hours: Double = 24
        /// Each flow widget's battery level over the day, lowest and highest (%), where it has one.
        public var levelRangePercent: [String: ClosedRange<Double>] = [:]
    }

    /// A source's latest reading, in flowbridge's units with the widget's sign.
    public struct Reading: Sendable, Equatable {
        public var value: Double
        public var at: Date
    }

    /// Counts of what a source received, for `check` and the log.
    public struct SourceStats: Sendable, Equatable {
        public var readings = 0
        public var noReading = 0
        public var rejected = 0
        /// Payloads beyond `max_payload`: counted, never parsed.
        public var oversized = 0
        /// JSON messages without the source's field (a topic that carries several kinds of messages).
        public var withoutField = 0
    }

    struct Term: Sendable {
        var source: Int
        var sign: Double
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

        var place: NodePlace { setup.place }
        // Lent, not returned: a field read through a getter copied the whole config first.
        var config: NodeConfig { _read { yield setup.config } }
        var terms: [Term] { _read { yield setup.terms } }
        var level: Int? { setup.level }
        var maxGapSeconds: Double { setup.maxGapSeconds }
        var isBalance: Bool { setup.isBalance }
        /// Inputs and the output are magnitudes; exchange and storage are signed.
        var isMagnitude: Bool { place.slot == .inputs || place.slot == .output }
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

    struct WidgetState: Sendable {
        let config: FlowWidgetConfig
        var nodes: [NodeState]
        var policy: PatchPolicy
        /// Per source: the nodes whose total integrates when it reads.
        let integrateOn: [Int: [Int]]
        /// Every source the widget reads.
        let reads: Set<Int>
        /// The derived output's node, if the widget has one.
        let balanceNode: Int?
        /// The balance the last time it was known: what the output keeps showing with
        /// `when_stale: hold` while a stale exchange or storage makes it unknown.
        var lastKnownBalance: Double?
        /// When the widget's accounts last went out, what they were (`roundedAccountsKWh`), and
        /// whether a reading moved them since.
        var accountsSentAt: Date?
        var accountsSent: [Double]?
        /// The money the last accounts carried, as `rounded` makes it.
        var moneySent: [Double?]?
        var accountsMoved = false
        /// The day's money; nil without a tariff, or without an exchange node to price.
        var money: DayMoney?
        /// When a reading of a batch first left the widget waiting for the batch's end (`endBatch`).
        var batchedSince: Date?
        /// What the accounts and money held when the open slot began.
        var slotBase = SlotBase()
        /// The derived output's day when it integrates: production + import + discharge − export −
        /// charge of the other nodes so far, before the clamp at 0 its account shows.
        var balanceKWh = 0.0
        /// The storage node's level source, and the lowest and highest level it read today (%).
        let levelSource: Int?
        var levelRange: ClosedRange<Double>?
    }

    /// A progress widget: what it reads, and the rate behind its last push.
    struct GaugeState: Sendable {
        let config: ProgressWidgetConfig
        /// The flow widget whose nodes and totals it reads, by position.
        let flow: Int?
        /// `of: battery`: the battery's rate and level as a storage node of the bar's own, without a
        /// total: the day's energy is the flow widget's.
        let battery: NodeState?
        /// `of: battery`: the flow widget's storage node, when the bar reads the same rate: its
        /// total is the day's charge (or discharge) the rows show.
        let storage: Int?
        /// Every source whose reading can change the bar.
        let reads: Set<Int>
        var policy: PatchPolicy
        /// The rate (W) the texts of the last push show: held within the deadband like a flow's
        /// rates (and so is the window made for it).
        var shownRateW: Double?
        /// When the level the last push shows was read: a window stays until a later reading
        /// disagrees with it.
        var shownLevelAt: Date?
        /// When a reading of a batch first left the bar waiting for the batch's end (`endBatch`).
        var batchedSince: Date?
    }

    public let config: FlowConfig
    let zone: any LocalTimeZone
    /// The sources and the topics that feed them.
    var bank: SourceBank
    var widgets: [WidgetState]
    /// The progress widgets.
    var gauges: [GaugeState]
    /// Per widget: whether the output's clamp at 0 persists (a wrong sign) or was a moment's
    /// (meters apart). Beside the widgets, not in them, so that recording one while a widget's
    /// content is being made copies nothing.
    var clampWatches: [ClampWatch]
    var limiter = DiagnosticLimiter()
    /// The local day, its slot, and which event times are believed.
    var dayClock: DayClock
    /// The local day the totals count; nil until the first event.
    public internal(set) var day: LocalDay? {
        get { dayClock.day }
        set { dayClock.day = newValue }
    }
    /// The day closed last; setting it (a day closed, or amended) adds it to `periods` too.
    public internal(set) var lastClosedDay: ClosedDay? {
        get { dayClock.lastClosedDay }
        set {
            dayClock.lastClosedDay = newValue
            if let newValue { periods.add(newValue) }
        }
    }
    /// The closed days of the month and the billing month: their money with today's is what a
    /// progress bar of `period: month` and a subtitle of the month show. The daemon seeds it from
    /// the day book at its start; the engine adds each day it closes.
    public var periods: PeriodTotals
    /// When the daemon's first subscription was in place: a source's silence counts from here.
    public internal(set) var subscribedAt: Date? {
        get { dayClock.subscribedAt }
        set { dayClock.subscribedAt = newValue }
    }

    /// The day's prices, and what the log said of energy without one.
    var pricing: DayPricing

    /// The time of the latest event taken: deadlines are what comes after it.
    public var clock: Date? { dayClock.timeline.latest }

    /// Builds an engine for a config the Daemon has checked: every name a node refers to exists.
    public init(config: FlowConfig, zone: any LocalTimeZone) {
        self.config = config
        self.zone = zone
        periods = PeriodTotals(billingDay: config.billingDay)
        bank = SourceBank(config: config)
        dayClock = DayClock(jumpSeconds: config.sources.map(\.maxGapSeconds).max() ?? SourceConfig.defaultMaxGapSeconds)
        let index = config.sourcePositions
        func terms(of rate: RateSpec) -> [Term] {
            guard case .sum(let list) = rate else { return [] }
            return list.map { Term(source: index[$0.source]!, sign: $0.negated ? -1 : 1) }
        }
        let widgets: [WidgetState] = config.widgets.map { widget in
            var nodes: [NodeState] = widget.nodes.map { place, node in
                let terms = terms(of: node.rate)
                let accounts = node.accountTotals(in: place.slot).map { account, total in
                    (account, EnergyTotal(spec: total), total.counterSource.map { index[$0]! })
                }
                let shown = node.shownAccount(in: place.slot).flatMap { shown in accounts.firstIndex { $0.0 == shown } }
                let gapSources = terms.map(\.source) + accounts.compactMap(\.2)
                return NodeState(
                    place: place, config: node, terms: terms, level: node.level.map { index[$0]! }, accounts: accounts,
                    shown: shown,
                    maxGapSeconds: gapSources.map { config.sources[$0].integrationGapSeconds }.min() ?? SourceConfig.defaultMaxGapSeconds)
            }
            // The derived output reads every rate the others read; its gap is the tightest of theirs.
            let rateSources = Set(nodes.flatMap { $0.terms.map(\.source) })
            var integrateOn: [Int: [Int]] = [:]
            // The derived output's integrated day is the balance of the other accounts (see
            // `count`), not an integral of its own.
            for (position, node) in nodes.enumerated() where node.integrates && !node.isBalance {
                for source in node.terms.map(\.source) {
                    integrateOn[source, default: []].append(position)
                }
            }
            let balance = nodes.firstIndex(where: \.isBalance)
            if let balance {
                let old = nodes[balance]
                nodes[balance] = NodeState(
                    setup: NodeState.Setup(
                        place: old.place, config: old.config, terms: [], level: nil, accountKinds: old.setup.accountKinds,
                        counters: old.setup.counters, shown: old.setup.shown,
                        maxGapSeconds: rateSources.map { config.sources[$0].integrationGapSeconds }.min() ?? old.maxGapSeconds),
                    accounts: old.accounts)
            }
            let reads = rateSources.union(nodes.compactMap(\.level)).union(nodes.flatMap { $0.setup.counters.compactMap { $0 } })
            return WidgetState(
                config: widget, nodes: nodes, policy: PatchPolicy(config: widget.policy), integrateOn: integrateOn,
                reads: reads, balanceNode: balance, levelSource: nodes.first { $0.place == .storage }?.level)
        }
        self.widgets = widgets
        gauges = config.progressWidgets.map { progress in
            let flowConfig = config.flowWidget(for: progress)
            let flow = flowConfig.flatMap { found in config.widgets.firstIndex { $0.name == found.name } }
            var reads = flow.map { widgets[$0].reads } ?? []
            var battery: NodeState?
            var storage: Int?
            if case .battery(let gauge) = progress.measure, let node = gauge.node(besides: flowConfig) {
                let terms = terms(of: node.rate)
                let level = node.level.map { index[$0]! }
                battery = NodeState(
                    place: .storage, config: node, terms: terms, level: level, accounts: [], shown: nil,
                    maxGapSeconds: SourceConfig.defaultMaxGapSeconds)
                if let flow, let found = widgets[flow].nodes.firstIndex(where: { $0.place == .storage }),
                    widgets[flow].nodes[found].config.rate == node.rate, widgets[flow].nodes[found].total != nil
                {
                    storage = found
                }
                var read = terms.map(\.source) + (level.map { [$0] } ?? [])
                if let flow, let storage, let counter = widgets[flow].nodes[storage].counter { read.append(counter) }
                reads = Set(read)
            }
            return GaugeState(
                config: progress, flow: flow, battery: battery, storage: storage, reads: reads,
                policy: PatchPolicy(config: progress.policy))
        }
        clampWatches = Array(repeating: ClampWatch(), count: widgets.count)
        pricing = DayPricing(config: config)
        for position in self.widgets.indices where config.isPriced(self.widgets[position].config) { self.widgets[position].money = DayMoney() }
    }

    mutating func note(_ level: Diagnostic.Level, key: String, at now: Date, into out: inout [Output], _ message: () -> String) {
        if let diagnostic = limiter.admit(key, at: now, { Diagnostic(level, message()) }) {
            out.append(.diagnostic(diagnostic))
        }
    }
}
