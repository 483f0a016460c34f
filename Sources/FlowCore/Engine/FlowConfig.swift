/// What the engine needs from the config file: the sources and the widgets. The Daemon reads the
/// file (YAML), checks it and builds this; the core only trusts it.
public struct FlowConfig: Sendable, Equatable {
    public var sources: [SourceConfig]
    /// The `flow` widgets.
    public var widgets: [FlowWidgetConfig]
    /// The `progress` widgets, each derived from the state the flow widgets keep.
    public var progressWidgets: [ProgressWidgetConfig]
    /// What the grid charges and pays; nil: no money is counted.
    public var tariff: TariffConfig?
    /// The day of the month a billing month starts on (`billing_day:`, 1–28): the money of
    /// `period: billing`.
    public var billingDay: Int

    public init(
        sources: [SourceConfig], widgets: [FlowWidgetConfig], progressWidgets: [ProgressWidgetConfig] = [], tariff: TariffConfig? = nil,
        billingDay: Int = 1
    ) {
        self.sources = sources
        self.widgets = widgets
        self.progressWidgets = progressWidgets
        self.tariff = tariff
        self.billingDay = billingDay
    }

    /// Each source's position by name (the last of a name, in a config no loader let through).
    var sourcePositions: [String: Int] {
        Dictionary(sources.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Every widget's name: the flow widgets, then the progress widgets.
    public var widgetNames: [String] { widgets.map(\.name) + progressWidgets.map(\.name) }

    /// The flow widget a progress widget reads: the one its `flow:` names, else the only one.
    public func flowWidget(for progress: ProgressWidgetConfig) -> FlowWidgetConfig? {
        if let name = progress.flow { return widgets.first { $0.name == name } }
        return widgets.count == 1 ? widgets[0] : nil
    }
}

/// The unit a source writes its number in.
public enum SourceUnit: String, Sendable, CaseIterable {
    case watt = "W"
    case kilowatt = "kW"
    case wattHour = "Wh"
    case kilowattHour = "kWh"
    case wattMinute = "Wmin"
    case percent = "%"
    /// A price in the tariff's currency per kWh (`EUR/kWh`: the config names the currency).
    case perKilowattHour = "/kWh"
    /// Per MWh, as day-ahead markets publish (`EUR/MWh`).
    case perMegawattHour = "/MWh"
    /// Cents (a hundredth of the currency) per kWh (`ct/kWh`).
    case centsPerKilowattHour = "ct/kWh"

    public enum Quantity: String, Sendable {
        case power, energy, level, price
    }

    public var quantity: Quantity {
        switch self {
        case .watt, .kilowatt: .power
        case .wattHour, .kilowattHour, .wattMinute: .energy
        case .percent: .level
        case .perKilowattHour, .perMegawattHour, .centsPerKilowattHour: .price
        }
    }

    /// Factor to flowbridge's own units: W for power, kWh for energy, % for level, the currency
    /// per kWh for a price.
    public var factor: Double {
        switch self {
        case .watt, .kilowattHour, .percent, .perKilowattHour: 1
        case .kilowatt: 1000
        case .wattHour, .perMegawattHour: 0.001
        case .wattMinute: 1.0 / 60_000
        case .centsPerKilowattHour: 0.01
        }
    }

    /// The config's words for it: `W`, `EUR/MWh` (a price names its currency), `ct/kWh`.
    public func configText(currency: String?) -> String {
        switch self {
        case .perKilowattHour, .perMegawattHour: (currency ?? "EUR") + rawValue
        default: rawValue
        }
    }
}

/// How a source with a wildcard topic reads the messages of its several topics.
public enum SourceCombine: String, Sendable, CaseIterable {
    /// One number: the latest message of any matching topic.
    case latest
    /// The sum of the latest reading of each matching topic, each with its own staleness (two
    /// inverters under `solar/+/0/power`).
    case sum
}

/// One number flowbridge reads, by name.
public struct SourceConfig: Sendable, Equatable {
    public var name: String
    public var topic: TopicFilter
    public var decoder: PayloadDecoder
    public var unit: SourceUnit
    /// A free factor applied after the unit (e.g. 0.1 for a meter that writes tenths of a watt).
    public var scale: Double
    /// Flip the sign: for devices whose convention is the widget's opposite (evcc's battery).
    public var invert: Bool
    /// A reading older than this is stale (seconds); nil: never (`stale_after: never`, for meters
    /// that publish only on change).
    public var staleAfterSeconds: Double?
    /// Integration never spans a longer silence than this (seconds).
    public var maxGapSeconds: Double
    /// The most power this source can plausibly see (W): a rate beyond is rejected, and an energy
    /// counter that rises faster waits for the next reading to confirm it. A home's connection is
    /// far below the default; a larger site says so with `max_power`.
    public var maxPowerW: Double
    /// How the messages of a wildcard topic make one number.
    public var combine: SourceCombine
    /// A bigger payload is counted and logged, never parsed: no meter writes 64 KiB for one number.
    public var maxPayloadBytes: Int
    /// A price source's currency, as its unit names it (`EUR` of `EUR/MWh`): the tariff's must be
    /// the same. Nil for other units, and for `ct/kWh` (cents of the tariff's currency).
    public var priceCurrency: String?
    /// The magnitude's direction from other sources (`direction:`); nil: the reading is signed
    /// itself (or by `sign:`, or not at all).
    public var direction: DirectionSource?
    /// A price source whose payload is a schedule (`schedule:`): prices with their times, each
    /// slot's converted as a single price is (unit, scale, invert). Nil: one number.
    public var schedule: ScheduleFormat?

    public static let defaultStaleAfterSeconds = 600.0
    public static let defaultMaxGapSeconds = 300.0
    public static let defaultMaxPowerW = 100_000.0
    /// The largest `max_power` (1 GW, a power station): readings let through up to near the
    /// largest Double would add up to an infinite rate or total.
    public static let largestMaxPowerW = 1e9
    public static let defaultMaxPayloadBytes = 65_536
    /// How long a source with `stale_after: never` may stay silent after the subscription before
    /// the log asks about it.
    public static let neverStaleSilenceSeconds = 60.0

    public init(
        name: String, topic: TopicFilter, decoder: PayloadDecoder = PayloadDecoder(), unit: SourceUnit = .watt,
        scale: Double = 1, invert: Bool = false, staleAfterSeconds: Double? = SourceConfig.defaultStaleAfterSeconds,
        maxGapSeconds: Double = SourceConfig.defaultMaxGapSeconds, maxPowerW: Double = SourceConfig.defaultMaxPowerW,
        combine: SourceCombine = .latest, maxPayloadBytes: Int = SourceConfig.defaultMaxPayloadBytes, priceCurrency: String? = nil,
        direction: DirectionSource? = nil, schedule: ScheduleFormat? = nil
    ) {
        self.schedule = schedule
        self.priceCurrency = priceCurrency
        self.direction = direction
        self.name = name
        self.topic = topic
        self.decoder = decoder
        self.unit = unit
        self.scale = scale
        self.invert = invert
        self.staleAfterSeconds = staleAfterSeconds
        self.maxGapSeconds = maxGapSeconds
        self.maxPowerW = maxPowerW
        self.combine = combine
        self.maxPayloadBytes = maxPayloadBytes
    }

    /// The longest silence a total integrates across: `max_gap`, or `stale_after` when shorter (a
    /// reading the widget no longer shows is no energy either).
    public var integrationGapSeconds: Double { min(maxGapSeconds, staleAfterSeconds ?? .infinity) }

    /// How long the source may send nothing at all after the subscription before the log asks
    /// about it: its `stale_after`, or a minute for a source that never turns stale.
    public var silenceGraceSeconds: Double { staleAfterSeconds ?? Self.neverStaleSilenceSeconds }

    /// The reading in flowbridge's units with the widget's sign.
    public func convert(_ raw: Double) -> Double {
        let value = raw * unit.factor * scale
        return (invert ? -value : value) + 0.0
    }
}

/// One term of a rate: a source, added or subtracted (`[pconsume, -psupply]`).
public struct RateTerm: Sendable, Equatable {
    public var source: String
    public var negated: Bool

    public init(source: String, negated: Bool = false) {
        self.source = source
        self.negated = negated
    }
}

/// Where a node's rate comes from.
public enum RateSpec: Sendable, Equatable {
    /// The sum of these sources' readings.
    case sum([RateTerm])
    /// Output only: Σ inputs + exchange − storage; a stale input counts 0 W, a stale exchange or
    /// storage makes it unknown (the output then follows its `when_stale`).
    case balance
}

/// Where a node's daily total comes from (kWh since local midnight).
public enum TotalSpec: Sendable, Equatable {
    /// The trapezoidal integral of the rate (inputs and output: the rate itself).
    case integrate
    /// Exchange: the importing (positive) part of the rate.
    case imported
    /// Exchange: the exporting (negative) part, as a positive energy.
    case exported
    /// Storage: the filling part.
    case charged
    /// Storage: the draining part, as a positive energy.
    case discharged
    /// A lifetime energy counter of the device; today = counter − its value at local midnight.
    case counter(source: String)
    /// The device's own daily counter, kept honest against flowbridge's midnight.
    case daily(source: String)

    /// The counter source this total reads, if any.
    public var counterSource: String? {
        switch self {
        case .counter(let source), .daily(let source): source
        default: nil
        }
    }
}

/// What a slot shows once its reading is stale.
public enum StaleBehavior: String, Sendable, CaseIterable {
    /// Keep showing the last reading.
    case hold
    /// Show 0.
    case zero
    /// Remove the node from the widget.
    case clear
}

/// One node of a flow widget.
public struct NodeConfig: Sendable, Equatable {
    public var name: String?
    public var rate: RateSpec
    /// What the widget shows of the node's day: one of its accounts (nil: none, but every
    /// account still counts).
    public var total: TotalSpec?
    /// The evidence for accounts other than the integral of the rate (`accounts:`): a lifetime
    /// or daily counter per direction, or the integral said explicitly.
    public var accounts: [EnergyAccount: TotalSpec]
    /// Storage only: the source of the fill level (%).
    public var level: String?
    public var icon: String?
    public var color: String?
    public var whenStale: StaleBehavior

    public init(
        name: String? = nil, rate: RateSpec, total: TotalSpec? = nil, accounts: [EnergyAccount: TotalSpec] = [:],
        level: String? = nil, icon: String? = nil, color: String? = nil, whenStale: StaleBehavior = .hold
    ) {
        self.name = name
        self.rate = rate
        self.total = total
        self.accounts = accounts
        self.level = level
        self.icon = icon
        self.color = color
        self.whenStale = whenStale
    }
}

/// How eagerly a widget is pushed (DESIGN §1.7).
public struct PatchPolicyConfig: Sendable, Equatable {
    /// At most one push per this many seconds; the latest state goes out at the end of it.
    public var minIntervalSeconds: Double
    /// Rates are rounded to a multiple of this (W).
    public var rateStep: Double
    /// A rate moves only when it changed by at least this much (W) since the last push.
    public var rateDeadband: Double
    /// Totals are rounded to a multiple of this (kWh).
    public var totalStep: Double
    /// Levels are rounded to a multiple of this (%).
    public var levelStep: Double
    /// Readings within this many seconds of the first of a burst make one push, computed when the
    /// window closes: meters of one moment publish milliseconds to a second apart. 0: off.
    public var settleSeconds: Double

    public init(
        minIntervalSeconds: Double = 10, rateStep: Double = 10, rateDeadband: Double = 20, totalStep: Double = 0.1,
        levelStep: Double = 1, settleSeconds: Double = 2
    ) {
        self.minIntervalSeconds = minIntervalSeconds
        self.rateStep = rateStep
        self.rateDeadband = rateDeadband
        self.totalStep = totalStep
        self.levelStep = levelStep
        self.settleSeconds = settleSeconds
    }

    /// The rate the widget goes on showing: `shown` while `rate` moved less than the deadband from
    /// it, except to or from 0 (a widget stuck at "15 W" all night is a lie). A change of
    /// direction always passes: both sides are then at least a deadband away from 0.
    public func holding(_ rate: Double, shown: Double?) -> Double {
        guard let shown, abs(rate - shown) < rateDeadband, rate != 0, shown != 0 else { return rate }
        return shown
    }

    /// +1 (importing, filling), −1 (exporting, draining), or 0 when the rate is within the
    /// deadband (or the step) of 0, or is 0 (with neither, the threshold is 0 as well).
    public func direction(ofRate rate: Double) -> Int {
        let threshold = max(rateDeadband, rateStep)
        return rate >= threshold && rate > 0 ? 1 : rate <= -threshold && rate < 0 ? -1 : 0
    }

    /// A fraction (0…1) in steps of `levelStep` percent: a bar moves in whole percent steps.
    public func fraction(_ value: Double) -> Double {
        min(1, max(0, PatchPolicy.quantize(value * 100, step: levelStep) / 100))
    }
}

/// A `flow` widget fed by the engine.
public struct FlowWidgetConfig: Sendable, Equatable {
    public var name: String
    public var shared: SharedContent
    public var unit: String?
    public var inputs: [NodeConfig]
    public var output: NodeConfig?
    public var storage: NodeConfig?
    public var exchange: NodeConfig?
    public var policy: PatchPolicyConfig
    /// While a held slot is stale its node turns gray and the subtitle names the silent meters.
    public var staleMarker: Bool
    /// What of the day's money the subtitle shows (`subtitle: {show: net_cost}`) in place of a
    /// text; nil: the subtitle is `shared.subtitle`.
    public var subtitleMoney: MoneyFigure?

    public init(
        name: String, shared: SharedContent = SharedContent(), unit: String? = "W", inputs: [NodeConfig] = [],
        output: NodeConfig? = nil, storage: NodeConfig? = nil, exchange: NodeConfig? = nil,
        policy: PatchPolicyConfig = PatchPolicyConfig(), staleMarker: Bool = true, subtitleMoney: MoneyFigure? = nil
    ) {
        self.name = name
        self.shared = shared
        self.unit = unit
        self.inputs = inputs
        self.output = output
        self.storage = storage
        self.exchange = exchange
        self.policy = policy
        self.staleMarker = staleMarker
        self.subtitleMoney = subtitleMoney
    }

    /// Every configured node with its place, in document order.
    public var nodes: [(place: NodePlace, node: NodeConfig)] {
        var all: [(NodePlace, NodeConfig)] = inputs.enumerated().map { (.input($0.offset), $0.element) }
        if let output { all.append((.output, output)) }
        if let storage { all.append((.storage, storage)) }
        if let exchange { all.append((.exchange, exchange)) }
        return all
    }

    /// Whether the widget has a node in `slot`, by the optional's case (no copy of the node).
    public func has(_ slot: FlowSlot) -> Bool {
        switch slot {
        case .inputs: !inputs.isEmpty
        case .output: if case .some = output { true } else { false }
        case .storage: if case .some = storage { true } else { false }
        case .exchange: if case .some = exchange { true } else { false }
        }
    }
}

/// A figure of the day's money a flow widget's subtitle shows (`subtitle: {show: …}`).
public enum MoneyFigure: String, Sendable, CaseIterable {
    /// The widget's net cost today: `Net today €1.18`.
    case netCost = "net_cost"
    /// The import price in force now, fees and VAT in: `Now €0.312/kWh`.
    case priceNow = "price_now"
    /// The widget's net cost of the calendar month so far: `Net this month €31.40`.
    case monthNetCost = "net_cost_month"
}

/// A `progress` widget (`spec/progress-template.txt`): one bar derived from the engine's state,
/// beside a flow widget whose nodes and totals it reads (one energy day, never a second integration).
public struct ProgressWidgetConfig: Sendable, Equatable {
    public var name: String
    public var shared: SharedContent
    public var measure: ProgressMeasure
    /// The flow widget it reads; nil: the only flow widget (or none, for a battery with its own
    /// rate and level).
    public var flow: String?
    public var policy: PatchPolicyConfig
    /// While a reading it shows is held from a silent meter, the bar turns gray and the subtitle
    /// names the meter.
    public var staleMarker: Bool

    public init(
        name: String, shared: SharedContent = SharedContent(), measure: ProgressMeasure, flow: String? = nil,
        policy: PatchPolicyConfig = PatchPolicyConfig(), staleMarker: Bool = true
    ) {
        self.name = name
        self.shared = shared
        self.measure = measure
        self.flow = flow
        self.policy = policy
        self.staleMarker = staleMarker
    }
}

/// What a progress bar shows (`progress: {of: …}`).
public enum ProgressMeasure: Sendable, Equatable {
    /// The battery's level, its trend and, with a capacity, a window that advances on the phone
    /// while it charges.
    case battery(BatteryGauge)
    /// The share of today's consumption covered without the grid: 1 − import / output.
    case selfSufficiency
    /// Today's production (the inputs' totals) against a daily goal.
    case productionGoal(goalKWh: Double)
    /// The net cost (import − export + the standing charge so far) of `period` so far (today,
    /// the calendar month, the billing month) against a budget for that period, an amount in the
    /// tariff's currency.
    case cost(budget: Double, period: MoneyPeriod = .day)

    /// The config's word for it.
    public var word: String {
        switch self {
        case .battery: "battery"
        case .selfSufficiency: "self_sufficiency"
        case .productionGoal: "production_goal"
        case .cost: "cost"
        }
    }
}

/// The battery a progress bar shows: its own rate and level, or the flow widget's storage node's.
public struct BatteryGauge: Sendable, Equatable {
    /// + filling, − draining; nil: the storage rate of the flow widget.
    public var rate: RateSpec?
    /// A % source; nil: the storage level of the flow widget.
    public var level: String?
    /// The usable capacity (kWh): with it, the rows say when the battery is full or empty, and a
    /// charging battery's bar advances on the phone by itself.
    public var capacityKWh: Double?

    public init(rate: RateSpec? = nil, level: String? = nil, capacityKWh: Double? = nil) {
        self.rate = rate
        self.level = level
        self.capacityKWh = capacityKWh
    }

    /// The storage node the bar reads: its own rate and level where given, the rest (and the
    /// name, `when_stale`) from the flow widget's storage. Nil without a rate or a level.
    public func node(besides flow: FlowWidgetConfig?) -> NodeConfig? {
        let storage = flow?.storage
        guard let rate = rate ?? storage?.rate, let level = level ?? storage?.level else { return nil }
        return NodeConfig(name: storage?.name, rate: rate, level: level, whenStale: storage?.whenStale ?? .hold)
    }
}

/// Where a node sits in a flow widget.
public enum NodePlace: Sendable, Hashable, CustomStringConvertible {
    case input(Int)
    case output
    case storage
    case exchange

    public var slot: FlowSlot {
        switch self {
        case .input: .inputs
        case .output: .output
        case .storage: .storage
        case .exchange: .exchange
        }
    }

    /// `inputs[0]`, `exchange`: the key of the node in messages and in the state file.
    public var description: String {
        if case .input(let index) = self { return "inputs[\(index)]" }
        return slot.rawValue
    }
}
