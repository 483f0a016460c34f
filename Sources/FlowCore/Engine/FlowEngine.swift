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
/// This file holds the engine's parts, each built by its own `init` from the config: the day's
/// clock (`DayClock`), the sources (`SourceBank`), the widgets (`WidgetBoard`: one `WidgetMachine`
/// per widget of either template, `FlowWidget` or `ProgressWidget` inside), the prices
/// (`DayPricing`). What the engine does with them is in one file per concern: `+Sources`
/// (messages in, the sources' readings and silence), `+Time` (ticks, deadlines, clock steps, the
/// local day), `+NodeValues` (a node's value, the balance), `+FlowDocuments` and
/// `+ProgressDocuments` (each template's document and offer), `+Documents` (what both share: the
/// offer of any widget, the stale marker, the documents asked for from outside), `+SignWarnings`,
/// `+Accounts` (every direction of the day), `+Money` (the day's money at the prices in force),
/// `+State` (the saved state) and `+Reload` (what a reloaded engine takes over).
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

        /// A local day closed (`closedDay`): the engine's `lastClosedDay` changed with it.
        public var isClosedDay: Bool {
            if case .closedDay = self { true } else { false }
        }
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

    public let config: FlowConfig
    /// The sources and the topics that feed them.
    var bank: SourceBank
    /// Every widget, flow and progress, and the month's closed days.
    var board: WidgetBoard
    var limiter = DiagnosticLimiter()
    /// The zone, the local day, its slot, and which event times are believed.
    var dayClock: DayClock
    /// The zone whose local days the totals count: the day clock's, lent (not copied) to each use.
    var zone: any LocalTimeZone { _read { yield dayClock.zone } }
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
    /// The closed days of the month and the billing month (see `WidgetBoard.periods`).
    public var periods: PeriodTotals {
        _read { yield board.periods }
        _modify { yield &board.periods }
    }
    /// The flow widgets' positions in `board.widgets`: the first ones.
    var flowPositions: Range<Int> { 0..<board.flowCount }
    /// When the daemon's first subscription was in place: a source's silence counts from here.
    public internal(set) var subscribedAt: Date? {
        get { dayClock.subscribedAt }
        set { dayClock.subscribedAt = newValue }
    }

    /// The day's prices, and what the log said of energy without one.
    var pricing: DayPricing

    /// Whether the flow widgets' accounts go out (`Output.accounts`). The daemon turns it off when
    /// none of its sinks takes them (`Sink.takesAccounts`: a widget API, a stdout without its
    /// summary): a widget pushed at every reading built them for nothing at each push.
    public var handsOverAccounts = true

    /// The time of the latest event taken: deadlines are what comes after it.
    public var clock: Date? { dayClock.timeline.latest }

    /// Builds an engine for a config the Daemon has checked: every name a node refers to exists.
    public init(config: FlowConfig, zone: any LocalTimeZone) {
        self.config = config
        bank = SourceBank(config: config)
        board = WidgetBoard(config: config)
        dayClock = DayClock(config: config, zone: zone)
        pricing = DayPricing(config: config)
    }

    mutating func note(_ level: Diagnostic.Level, key: String, at now: Date, into out: inout [Output], _ message: () -> String) {
        if let diagnostic = limiter.admit(key, at: now, { Diagnostic(level, message()) }) {
            out.append(.diagnostic(diagnostic))
        }
    }
}
