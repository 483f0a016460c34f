import FlowCore
import FoundationEssentials

/// Drives a FlowEngine the way the daemon and replay do: deadlines first, then the message.
struct EngineHarness {
    var engine: FlowEngine
    var pushes: [(at: Date, widget: String, push: PatchPolicy.Push)] = []
    var diagnostics: [Diagnostic] = []

    init(_ config: FlowConfig, zone: any LocalTimeZone = FixedOffsetZone()) {
        engine = FlowEngine(config: config, zone: zone)
    }

    mutating func record(_ outputs: [FlowEngine.Output]) {
        for output in outputs {
            switch output {
            case .push(let widget, let at, let push): pushes.append((at, widget, push))
            case .diagnostic(let diagnostic): diagnostics.append(diagnostic)
            }
        }
    }

    mutating func send(_ topic: String, _ payload: String, at seconds: Double) {
        let now = Date(timeIntervalSince1970: seconds)
        record(engine.tick(through: now))
        record(engine.receive(topic: topic, payload: Array(payload.utf8), at: now))
    }

    mutating func run(until seconds: Double) {
        record(engine.tick(through: Date(timeIntervalSince1970: seconds)))
    }

    /// The content the widget shows now.
    var shown: JSONValue? { engine.deliveredContent.values.first }
    var lastPatch: JSONValue? { pushes.last?.push.patch }

    func rate(_ slot: String) -> Double? {
        guard let node = shown?["flow"]?[slot] else { return nil }
        if case .array(let items) = node { return items.first?["rate"]?.numberValue }
        return node["rate"]?.numberValue
    }

    func total(_ slot: String) -> Double? {
        guard let node = shown?["flow"]?[slot] else { return nil }
        if case .array(let items) = node { return items.first?["total"]?.numberValue }
        return node["total"]?.numberValue
    }
}

/// Short ways to write configs in tests.
func source(
    _ name: String, _ topic: String, json: String? = nil, unit: SourceUnit = .watt, invert: Bool = false,
    staleAfter: Double? = nil, maxGap: Double = 300
) -> SourceConfig {
    SourceConfig(
        name: name, topic: try! TopicFilter(topic), decoder: PayloadDecoder(path: json.map { try! JSONPath($0) }), unit: unit,
        invert: invert, staleAfterSeconds: staleAfter, maxGapSeconds: maxGap)
}

func node(_ rate: String..., total: TotalSpec? = nil, level: String? = nil, name: String? = nil, whenStale: StaleBehavior = .hold) -> NodeConfig {
    let spec: RateSpec = rate == ["balance"] ? .balance : .sum(rate.map {
        $0.hasPrefix("-") ? RateTerm(source: String($0.dropFirst()), negated: true) : RateTerm(source: $0)
    })
    return NodeConfig(name: name, rate: spec, total: total, level: level, whenStale: whenStale)
}

/// A policy that pushes every change at once: for tests about values, not timing.
let eager = PatchPolicyConfig(minIntervalSeconds: 0, rateStep: 1, rateDeadband: 0, totalStep: 0.001, levelStep: 1)
