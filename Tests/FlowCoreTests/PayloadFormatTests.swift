import FlowCore
import Testing

/// The decoders beyond plain text and JSON, one behaviour each; the replay tables in CommandsTests
/// show them through the whole engine.
@Suite struct PayloadFormatTests {
    static func kind(_ decoded: DecodedPayload) -> PayloadError.Kind? {
        if case .invalid(let error) = decoded { return error.kind }
        return nil
    }

    @Test(arguments: [
        ("08a1", DecodedPayload.value(2209)), ("0x08A1", .value(2209)), (" 08A1\n", .value(2209)),
        ("8a1", .invalid(PayloadError(.notHex, "'8a1' is not hex text (pairs of 0-9, a-f); `hex: true` reads e.g. 08a1 for an int16"))),
        ("08 a1", .invalid(PayloadError(.notHex, "'08 a1' is not hex text (pairs of 0-9, a-f); `hex: true` reads e.g. 08a1 for an int16"))),
    ])
    func hexText(payload: String, decoded: DecodedPayload) {
        #expect(PayloadDecoder(format: .binary(BinaryNumberFormat(.int16, hex: true))).decode(Array(payload.utf8)) == decoded)
    }

    /// An empty payload (a retained value cleared) and a device's word for none are no reading in
    /// every format, as in plain text and JSON; raw bytes that spell a word are a number.
    @Test(arguments: [
        ("", PayloadDecoder.Format.keyValue(KeyValueFormat(key: "power"))), ("unavailable", .keyValue(KeyValueFormat(key: "power"))),
        (" None\n", .keyValue(KeyValueFormat(key: "power"))),
        ("", .binary(BinaryNumberFormat(.int16))), ("", .binary(BinaryNumberFormat(.int16, hex: true))),
        ("unknown", .binary(BinaryNumberFormat(.int16, hex: true))), ("n/a", .binary(BinaryNumberFormat(.float32, hex: true))),
    ])
    func nothingToReadIsNoReading(payload: String, format: PayloadDecoder.Format) {
        #expect(PayloadDecoder(format: format).decode(Array(payload.utf8)) == .noReading)
    }

    @Test func aPatternOfNothingIsNoReading() throws {
        let decoder = PayloadDecoder(format: .pattern(try PatternFormat("P: ([^ ]*) W")))
        #expect(decoder.decode([]) == .noReading)
        #expect(decoder.decode(Array("unavailable".utf8)) == .noReading)
        // "null" as four raw bytes is a float32 like any other.
        #expect(PayloadDecoder(format: .binary(BinaryNumberFormat(.float32))).decode(Array("null".utf8)) != .noReading)
    }

    /// A float NaN is the device's "no value"; an infinity is a broken reading, never a number.
    @Test func floatsThatAreNotNumbers() {
        let float32 = PayloadDecoder(format: .binary(BinaryNumberFormat(.float32)))
        #expect(float32.decode([0x7F, 0xC0, 0x00, 0x00]) == .noReading)
        #expect(Self.kind(float32.decode([0x7F, 0x80, 0x00, 0x00])) == .notFinite)
        #expect(float32.decode([0x80, 0x00, 0x00, 0x00]) == .value(0))
    }

    /// A raw binary payload is not trimmed: a 0x20 or 0x00 byte is part of the number.
    @Test func rawBytesAreNotTrimmed() {
        #expect(PayloadDecoder(format: .binary(BinaryNumberFormat(.uint16))).decode([0x00, 0x20]) == .value(32))
        #expect(PayloadDecoder(format: .binary(BinaryNumberFormat(.uint16, byteOrder: .little))).decode([0x20, 0x00]) == .value(32))
    }

