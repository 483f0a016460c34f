import FlowCore
import TestSupport
import Testing

@Suite struct PayloadDecoderTests {
    static func decode(_ payload: String, path: String? = nil, decimalComma: Bool = false) throws -> DecodedPayload {
        PayloadDecoder(path: try path.map { try JSONPath($0) }, decimalComma: decimalComma).decode(Array(payload.utf8))
    }

    @Test(arguments: [
        ("0.0", 0.0), ("612.4", 612.4), (" 42 ", 42), ("\t-17.5\r\n", -17.5), ("+12", 12), ("1e3", 1000), ("-2.5E-1", -0.25),
        ("-0", 0), ("13.338", 13.338), ("20.43000030517578", 20.43000030517578), (".5", 0.5), ("\"1532.0\"", 1532),
    ])
    func plainNumbers(payload: String, value: Double) throws {
        #expect(try Self.decode(payload) == .value(value))
    }

    @Test func minusZeroReadsAsPlainZero() throws {
        guard case .value(let value) = try Self.decode("-0") else { Issue.record("no value"); return }
        #expect(value.sign == .plus)
    }

    @Test(arguments: ["nan", "NaN", "-nan", "unavailable", "unknown", "None", "", "   ", "null", "NULL", "\"unavailable\""])
    func noReading(payload: String) throws {
        #expect(try Self.decode(payload) == .noReading)
    }

    @Test(arguments: ["\"W\"", "abc", "12 W", "inf", "Infinity", "0x10", "1e999", "12.3.4", "--5", "{\"value\": 1}", "500,20", "true"])
    func notANumber(payload: String) throws {
        guard case .invalid = try Self.decode(payload) else {
            Issue.record("\(payload) should not decode")
            return
        }
    }

    @Test func decimalCommaWhenTheSourceSaysSo() throws {
        #expect(try Self.decode("500,20", decimalComma: true) == .value(500.2))
        guard case .invalid(let why) = try Self.decode("500,20") else { Issue.record("decoded"); return }
        #expect(why.description.contains("decimal_comma"))
    }

