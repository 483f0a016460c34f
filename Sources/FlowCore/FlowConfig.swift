/// What the engine needs from the config file: the sources and the widgets. The Daemon reads the
/// file (YAML), checks it and builds this; the core only trusts it.
public struct FlowConfig: Sendable, Equatable {
    public var sources: [SourceConfig]
    public var widgets: [FlowWidgetConfig]

    public init(sources: [SourceConfig], widgets: [FlowWidgetConfig]) {
        self.sources = sources
        self.widgets = widgets
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

    public enum Quantity: String, Sendable {
        case power, energy, level
    }

    public var quantity: Quantity {
        switch self {
        case .watt, .kilowatt: .power
        case .wattHour, .kilowattHour, .wattMinute: .energy
        case .percent: .level
        }
    }

    /// Factor to flowbridge's own units: W for power, kWh for energy, % for level.
    public var factor: Double {
        switch self {
        case .watt, .kilowattHour, .percent: 1
        case .kilowatt: 1000
        case .wattHour: 0.001
        case .wattMinute: 1.0 / 60_000
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

    public static let defaultStaleAfterSeconds = 600.0
    public static let defaultMaxGapSeconds = 300.0
    public static let defaultMaxPowerW = 100_000.0
    public static let defaultMaxPayloadBytes = 65_536
    /// How long a source with `stale_after: never` may stay silent after the subscription before
    /// the log asks about it.
    public static let neverStaleSilenceSeconds = 60.0

    public init(
        name: String, topic: TopicFilter, decoder: PayloadDecoder = PayloadDecoder(), unit: SourceUnit = .watt,
        scale: Double = 1, invert: Bool = false, staleAfterSeconds: Double? = SourceConfig.defaultStaleAfterSeconds,
        maxGapSeconds: Double = SourceConfig.defaultMaxGapSeconds, maxPowerW: Double = SourceConfig.defaultMaxPowerW,
        combine: SourceCombine = .latest, maxPayloadBytes: Int = SourceConfig.defaultMaxPayloadBytes
    ) {
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
    public var total: TotalSpec?
    /// Storage only: the source of the fill level (%).
    public var level: String?
    public var icon: String?
    public var color: String?
    public var whenStale: StaleBehavior

    public init(
        name: String? = nil, rate: RateSpec, total: TotalSpec? = nil, level: String? = nil, icon: String? = nil,
        color: String? = nil, whenStale: StaleBehavior = .hold
    ) {
        self.name = name
        self.rate = rate
        self.total = total
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

    public init(
        name: String, shared: SharedContent = SharedContent(), unit: String? = "W", inputs: [NodeConfig] = [],
        output: NodeConfig? = nil, storage: NodeConfig? = nil, exchange: NodeConfig? = nil,
        policy: PatchPolicyConfig = PatchPolicyConfig(), staleMarker: Bool = true
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
    }

    /// Every configured node with its place, in document order.
    public var nodes: [(place: NodePlace, node: NodeConfig)] {
        var all: [(NodePlace, NodeConfig)] = inputs.enumerated().map { (.input($0.offset), $0.element) }
        if let output { all.append((.output, output)) }
        if let storage { all.append((.storage, storage)) }
        if let exchange { all.append((.exchange, exchange)) }
        return all
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
