import FlowCore
import FoundationEssentials

/// Drives a FlowEngine the way the daemon and replay do: deadlines first, then the message.
public struct EngineHarness {
    public var engine: FlowEngine
    public var pushes: [(at: Date, widget: String, push: PatchPolicy.Push)] = []
    public var diagnostics: [Diagnostic] = []
    public var accountOutputs: [(at: Date, widget: String, accounts: FlowEngine.NodeAccounts)] = []
    public var moneyOutputs: [(at: Date, widget: String, money: MoneyReport)] = []
    public var closedDays: [FlowEngine.ClosedDay] = []
    public var closedSlots: [ClosedSlot] = []
    public var refusals: [Refusal] = []
    /// Each source's silences and returns, in order: (true, …) when it went quiet.
    public var silences: [(silent: Bool, SourceSilence)] = []

    public init(_ config: FlowConfig, zone: any LocalTimeZone = FixedOffsetZone()) {
        engine = FlowEngine(config: config, zone: zone)
    }

    public mutating func record(_ outputs: [FlowEngine.Output]) {
        for output in outputs {
            switch output {
            case .push(let widget, let at, let push): pushes.append((at, widget, push))
            case .diagnostic(let diagnostic): diagnostics.append(diagnostic)
            case .accounts(let widget, let at, let accounts, let money):
                accountOutputs.append((at, widget, accounts))
                if let money { moneyOutputs.append((at, widget, money)) }
            case .closedDay(let day): closedDays.append(day)
            case .closedSlot(let slot): closedSlots.append(slot)
            case .refused(let refusal): refusals.append(refusal)
            case .sourceSilent(let silence): silences.append((true, silence))
            case .sourceBack(let silence): silences.append((false, silence))
            }
        }
    }

    /// `inBatch`: as the daemon takes a message of a backlog (see `endBatch`).
    public mutating func send(_ topic: String, _ payload: String, at seconds: Double, inBatch: Bool = false) {
        let now = Date(timeIntervalSince1970: seconds)
        record(engine.tick(through: now))
        record(engine.receive(topic: topic, payload: Array(payload.utf8), at: now, inBatch: inBatch))
    }

    /// The backlog is read: the client said `caughtUp`.
    public mutating func endBatch() {
        record(engine.endBatch())
    }

    public mutating func run(until seconds: Double) {
        record(engine.tick(through: Date(timeIntervalSince1970: seconds)))
    }

    /// The content the widget shows now (a config of one widget).
    public var shown: JSONValue? { engine.deliveredContent.values.first }
    public var lastPatch: JSONValue? { pushes.last?.push.patch }

    /// The pushes of one widget, in order.
    public func pushes(of widget: String) -> [(at: Date, push: PatchPolicy.Push)] {
        pushes.filter { $0.widget == widget }.map { ($0.at, $0.push) }
    }

    /// The progress document a widget shows now.
    public func progress(_ widget: String) -> ProgressContent? {
        guard case .progress(let content)? = pushes(of: widget).last?.push.document else { return nil }
        return content
    }

    public func rate(_ slot: String) -> Double? {
        guard let node = shown?["flow"]?[slot] else { return nil }
        if case .array(let items) = node { return items.first?["rate"]?.numberValue }
        return node["rate"]?.numberValue
    }

    public func total(_ slot: String) -> Double? {
        guard let node = shown?["flow"]?[slot] else { return nil }
        if case .array(let items) = node { return items.first?["total"]?.numberValue }
        return node["total"]?.numberValue
    }
}

/// Short ways to write configs in tests.
/// Sources here never turn stale unless `staleAfter` says so (the config file's default is 10 minutes).
public func source(
    _ name: String, _ topic: String, json: String? = nil, unit: SourceUnit = .watt, invert: Bool = false,
    staleAfter: Double? = nil, maxGap: Double = 300, combine: SourceCombine = .latest,
    maxPayload: Int = SourceConfig.defaultMaxPayloadBytes
) -> SourceConfig {
    SourceConfig(
        name: name, topic: try! TopicFilter(topic), decoder: PayloadDecoder(path: json.map { try! JSONPath($0) }), unit: unit,
        invert: invert, staleAfterSeconds: staleAfter, maxGapSeconds: maxGap, combine: combine, maxPayloadBytes: maxPayload)
}

public func node(_ rate: String..., total: TotalSpec? = nil, level: String? = nil, name: String? = nil, whenStale: StaleBehavior = .hold) -> NodeConfig {
    let spec: RateSpec = rate == ["balance"] ? .balance : .sum(rate.map {
        $0.hasPrefix("-") ? RateTerm(source: String($0.dropFirst()), negated: true) : RateTerm(source: $0)
    })
    return NodeConfig(name: name, rate: spec, total: total, level: level, whenStale: whenStale)
}

/// A policy that pushes every change at once: for tests about values, not timing.
public let eager = PatchPolicyConfig(minIntervalSeconds: 0, rateStep: 1, rateDeadband: 0, totalStep: 0.001, levelStep: 1, settleSeconds: 0)

/// A small deterministic generator (SplitMix64) so the property test is the same on every run.
public struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static let keys = ["a", "b", "c", "rate", "name", "total", "flow", ""]

    /// A random value; objects never hold null (merge patches cannot express that).
    public mutating func document(depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 3 ? 4 : 7), using: &self) {
        case 0: return .bool(Bool.random(using: &self))
        case 1: return .number(Double(Int.random(in: -2000...2000, using: &self)) / 10)
        case 2: return .string(Self.keys.randomElement(using: &self)!)
        case 3: return depth == 0 ? object(depth: depth) : .number(0)
        case 4, 5: return object(depth: depth)
        default:
            let count = Int.random(in: 0...3, using: &self)
            return .array((0..<count).map { _ in Bool.random(using: &self) ? .null : document(depth: depth + 1) })
        }
    }

    public mutating func object(depth: Int) -> JSONValue {
        var members: [String: JSONValue] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &self) {
            members[Self.keys.randomElement(using: &self)!] = document(depth: depth + 1)
        }
        return .object(members)
    }

    /// A variation of `value`: some members kept, some changed, removed or added.
    public mutating func mutate(_ value: JSONValue, depth: Int) -> JSONValue {
        guard case .object(var members) = value, Int.random(in: 0..<6, using: &self) > 0 else {
            return Bool.random(using: &self) ? value : document(depth: depth)
        }
        for key in members.keys {
            switch Int.random(in: 0..<5, using: &self) {
            case 0: members.removeValue(forKey: key)
            case 1: members[key] = mutate(members[key]!, depth: depth + 1)
            case 2: members[key] = document(depth: depth + 1)
            default: break
            }
        }
        if Bool.random(using: &self) { members[Self.keys.randomElement(using: &self)!] = document(depth: depth + 1) }
        return .object(members)
    }
}
