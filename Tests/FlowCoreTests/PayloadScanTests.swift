import FlowCore
import TestSupport
import Testing

/// The decoder reads a JSON payload by scanning it to the source's path, without making the
/// document. What it reads must be what the whole document says at that path: the same reading,
/// the same "no field", the same error text, for every shape of document, broken ones and
/// repeated keys included. The reference here parses the whole document and walks the path.
@Suite struct PayloadScanTests {
    static let paths = ["value", "a.b", "a[1]", "a[1].b", "[0]", #"["x y"].v"#, #"["a\"b"]"#, "b[0][1]"]

    /// What the payload says at `path`, read from the parsed document.
    static func reference(_ payload: [UInt8], path: JSONPath, decimalComma: Bool) -> DecodedPayload {
        func isSpace(_ byte: UInt8) -> Bool { [0x20, 0x09, 0x0A, 0x0D, 0].contains(byte) }
        var text = payload[...]
        while let first = text.first, isSpace(first) { text = text.dropFirst() }
        while let last = text.last, isSpace(last) { text = text.dropLast() }
        if text.isEmpty { return .noReading }
        let plain = PayloadDecoder(decimalComma: decimalComma)
        let document: JSONValue
        do {
            document = try JSONValue(parsing: Array(text))
        } catch {
            // Not JSON: a device's word for "no value" (what the plain decoder calls no reading).
            return plain.decode(Array(text)) == .noReading ? .noReading : .invalid(PayloadError(.json, "not JSON (\(error))"))
        }
        var current = document
        for step in path.steps {
            switch (step, current) {
            case (.key(let key), .object(let members)):
                guard let next = members[key] else { return .noField }
                current = next
            case (.index(let index), .array(let items)):
                guard index < items.count else { return .noField }
                current = items[index]
            default:
                return .invalid(PayloadError(.json, "the path \(path) does not fit the payload (\(document.kindDescription))"))
            }
        }
        switch current {
        case .number(let number): return .value(number + 0.0)
        case .null: return .noReading
        case .string: return plain.decode(current.encoded())  // a quoted number, read as the plain decoder reads it
        default: return .invalid(PayloadError(.json, "\(path) is \(current.kindDescription), not a number"))
        }
    }

    static let keys = [#""value""#, #""a""#, #""b""#, #""v""#, #""x y""#, #""a\"b""#, #""\u0061""#, #""""#]
    static let leaves = [
        "1", "-2.5e3", "0", "1e999", "12345678901234567890", #""12""#, #"" 7,5 ""#, #""nan""#, #""W""#, "null", "true",
        "false", "[]", "{}", #""\ud83d\ude00""#,
    ]

    /// Random JSON text, often with a key twice.
    static func document(depth: Int, _ random: inout SplitMix64) -> String {
        let kind = Int.random(in: 0..<(depth > 2 ? 1 : 4), using: &random)
        switch kind {
        case 1:
            let members = (0..<Int.random(in: 0...4, using: &random)).map { _ in
                "\(keys.randomElement(using: &random)!) : \(document(depth: depth + 1, &random))"
            }
            return "{" + members.joined(separator: ",") + "}"
        case 2:
            let items = (0..<Int.random(in: 0...3, using: &random)).map { _ in document(depth: depth + 1, &random) }
            return " [" + items.joined(separator: ", ") + "]"
        default:
            return leaves.randomElement(using: &random)!
        }
    }

    /// Breaks a text now and then: a byte dropped, doubled or replaced.
    static func mangle(_ text: String, _ random: inout SplitMix64) -> [UInt8] {
        var bytes = Array(text.utf8)
        guard !bytes.isEmpty, Int.random(in: 0..<3, using: &random) == 0 else { return bytes }
        let at = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<3, using: &random) {
        case 0: bytes.remove(at: at)
        case 1: bytes.insert(bytes[at], at: at)
        default: bytes[at] = Array(#"{}[]",:\ 0-e"#.utf8).randomElement(using: &random)!
        }
        return bytes
    }

    @Test(arguments: [false, true])
    func scanningToThePathReadsWhatTheWholeDocumentSays(decimalComma: Bool) throws {
        var random = SplitMix64(seed: decimalComma ? 31 : 17)
        let paths = try Self.paths.map { try JSONPath($0) }
        var kinds: Set<String> = []
        for _ in 0..<4000 {
            let payload = Self.mangle(Self.document(depth: 0, &random), &random)
            for path in paths {
                let scanned = PayloadDecoder(path: path, decimalComma: decimalComma).decode(payload)
                let expected = Self.reference(payload, path: path, decimalComma: decimalComma)
                #expect(scanned == expected, "\(String(decoding: payload, as: UTF8.self)) at \(path)")
                switch scanned {
                case .value: kinds.insert("value")
                case .noReading: kinds.insert("no reading")
                case .noField: kinds.insert("no field")
                case .invalid: kinds.insert("invalid")
                }
            }
        }
        // The documents reached every outcome, so the comparison covered each.
        #expect(kinds == ["value", "no reading", "no field", "invalid"])
    }

    /// A key that appears twice reads as its last appearance, as in a parsed object.
    @Test func aRepeatedKeyReadsItsLastValue() throws {
        let decoder = PayloadDecoder(path: try JSONPath("a.b"))
        #expect(decoder.decode(Array(#"{"a":{"b":1},"a":{"b":2}}"#.utf8)) == .value(2))
        #expect(decoder.decode(Array(#"{"a":{"b":1},"a":{"c":2}}"#.utf8)) == .noField)
        #expect(decoder.decode(Array(#"{"a":{"b":1},"a":3}"#.utf8)) == .invalid(PayloadError(.json, "the path a.b does not fit the payload (an object)")))
    }
}
