import Commands
import Configuration
import FlowCore
import Foundation
import TestSupport
import ReplaySupport
import Testing

/// Payloads in each of the formats devices use beyond plain text and JSON, through `replay`: the
/// reading each must give, or the log line that says what to change.
@Suite struct PayloadFormatReplayTests {
    struct FormatCase: Sendable, CustomTestStringConvertible {
        var keys: String
        var payload: [UInt8]
        /// The reading (W, the widget's sign), or nil when there is none.
        var reading: Double?
        /// What the log says about the payload, when it gives no reading.
        var log: String?
        var testDescription: String { "{\(keys)} ← \(String(decoding: payload.prefix(24), as: UTF8.self).debugDescription)" }

        init(_ keys: String, _ payload: String, _ reading: Double) {
            self.init(keys, Array(payload.utf8), reading: reading)
        }

        init(_ keys: String, _ payload: String, log: String) {
            self.init(keys, Array(payload.utf8), log: log)
        }

        init(_ keys: String, _ payload: [UInt8], reading: Double? = nil, log: String? = nil) {
            self.keys = keys
            self.payload = payload
            self.reading = reading
            self.log = log
        }
    }

    /// Replays one message of `payload` to a grid source read with `keys`.
    static func run(_ keys: String, _ payload: [UInt8]) throws -> (reading: Double?, log: [String]) {
        let config = """
            timezone: UTC
            sources:
              grid: {topic: meter/grid, \(keys)}
            widgets:
              w: {template: flow, flow: {exchange: {rate: grid}}, policy: {min_interval: 0s, rate_step: 0.1, rate_deadband: 0}}
            """
        let line = TraceMessage(at: RFC3339.parse("2026-06-01T12:00:00Z")!, topic: "meter/grid", payload: payload).line
        let run = try replayWithLog(config: config, trace: [line])
        return (run.engine.readings["grid"]?.value, run.log.map(\.diagnostic.message))
    }

