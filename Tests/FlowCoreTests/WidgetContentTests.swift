import FlowCore
import FoundationEssentials
import TestSupport
import Testing

@Suite struct WidgetContentTests {
    /// The spec's examples were written for dates in 2027; "now" is a day in late 2026.
    static let now = RFC3339.parse("2026-11-30T12:00:00Z")!

    @Test(arguments: [SpecExamples.homeEnergy, SpecExamples.incident, SpecExamples.maintenance])
    func specExampleRoundTrips(text: String) throws {
        let document = try JSONValue(parsing: text)
        let content = try WidgetContent(json: document["content"]!)
        #expect(content.validate(now: Self.now) == [])
        #expect(content.json == document["content"])
        // And the printed form reads back to the same value.
        #expect(try JSONValue(parsing: content.json.description) == document["content"])
    }

    @Test func homeEnergyExampleHasTheSpecsSigns() throws {
        let content = try WidgetContent(json: try JSONValue(parsing: SpecExamples.homeEnergy)["content"]!)
        guard case .flow(let flow) = content else { Issue.record("not a flow"); return }
        #expect(flow.exchange?.rate == -1400)  // exporting
        #expect(flow.storage?.rate == 800)  // filling
        #expect(flow.storage?.level == 76)
        #expect(flow.inputs?.first?.name == "Solar")
    }

    struct RuleCase: Sendable, CustomTestStringConvertible {
        var name: String
        var valid: String
        var invalid: String
        var path: String
        var rule: ContentViolation.Rule
        var testDescription: String { name }
    }

    static let long33 = String(repeating: "x", count: 33)
    static let long32 = String(repeating: "x", count: 32)
    static let sun = String(repeating: "☀️", count: 32)  // 32 graphemes, 64 scalars