    @Test(arguments: [
        (#"{"ENERGY":{"Power":56,"Today":0.537}}"#, "ENERGY.Power", 56.0),
        (#"{"ENERGY":{"Power":[12,34]}}"#, "ENERGY.Power[1]", 34),
        (#"{"values":{"pvpowerout":"1234.5"}}"#, "values.pvpowerout", 1234.5),
        (#"{"em:0":{"x":-3}}"#, #"["em:0"].x"#, -3),
        (#"{"":{"a b":7}}"#, #"[""]["a b"]"#, 7),
        (#"{"a.b":{"c":1.5}}"#, #"['a.b'].c"#, 1.5),
        (#"[{"p":1},{"p":2}]"#, "[1].p", 2),
        (#"{"value": 472.85}"#, "value", 472.85),
        (#"{"SML":{"Power_curr":-894}}"#, "SML.Power_curr", -894),
        (#"{"outdoorTemp":" 19.6 "}"#, "outdoorTemp", 19.6),
    ])
    func jsonPaths(payload: String, path: String, value: Double) throws {
        #expect(try Self.decode(payload, path: path) == .value(value))
    }

    @Test(arguments: [
        (#"{"value": null}"#, "value"), (#"{"value": "nan"}"#, "value"), ("", "value"), ("unavailable", "value"),
        (#"{"power":"unknown"}"#, "power"),
    ])
    func jsonNoReading(payload: String, path: String) throws {
        #expect(try Self.decode(payload, path: path) == .noReading)
    }

    @Test(arguments: [
        (#"{"value": "W"}"#, "value"), (#"{"value": true}"#, "value"), ("{broken", "value"),
        (#"{"a":{"b":1}}"#, "a"), ("12", "value"), (#"{"a": 5}"#, "a.b"),
    ])
    func jsonInvalid(payload: String, path: String) throws {
        guard case .invalid = try Self.decode(payload, path: path) else {
            Issue.record("\(payload) at \(path) should not decode")
            return
        }
    }

    /// A document of the right shape without the field: another kind of message on the same topic.
    @Test(arguments: [
        (#"{"other": 1}"#, "value"), (#"{"a":[1]}"#, "a[3]"),
        (#"{"method":"NotifyEvent","params":{"events":[{"component":"input:0","event":"btn_down"}]}}"#, #"params["em:0"].total_act_power"#),
    ])
    func jsonWithoutTheField(payload: String, path: String) throws {
        #expect(try Self.decode(payload, path: path) == .noField)
    }

    @Test(arguments: ["", "a..b", "a[", "a[x]", "a[-1]", "a]", "a.", #"["unterminated]"#, "a b[0]c"])
    func badPaths(text: String) {
        #expect(throws: JSONPath.SyntaxError.self) { try JSONPath(text) }
    }

    @Test func garbageBytesNeverCrash() {
        var random = SplitMix64(seed: 7)
        let decoders = [PayloadDecoder(), PayloadDecoder(path: try! JSONPath("a.b[0]")), PayloadDecoder(decimalComma: true)]
        for _ in 0..<5000 {
            let count = Int.random(in: 0..<40, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            for decoder in decoders {
                if case .value(let value) = decoder.decode(bytes) { #expect(value.isFinite) }
            }
        }
    }
}

@Suite struct TopicFilterTests {
    @Test(arguments: [
        ("solar/ac/power", "solar/ac/power", true), ("solar/+/power", "solar/ac/power", true),
        ("solar/+/power", "solar/ac/dc/power", false), ("solar/#", "solar", true), ("solar/#", "solar/a/b", true),
        ("#", "$SYS/broker", false), ("+/x", "$SYS/x", false), ("shellypro3em/status/em:0", "shellypro3em/status/em:0", true),
        ("a/b", "a/b/", false), ("a/+", "a/", true),
    ])
    func matching(filter: String, topic: String, matches: Bool) throws {
        #expect(try TopicFilter(filter).matches(topic) == matches)
    }

    @Test(arguments: ["", "a/b#", "a/#/b", "a+/b", "a/\u{0}", String(repeating: "a", count: 65_536)])
    func invalidFilters(text: String) {
        #expect(throws: TopicFilter.InvalidFilter.self) { try TopicFilter(text) }
    }

    /// A noncharacter, which a string literal may not hold.
    static func scalar(_ value: UInt32) -> String { String(Character(Unicode.Scalar(value)!)) }

    /// Characters a broker refuses in a topic (libmosquitto refuses the whole SUBSCRIBE for one of
    /// them, every other topic with it): refused when the filter is made, escaped, never written.
    @Test(arguments: [
        ("meter\tpower", "\\u0009"), ("meter\npower", "\\u000A"), ("a/\u{7F}", "\\u007F"), ("a\u{85}b", "\\u0085"),
        ("a/" + Self.scalar(0xFDD0), "\\uFDD0"), ("a/" + Self.scalar(0xFFFE), "\\uFFFE"), ("a/" + Self.scalar(0x1FFFF), "\\U0001FFFF"),
        ("a/\u{0}", "\\u0000"),
    ])
    func refusedCharacters(text: String, code: String) {
        let error = #expect(throws: TopicFilter.InvalidFilter.self) { try TopicFilter(text) }
        let description = error?.description ?? ""
        #expect(description.contains("holds \(code)"), "\(description)")
        #expect(!description.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.isNoncharacterCodePoint })
    }

    /// What a broker takes: any other text, whatever its script or its symbols.
    @Test(arguments: ["zähler/leistung", "電力/メーター", "a/\u{FDCF}", "a/\u{FFFD}", "a/\u{A0}b", "a/😀"])
    func acceptedCharacters(text: String) throws {
        #expect(try TopicFilter(text).description == text)
    }
}