    static let textCases: [FormatCase] = [
        // key=value, the default separators (, ; newline) and given ones
        FormatCase("format: keyvalue, key: pwr", "pwr=-1,soc=87,temp=21.5", -1),
        FormatCase("format: keyvalue, key: soc", "pwr=-1;soc=87;temp=21.5", 87),
        FormatCase("format: keyvalue, key: temp", "pwr=-1\nsoc=87\ntemp=21.5\n", 21.5),
        FormatCase("format: keyvalue, key: P, separator: '&'", "P=1532.5&E=12", 1532.5),
        FormatCase("format: keyvalue, key: power, separator: ' ', assign: ':'", "voltage:231 power:-840 freq:50", -840),
        FormatCase("format: keyvalue, key: pwr, separator: ';', decimal_comma: true", "pwr=500,20;soc=87", 500.2),
        FormatCase("format: keyvalue, key: pwr", #"pwr="612",soc=87"#, 612),
        FormatCase("format: keyvalue, key: pwr, unit: kW", "pwr=1.5", 1500),
        // a pattern reaching a number in a sentence
        FormatCase(#"regex: 'grid (-?[0-9.]+) W'"#, "Meter 7: grid -412.5 W at 12:00", -412.5),
        FormatCase(#"regex: 'P=([^ ]+)', decimal_comma: true"#, "status ok P=1234,5 kW", 1234.5),
        // a sign in another field, both values, combined with invert
        FormatCase("json: power, sign: {json: flow, negative: [producing]}", #"{"power": 2145, "flow": "producing"}"#, -2145),
        FormatCase("json: power, sign: {json: flow, negative: [producing]}", #"{"power": 2145, "flow": "consuming"}"#, 2145),
        FormatCase("json: power, sign: {json: flow, negative: [producing], positive: [consuming]}", #"{"power": -300, "flow": "consuming"}"#, 300),
        FormatCase("json: power, sign: {json: dir, positive: [1]}", #"{"power": 80, "dir": 1}"#, 80),
        FormatCase("json: power, sign: {json: dir, positive: [1]}", #"{"power": 80, "dir": 0}"#, -80),
        FormatCase("json: power, invert: true, sign: {json: flow, negative: [producing]}", #"{"power": 2145, "flow": "producing"}"#, 2145),
        // a value map
        FormatCase(#"map: {"on": 1, "off": 0}"#, "ON", 1),
        FormatCase(#"map: {"on": 1, "off": 0}"#, "off", 0),
        FormatCase(#"json: state, map: {"on": 1000, "off": 0}"#, #"{"state": "on"}"#, 1000),
        FormatCase(#"json: relay, map: {"true": 1, "false": 0}"#, #"{"relay": true}"#, 1),
        FormatCase(#"map: {"on": 1, "off": 0}"#, "12", 12),
    ]

    @Test(arguments: textCases)
    func textFormatsGiveTheirReading(_ format: FormatCase) throws {
        let (reading, log) = try Self.run(format.keys, format.payload)
        #expect(reading == format.reading, "\(log)")
    }

    /// Each binary type in both byte orders, raw and as hex text.
    static let binaryCases: [FormatCase] = {
        var cases: [FormatCase] = []
        let samples: [(BinaryNumberFormat.NumberType, Double, UInt64)] = [
            (.int16, -1234, UInt64(UInt16(bitPattern: -1234))), (.uint16, 51234, 51234),
            (.int32, -123_456, UInt64(UInt32(bitPattern: -123_456))), (.uint32, 3_000_000, 3_000_000),
            (.int64, -98_765, UInt64(bitPattern: -98_765)), (.float32, 1532.25, UInt64(Float(1532.25).bitPattern)),
            (.float64, -412.125, (-412.125).bitPattern),
        ]
        for (type, value, bits) in samples {
            let big = (0..<type.byteCount).reversed().map { UInt8(truncatingIfNeeded: bits >> (8 * UInt64($0))) }
            for order in BinaryNumberFormat.ByteOrder.allCases {
                let bytes = order == .big ? big : big.reversed()
                let keys = "decode: \(type.rawValue), byte_order: \(order.rawValue), max_power: 1e9"
                cases.append(FormatCase(keys, bytes, reading: value))
                let hex = bytes.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined()
                cases.append(FormatCase(keys + ", hex: true", Array(hex.utf8), reading: value))
            }
        }
        return cases
    }()

    @Test(arguments: binaryCases)
    func binaryNumbersGiveTheirReading(_ format: FormatCase) throws {
        let (reading, log) = try Self.run(format.keys, format.payload)
        #expect(reading == format.reading, "\(log)")
    }

    /// Each kind of payload that gives no reading, with the line the log shows.
    static let errorCases: [FormatCase] = [
        FormatCase("decode: int32", [0x00, 0x08, 0xA1], log: "a payload of 3 bytes is not an int32 (4 bytes); check `decode:` (or `hex: true` for hex text)"),
        FormatCase("decode: int16, hex: true", "0008a1", log: "hex text of 3 bytes is not an int16 (2 bytes); check `decode:`"),
        FormatCase("decode: int16, hex: true", "zz", log: "'zz' is not hex text (pairs of 0-9, a-f); `hex: true` reads e.g. 08a1 for an int16"),
        FormatCase("unit: W", [0x44, 0xBF, 0x88, 0x00], log: "the payload is binary (4 bytes: 44bf8800), not text; set decode: int32, uint32 or float32 (and byte_order: big or little)"),
        FormatCase("unit: W", "pwr=-1,soc=87,temp=21", log: "the payload is key=value pairs (keys pwr, soc, temp); set `format: keyvalue` and `key:` to the one that holds the number"),
        FormatCase("json: power", "pwr=-1,soc=87", log: "the payload is key=value pairs (keys pwr, soc); set `format: keyvalue` and `key:` to the one that holds the number"),
        FormatCase("format: keyvalue, key: power", "pwr=-1,soc=87", log: "no key 'power' in the payload (keys seen: pwr, soc); set `key:` to the one that holds the number"),
        FormatCase("format: keyvalue, key: pwr", "1200", log: "no key=value pairs in '1200'; `format: keyvalue` reads pairs such as pwr=1200"),
        FormatCase(#"regex: 'grid (-?[0-9.]+) W'"#, "Meter 7: solar 412.5 W at 12:00, all well", log: "the regex 'grid (-?[0-9.]+) W' does not match the payload 'Meter 7: solar 412.5 W at 12:00, all wel…'"),
        FormatCase("json: power, sign: {json: flow, negative: [producing]}", #"{"power": 2145}"#, log: "no direction field flow in the message; reading ignored (`sign:` never guesses the direction)"),
        FormatCase("json: power, sign: {json: flow, negative: [producing], positive: [consuming]}", #"{"power": 2145, "flow": "idle"}"#, log: "the direction field flow is 'idle', in neither `negative:` nor `positive:` (consuming, producing); add it to one"),
        FormatCase(#"map: {"on": 1, "off": 0}"#, "standby", log: "'standby' is not a number and not in the source's map (off, on)"),
    ]

    @Test(arguments: errorCases)
    func undecodablePayloadsSayWhatToChange(_ format: FormatCase) throws {
        let (reading, log) = try Self.run(format.keys, format.payload)
        #expect(reading == nil)
        let why = try #require(format.log)
        #expect(log.contains("source 'grid' (topic meter/grid): \(why); reading ignored (1 so far)"), "\(log)")
    }
}