    @Test(arguments: [
        ("a=1,,b=2", "b", DecodedPayload.value(2)), ("a = 1 , b = 2 ", "b", .value(2)), ("a=1||b=2", "b", .value(2)),
        ("a=1||b=2", "a", .value(1)), ("a==1||b=2", "a", .invalid(PayloadError(.notANumber, "'=1' is not a number"))),
        ("b=unavailable||a=1", "b", .noReading),
    ])
    func keyValuePairsWithASeparatorOfTwoCharacters(payload: String, key: String, decoded: DecodedPayload) {
        let decoder = PayloadDecoder(format: .keyValue(KeyValueFormat(key: key, separator: payload.contains("||") ? "||" : nil)))
        #expect(decoder.decode(Array(payload.utf8)) == decoded)
    }

    /// The sign never turns 0 into -0, and gives the magnitude whatever sign it had.
    @Test func theSignFieldGivesTheMagnitudeItsDirection() throws {
        let decoder = PayloadDecoder(path: try JSONPath("p"), sign: SignField(path: try JSONPath("d"), negative: ["out"]))
        guard case .value(let zero) = decoder.decode(Array(#"{"p": 0, "d": "out"}"#.utf8)) else { Issue.record("no value"); return }
        #expect(zero.sign == .plus)
        #expect(decoder.decode(Array(#"{"p": -5, "d": "out"}"#.utf8)) == .value(-5))
        #expect(decoder.decode(Array(#"{"p": -5, "d": "in"}"#.utf8)) == .value(5))
        #expect(Self.kind(decoder.decode(Array(#"{"p": 5, "d": null}"#.utf8))) == .missingSign)
        #expect(Self.kind(decoder.decode(Array(#"{"p": 5, "d": [1]}"#.utf8))) == .missingSign)
        #expect(decoder.decode(Array(#"{"p": null, "d": "out"}"#.utf8)) == .noReading)
    }

    @Test func aPatternReadsItsCaptureAsTextIsRead() throws {
        let decoder = PayloadDecoder(format: .pattern(try PatternFormat("P: ([^ ]*) W")))
        #expect(decoder.decode(Array("P: 12.5 W".utf8)) == .value(12.5))
        #expect(decoder.decode(Array("P: nan W".utf8)) == .noReading)
        #expect(Self.kind(decoder.decode(Array("P: x W".utf8))) == .notANumber)
        #expect(Self.kind(decoder.decode([0x01, 0xFF])) == .binary)
    }

    /// A regex is matched against 1 KiB at most: beyond, the payload is refused unread, however
    /// the pattern would fare (`([0-9.]+) W` on a run of digits fails at every start, the square of
    /// the length); up to it, read as before, the run of digits and all.
    @Test(arguments: [(1024, nil), (1025, PayloadError.Kind.tooLongForRegex), (2048, .tooLongForRegex), (65_536, .tooLongForRegex)])
    func aPatternReadsAtMostItsLimit(bytes: Int, refused: PayloadError.Kind?) throws {
        let decoder = PayloadDecoder(format: .pattern(try PatternFormat("([0-9.]+) W")))
        let payload = Array(repeating: UInt8(ascii: "9"), count: bytes - 7) + Array(" 12.5 W".utf8)
        let decoded = decoder.decode(payload)
        if let refused {
            #expect(Self.kind(decoded) == refused)
        } else {
            #expect(decoded == .value(12.5))
        }
    }

    /// Patterns that repeat a repetition, whose time doubles with each character of a text that
    /// nearly matches, are found (for `check`'s warning); the others are not.
    @Test(arguments: [
        (#"^(\d+)+$"#, #"(\d+)+"#),
        ("(a*)*", "(a*)*"),
        ("(?:x+){2,}", "(?:x+){"),
        (#"^((\d+)\s*)*$"#, #"((\d+)\s*)*"#),
        ("([0-9.]+) W", nil),
        (#"P: ([^ ]*) W"#, nil),
        (#"[(+*]+(\d+)"#, nil),
        (#"\((\d+)\)+"#, nil),
        ("(a|b)+", nil),
        (#"(\d{1,3})+"#, #"(\d{1,3})+"#),
    ] as [(String, String?)])
    func nestedRepetitionsAreFound(pattern: String, nested: String?) throws {
        #expect(PatternFormat.nestedRepetition(in: pattern) == nested)
    }
}