    /// Each rule of the spec with a document that keeps it and one that breaks it.
    static let rules: [RuleCase] = [
        RuleCase(
            name: "template value", valid: #"{"template":"flow","flow":{"output":{"rate":1}}}"#,
            invalid: #"{"template":"flows","flow":{"output":{"rate":1}}}"#, path: "template", rule: .templateValue),
        RuleCase(
            name: "at least one slot", valid: #"{"template":"flow","flow":{"exchange":{"rate":1}}}"#,
            invalid: #"{"template":"flow","flow":{}}"#, path: "flow", rule: .noSlot),
        RuleCase(
            name: "at most 3 inputs",
            valid: #"{"template":"flow","flow":{"inputs":[{"rate":1},{"rate":2},{"rate":3}]}}"#,
            invalid: #"{"template":"flow","flow":{"inputs":[{"rate":1},{"rate":2},{"rate":3},{"rate":4}]}}"#,
            path: "flow.inputs", rule: .tooManyInputs),
        RuleCase(
            name: "rate required", valid: #"{"template":"flow","flow":{"storage":{"rate":0,"name":"B"}}}"#,
            invalid: #"{"template":"flow","flow":{"storage":{"name":"B"}}}"#, path: "flow.storage.rate",
            rule: .rateRequired),
        RuleCase(
            name: "rate is a number", valid: #"{"template":"flow","flow":{"output":{"rate":-0.5}}}"#,
            invalid: #"{"template":"flow","flow":{"output":{"rate":"500"}}}"#, path: "flow.output.rate",
            rule: .wrongType(expected: "a number")),
        RuleCase(
            name: "name ≤ 32", valid: #"{"template":"flow","flow":{"output":{"rate":1,"name":"\#(long32)"}}}"#,
            invalid: #"{"template":"flow","flow":{"output":{"rate":1,"name":"\#(long33)"}}}"#,
            path: "flow.output.name", rule: .textTooLong(limit: 32)),
        RuleCase(
            name: "name counts graphemes",
            valid: #"{"template":"flow","flow":{"inputs":[{"rate":1,"name":"\#(sun)"}]}}"#,
            invalid: #"{"template":"flow","flow":{"inputs":[{"rate":1,"name":"\#(sun)☀️"}]}}"#,
            path: "flow.inputs[0].name", rule: .textTooLong(limit: 32)),
        RuleCase(
            name: "total ≥ 0", valid: #"{"template":"flow","flow":{"exchange":{"rate":1,"total":0}}}"#,
            invalid: #"{"template":"flow","flow":{"exchange":{"rate":1,"total":-0.1}}}"#,
            path: "flow.exchange.total", rule: .totalNegative),
        RuleCase(
            name: "level 0…100", valid: #"{"template":"flow","flow":{"storage":{"rate":1,"level":100}}}"#,
            invalid: #"{"template":"flow","flow":{"storage":{"rate":1,"level":100.5}}}"#,
            path: "flow.storage.level", rule: .levelOutOfRange),
        RuleCase(
            name: "level only on storage", valid: #"{"template":"flow","flow":{"storage":{"rate":1,"level":5}}}"#,
            invalid: #"{"template":"flow","flow":{"exchange":{"rate":1,"level":5}}}"#,
            path: "flow.exchange.level", rule: .levelOutsideStorage),
        RuleCase(
            name: "node icon ≤ 128",
            valid: #"{"template":"flow","flow":{"output":{"rate":1,"icon":"\#(String(repeating: "i", count: 128))"}}}"#,
            invalid: #"{"template":"flow","flow":{"output":{"rate":1,"icon":"\#(String(repeating: "i", count: 129))"}}}"#,
            path: "flow.output.icon", rule: .textTooLong(limit: 128)),
        RuleCase(
            name: "content icon ≤ 128",
            valid: #"{"template":"progress","value":1,"icon":"\#(String(repeating: "i", count: 128))"}"#,
            invalid: #"{"template":"progress","value":1,"icon":"\#(String(repeating: "i", count: 129))"}"#,
            path: "icon", rule: .textTooLong(limit: 128)),
        RuleCase(
            name: "unit ≤ 32", valid: #"{"template":"flow","unit":"\#(long32)","flow":{"output":{"rate":1}}}"#,
            invalid: #"{"template":"flow","unit":"\#(long33)","flow":{"output":{"rate":1}}}"#, path: "unit",
            rule: .textTooLong(limit: 32)),
        RuleCase(
            name: "progress value 0…1", valid: #"{"template":"progress","value":0}"#,
            invalid: #"{"template":"progress","value":42}"#, path: "value", rule: .valueOutOfRange),
        RuleCase(
            name: "value optional only with both dates",
            valid: #"{"template":"progress","start_date":"2026-12-01T00:00:00Z","end_date":"2026-12-02T00:00:00Z"}"#,
            invalid: #"{"template":"progress","start_date":"2026-12-01T00:00:00Z"}"#, path: "value",
            rule: .valueRequired),
        RuleCase(
            name: "trend word", valid: #"{"template":"progress","value":0.5,"trend":"flat"}"#,
            invalid: #"{"template":"progress","value":0.5,"trend":"sideways"}"#, path: "trend", rule: .trendValue),
        RuleCase(
            name: "stat_rows ≤ 6",
            valid: #"{"template":"progress","value":0.5,"stat_rows":[\#(Array(repeating: #"{"label":"a","value":"1"}"#, count: 6).joined(separator: ","))]}"#,
            invalid: #"{"template":"progress","value":0.5,"stat_rows":[\#(Array(repeating: #"{"label":"a","value":"1"}"#, count: 7).joined(separator: ","))]}"#,
            path: "stat_rows", rule: .tooManyStatRows),
        RuleCase(
            name: "stat label ≤ 32",
            valid: #"{"template":"progress","value":0.5,"stat_rows":[{"label":"\#(long32)","value":"1"}]}"#,
            invalid: #"{"template":"progress","value":0.5,"stat_rows":[{"label":"\#(long33)","value":"1"}]}"#,
            path: "stat_rows[0].label", rule: .textTooLong(limit: 32)),
        RuleCase(
            name: "stat value ≤ 32",
            valid: #"{"template":"progress","value":0.5,"stat_rows":[{"label":"a","value":"\#(long32)"}]}"#,
            invalid: #"{"template":"progress","value":0.5,"stat_rows":[{"label":"a","value":"\#(long33)"}]}"#,
            path: "stat_rows[0].value", rule: .textTooLong(limit: 32)),
        RuleCase(
            name: "stat unit ≤ 16",
            valid: #"{"template":"progress","value":0.5,"stat_rows":[{"label":"a","value":"1","unit":"kWh"}]}"#,
            invalid: #"{"template":"progress","value":0.5,"stat_rows":[{"label":"a","value":"1","unit":"\#(String(repeating: "u", count: 17))"}]}"#,
            path: "stat_rows[0].unit", rule: .textTooLong(limit: 16)),
        RuleCase(
            name: "date is RFC 3339",
            valid: #"{"template":"progress","value":0,"start_date":"2026-12-01T10:00:00+01:00","end_date":"2026-12-01T12:00:00.5Z"}"#,
            invalid: #"{"template":"progress","value":0,"start_date":"2026-12-01 10:00","end_date":"2026-12-01T12:00:00Z"}"#,
            path: "start_date", rule: .dateFormat),
        RuleCase(
            name: "date after 2000-01-01",
            valid: #"{"template":"progress","value":0,"start_date":"2000-01-01T00:00:01Z","end_date":"2026-12-01T00:00:00Z"}"#,
            invalid: #"{"template":"progress","value":0,"start_date":"1999-12-31T23:00:00Z","end_date":"2026-12-01T00:00:00Z"}"#,
            path: "start_date", rule: .dateTooEarly),
        RuleCase(
            name: "date ≤ 366 days ahead",
            valid: #"{"template":"progress","value":0,"start_date":"2026-12-01T00:00:00Z","end_date":"2027-12-01T12:00:00Z"}"#,
            invalid: #"{"template":"progress","value":0,"start_date":"2026-12-01T00:00:00Z","end_date":"2027-12-01T12:00:01Z"}"#,
            path: "end_date", rule: .dateTooFarAhead),
        RuleCase(
            name: "start strictly before end",
            valid: #"{"template":"progress","value":0,"start_date":"2026-12-01T00:00:00Z","end_date":"2026-12-01T00:00:01Z"}"#,
            invalid: #"{"template":"progress","value":0,"start_date":"2026-12-01T00:00:00Z","end_date":"2026-12-01T01:00:00+01:00"}"#,
            path: "start_date", rule: .dateOrder),
        RuleCase(
            name: "unknown field", valid: #"{"template":"flow","flow":{"output":{"rate":1,"color":"red"}}}"#,
            invalid: #"{"template":"flow","flow":{"output":{"rate":1,"colour":"red"}}}"#, path: "flow.output.colour",
            rule: .unknownField),
    ]

    /// Decoding and validation together: what the widget API would answer.
    static func violations(_ text: String) throws -> [ContentViolation] {
        let json = try JSONValue(parsing: text)
        do {
            return try WidgetContent(json: json).validate(now: now)
        } catch {
            return [error]
        }
    }

    @Test(arguments: rules)
    func ruleHasAPassingAndAFailingCase(_ rule: RuleCase) throws {
        #expect(try Self.violations(rule.valid) == [])
        let found = try Self.violations(rule.invalid)
        #expect(found == [ContentViolation(rule.path, rule.rule)], "\(found)")
    }

    /// A node's color is "a named color or hex": a name is letters (`yellow`, `mint`), a hex color
    /// `#` and 3, 4, 6 or 8 hex digits. Anything else (a CSS function, two words, a hex of 5 digits,
    /// hex without `#`) is none of the two.
    @Test(arguments: [
        ("yellow", true), ("mint", true), ("gray", true), ("#FFCC00", true), ("#fc0", true), ("#FFCC0080", true),
        ("#fc08", true), ("rgb(255,204,0)", false), ("light green", false), ("#FFCC0", false), ("#GGCC00", false),
        ("FFCC00", false), ("", false), ("#", false),
    ])
    func nodeColorIsANameOrHex(color: String, valid: Bool) throws {
        let found = try Self.violations(#"{"template":"flow","flow":{"output":{"rate":1,"color":"\#(color)"}}}"#)
        #expect(found.map(\.path) == (valid ? [] : ["flow.output.color"]), "\(found)")
    }

    @Test func nonFiniteNumbersAreNamed() {
        let node = FlowNode(rate: .infinity, total: .nan)
        let found = WidgetContent.flow(FlowContent(output: node)).validate(now: Self.now)
        #expect(found == [ContentViolation("flow.output.rate", .notFinite), ContentViolation("flow.output.total", .notFinite)])
    }

    @Test func violationsReadAsSentences() {
        #expect(ContentViolation("flow.inputs[0].name", .textTooLong(limit: 32)).description
            == "flow.inputs[0].name: is longer than 32 characters")
    }
}

@Suite struct RFC3339Tests {
    @Test(arguments: [
        ("2026-03-29T01:00:00Z", 1_774_746_000.0), ("2026-03-29T03:00:00+02:00", 1_774_746_000.0),
        ("2026-03-29t01:00:00.250z", 1_774_746_000.25), ("2024-02-29T00:00:00-05:30", 1_709_184_600.0),
    ])
    func parses(text: String, seconds: Double) {
        #expect(RFC3339.parse(text)?.timeIntervalSince1970 == seconds)
    }

    @Test(arguments: ["2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:00",
        "2026-01-01T00:00:00+0200", "2026-01-01", "", "2026-01-01T00:00:00Zjunk"])
    func rejects(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test func formatsUTCAndLocal() {
        let instant = Date(timeIntervalSince1970: 1_774_746_000)
        #expect(RFC3339.format(instant) == "2026-03-29T01:00:00Z")
        #expect(RFC3339.format(instant, utcOffsetSeconds: 7200) == "2026-03-29T03:00:00+02:00")
        #expect(RFC3339.format(instant.addingTimeInterval(0.5), utcOffsetSeconds: -19800) == "2026-03-28T19:30:00.500-05:30")
    }
}
