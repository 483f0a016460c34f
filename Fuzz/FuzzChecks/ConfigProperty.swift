import Configuration
import FlowCore
import FoundationEssentials

/// `DaemonConfig.parse` of any bytes (libFuzzer mutates the shipped configs in `Config/`).
///
/// Holds: parsing never crashes; a refused config has at least one problem, and every problem
/// names its key path or its line (a line within the file), except "the file is empty", which is
/// about no line. A config that parses drives an engine
/// for two minutes of readings on every source: no crash, every push is a document the widget
/// takes, and every patch turns the previous document into the new one.
public enum ConfigProperty: FuzzProperty {
    public static let name = "Config"
    /// The shipped configs, mutated by libFuzzer into every way a person can break one.
    public static let sharedSeedFolders = ["Config"]
    static let file = "fuzz.yaml"

    public static func check(_ input: [UInt8]) -> [String] {
        let config: DaemonConfig
        do {
            config = try DaemonConfig.parse(bytes: input, file: file)
        } catch {
            return problems(of: error, in: input)
        }
        return drive(config.flow)
    }

    static func problems(of error: ConfigError, in input: [UInt8]) -> [String] {
        guard !error.problems.isEmpty else { return ["refused without a problem"] }
        // Lines as an editor counts them: after each LF, CR LF or lone CR, and the one the text ends on.
        let lineCount = input.indices.count { input[$0] == 0x0A || (input[$0] == 0x0D && input[safe: $0 + 1] != 0x0A) } + 1
        var findings: [String] = []
        for problem in error.problems {
            if problem.path.isEmpty && problem.line == nil && problem.message != "the file is empty" {
                findings.append("a problem with neither a key path nor a line: \(problem)")
            }
            if let line = problem.line, !(1...lineCount).contains(line) {
                findings.append("line \(line) of a file of \(lineCount) lines: \(problem)")
            }
            if problem.message.isEmpty { findings.append("a problem without a message at \(problem.path)") }
        }
        return findings
    }

    /// Two rounds of readings, a minute apart, on every source, then the deadlines of a minute.
    static func drive(_ flow: FlowConfig) -> [String] {
        var engine = FlowEngine(config: flow, zone: FixedOffsetZone(offsetSeconds: 7200))
        let start = Date(timeIntervalSince1970: 1_782_036_000)  // 2026-06-21 10:00 UTC
        var shown: [String: JSONValue] = [:]
        var findings: [String] = []
        func take(_ outputs: [FlowEngine.Output]) {
            for case .push(let widget, let at, let push) in outputs {
                let violations = push.document.validate(now: at)
                if !violations.isEmpty { findings.append("\(widget): pushed a document the widget rejects: \(violations)") }
                let before = push.isFullContent ? JSONValue.null : shown[widget] ?? .null
                let after = MergePatch.apply(push.patch, to: before)
                if after != push.content {
                    findings.append("\(widget): the patch \(push.patch) turns \(before) into \(after), not \(push.content)")
                }
                shown[widget] = push.content
            }
        }
        take(engine.subscribed(at: start))
        for (round, value) in [1500.0, -700.0].enumerated() {
            for (index, source) in flow.sources.enumerated() {
                let at = start.addingTimeInterval(Double(round * 60 + index) * 0.25)
                take(engine.receive(topic: topic(matching: source.topic), payload: payload(value, at: source.decoder.path), at: at))
            }
            take(engine.tick(through: start.addingTimeInterval(Double(round + 1) * 60)))
        }
        take(engine.tick(through: start.addingTimeInterval(180)))
        return findings
    }

    /// A topic the filter matches: each wildcard level made a plain one.
    static func topic(matching filter: TopicFilter) -> String {
        filter.description.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0 == "+" || $0 == "#" ? "x" : $0 }.joined(separator: "/")
    }

    /// `value` as bare text, or inside a JSON document where `path` finds it.
    static func payload(_ value: Double, at path: JSONPath?) -> [UInt8] {
        guard let path else { return Array(JSONValue.format(value).utf8) }
        var document = JSONValue.number(value)
        for step in path.steps.reversed() {
            switch step {
            case .key(let key): document = .object([key: document])
            case .index(let index): document = .array(Array(repeating: .null, count: min(index, 64)) + [document])
            }
        }
        return document.encoded()
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
