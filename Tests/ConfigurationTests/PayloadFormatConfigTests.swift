import Configuration
import FlowCore
import TestSupport
import Testing

/// The source keys that choose a payload format: what they make, and each mistake named with key
/// and line.
@Suite struct PayloadFormatConfigTests {
    static func config(_ keys: String) -> String {
        "sources:\n  a: {topic: x, \(keys)}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n"
    }

    @Test(arguments: [
        ("regex: '(unclosed'", "line 2: sources.a.regex: the regex '(unclosed' does not compile"),
        ("regex: 'P=[0-9]+'", "line 2: sources.a.regex: the regex 'P=[0-9]+' needs exactly one capture group"),
        ("regex: '(P)=([0-9]+)'", "line 2: sources.a.regex: the regex '(P)=([0-9]+)' needs exactly one capture group"),
        ("regex: 'P=([0-9]+)?'", "line 2: sources.a.regex: the regex 'P=([0-9]+)?' needs exactly one capture group"),
        ("decode: int24", "line 2: sources.a.decode: 'int24' is not one of int16, uint16, int32, uint32, int64, float32, float64"),
        ("decode: int16, byte_order: middle", "line 2: sources.a.byte_order: 'middle' is not one of big, little"),
        ("byte_order: little", "line 2: sources.a.byte_order: `byte_order:` belongs to decode:"),
        ("hex: true", "line 2: sources.a.hex: `hex:` belongs to decode:"),
        ("format: keyvalue", "line 2: sources.a.key: is required with format: keyvalue"),
        ("format: csv, key: a", "line 2: sources.a.format: 'csv' is not one of keyvalue"),
        ("key: pwr", "line 2: sources.a.key: `key:` belongs to format: keyvalue"),
        ("format: keyvalue, key: pwr, separator: ''", "line 2: sources.a.separator: must not be empty"),
        ("format: keyvalue, key: pwr, decimal_comma: true", "line 2: sources.a.decimal_comma: a decimal comma cannot be told from the pairs' separator ','"),
        ("json: p, regex: '([0-9]+)'", "line 2: sources.a.regex: a payload is read one way: write json or regex, not both"),
        ("decode: int16, format: keyvalue, key: k", "line 2: sources.a.decode: a payload is read one way: write format or decode, not both"),
        ("decode: int16, map: {on: 1}", "line 2: sources.a.map: a binary number has no words to map"),
        ("decode: float32, decimal_comma: true", "line 2: sources.a.decimal_comma: a binary number has no decimal comma"),
        ("sign: {json: flow, negative: [out]}", "line 2: sources.a.sign: a sign from another field needs `json:`"),
        ("json: p, sign: {negative: [out]}", "line 2: sources.a.sign.json: is required"),
        ("json: p, sign: {json: flow}", "line 2: sources.a.sign.negative: is required (or positive:)"),
        ("json: p, sign: {json: flow, negative: [out], positive: [out]}", "line 2: sources.a.sign.positive: 'out' cannot be both negative and positive"),
        ("json: p, sign: {json: 'a..b', negative: [out]}", "line 2: sources.a.sign.json: json path 'a..b'"),
        ("json: p, sign: {json: flow, negative: [out], neg: [x]}", "line 2: sources.a.sign.neg: unknown key"),
        ("map: {on: one}", "line 2: sources.a.map.on: expected a number"),
        ("map: [on, off]", "line 2: sources.a.map: expected a mapping of words to numbers"),
        ("map: {ON: 1, on: 2}", "line 2: sources.a.map.on: 'on' is mapped twice"),
    ])
    func aBrokenFormatNamesKeyAndLine(keys: String, expected: String) {
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(Self.config(keys), file: "config.yaml") }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error")")
    }

    @Test func theKeysMakeTheDecoder() throws {
        func decoder(_ keys: String) throws -> PayloadDecoder {
            try DaemonConfig.parse(Self.config(keys), file: "config.yaml").flow.sources[0].decoder
        }
        #expect(try decoder("format: keyvalue, key: pwr").format == .keyValue(KeyValueFormat(key: "pwr")))
        #expect(try decoder("format: keyvalue, key: pwr, separator: '&', assign: ':'").format == .keyValue(KeyValueFormat(key: "pwr", separator: "&", assign: ":")))
        #expect(try decoder("regex: 'P=([0-9]+)'").format == .pattern(try PatternFormat("P=([0-9]+)")))
        #expect(try decoder("decode: uint32, byte_order: little, hex: true").format == .binary(BinaryNumberFormat(.uint32, byteOrder: .little, hex: true)))
        #expect(try decoder("decode: float64").format == .binary(BinaryNumberFormat(.float64)))
        let sign = try decoder("json: p, sign: {json: flow, negative: producing}").sign
        #expect(sign == SignField(path: try JSONPath("flow"), negative: ["producing"]))
        #expect(try decoder("map: {On: 1, off: 0}").map == ValueMap(["on": 1, "off": 0]))
        #expect(try decoder("json: p").format == .text)
    }
}
