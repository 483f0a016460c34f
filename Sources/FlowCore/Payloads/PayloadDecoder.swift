/// What a payload says about a source.
public enum DecodedPayload: Sendable, Equatable {
    /// A finite number, as written (before unit, scale and sign).
    case value(Double)
    /// The device says it has no value (`nan`, `unavailable`, `null`, an empty retained message…).
    /// Never 0: the last good reading stays.
    case noReading
    /// A JSON document without the source's field (a key or an index it does not have). On a topic
    /// that carries several kinds of messages (Shelly's `events/rpc`) that is the normal case.
    case noField
    /// Not a number flowbridge can read; the error names why and says what to change.
    case invalid(PayloadError)
}

/// A path into a JSON payload: `ENERGY.Power`, `ENERGY.Power[1]`, `["em:0"].x`, `[""]` (the empty key).
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    public enum Step: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public let steps: [Step]
    /// The path as the user wrote it, for messages.
    public let description: String

    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public init(_ text: String) throws(SyntaxError) {
        description = text
        var steps: [Step] = []
        let chars = Array(text.unicodeScalars)
        var index = 0
        func fail(_ why: String) -> SyntaxError { SyntaxError(description: "json path '\(text)': \(why)") }
        var expectKey = true  // at the start and after a '.'
        while index < chars.count || expectKey {
            if index == chars.count { throw fail("ends where a key is expected") }
            let char = chars[index]
            if char == "[" {
                index += 1
                guard index < chars.count else { throw fail("unclosed '['") }
                if chars[index] == "\"" || chars[index] == "'" {
                    let quote = chars[index]
                    index += 1
                    var key = String.UnicodeScalarView()
                    while index < chars.count, chars[index] != quote {
                        if chars[index] == "\\", index + 1 < chars.count { index += 1 }
                        key.append(chars[index])
                        index += 1
                    }
                    guard index + 1 < chars.count, chars[index + 1] == "]" else { throw fail("unclosed quoted key") }
                    index += 2
                    steps.append(.key(String(key)))
                } else {
                    var digits = ""
                    while index < chars.count, chars[index] != "]" {
                        digits.unicodeScalars.append(chars[index])
                        index += 1
                    }
                    guard index < chars.count, let number = Int(digits), number >= 0 else {
                        throw fail("'[\(digits)]' is not an array index or a quoted key")
                    }
                    index += 1
                    steps.append(.index(number))
                }
                expectKey = false
            } else if expectKey {
                var key = String.UnicodeScalarView()
                while index < chars.count, chars[index] != ".", chars[index] != "[" {
                    if chars[index] == "]" { throw fail("stray ']'") }
                    key.append(chars[index])
                    index += 1
                }
                if key.isEmpty { throw fail(#"empty key (write [""] for a key that is empty)"#) }
                steps.append(.key(String(key)))
                expectKey = false
            } else if char == "." {
                index += 1
                expectKey = true
                if index < chars.count, chars[index] == "[" { expectKey = false }
            } else {
                throw fail("expected '.' or '[' after a key")
            }
        }
        self.steps = steps
    }
}

/// Reads one number out of an MQTT payload (DESIGN §1.1).
///
/// Meters write numbers as bare text (`0.0`, ` +1.2e3 `), inside JSON (`{"value": 472.85}`), quoted
/// inside JSON (`"19.6"`), with a decimal comma (`500,20`) where the source says so; and they say
/// "no value" in many ways (`nan`, `unavailable`, `None`, an empty retained message, `null`).
///
/// Devices that say it differently pick another `format`: `key=value` text, a pattern, a binary
/// number; `sign` takes the direction from another field, `map` reads words as numbers.
public struct PayloadDecoder: Sendable, Hashable {
    /// How the payload holds the number, beyond plain text and JSON.
    public enum Format: Sendable, Hashable {
        /// A number as text, or inside JSON at `path`: the default, and the fast path.
        case text
        case keyValue(KeyValueFormat)
        case pattern(PatternFormat)
        case binary(BinaryNumberFormat)
    }

    public var path: JSONPath?
    public var decimalComma: Bool
    public var format: Format
    public var sign: SignField?
    public var map: ValueMap?

    public init(path: JSONPath? = nil, decimalComma: Bool = false, format: Format = .text, sign: SignField? = nil, map: ValueMap? = nil) {
        self.path = path
        self.decimalComma = decimalComma
        self.format = format
        self.sign = sign
        self.map = map
    }

    public func decode(_ payload: [UInt8]) -> DecodedPayload {
        let decoded: DecodedPayload = switch format {
        case .text: decodeText(payload)
        case .keyValue(let keyValue): Self.saysNoReading(payload) ? .noReading : keyValue.decode(payload, with: self)
        case .pattern(let pattern): Self.saysNoReading(payload) ? .noReading : pattern.decode(payload, with: self)
        // Raw bytes are data, whatever text they spell: only an empty payload says nothing.
        case .binary(let binary): payload.isEmpty || binary.hex && Self.saysNoReading(payload) ? .noReading : binary.decode(payload)
        }
        guard let sign, case .value(let magnitude) = decoded else { return decoded }
        return sign.apply(magnitude, to: Self.trimmed(payload[...]))
    }

    /// A number as text, or at `path` in JSON.
    func decodeText(_ payload: [UInt8]) -> DecodedPayload {
        let text = Self.trimmed(payload[...])
        guard let path else {
            if let first = text.first, first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
                return .invalid(PayloadError(.json, "the payload is JSON; set `json:` to the field that holds the number"))
            }
            if text.first == UInt8(ascii: "\"") {
                guard case .string(let inner)? = try? JSONValue(parsing: Array(text)) else {
                    return .invalid(PayloadError(.notANumber, "unterminated quoted text"))
                }
                return number(in: Array(inner.utf8)[...], quoted: true)
            }
            let decoded = number(in: text, quoted: false)
            if case .invalid = decoded, let error = PayloadShape.of(payload).error(payload: payload) { return .invalid(error) }
            return decoded
        }
        if text.isEmpty { return .noReading }
        let found: PathScan
        do {
            found = try text.withUnsafeBufferPointer { buffer throws(JSONParseError) in
                var parser = JSONParser(bytes: buffer)
                return try parser.scanDocument(path.steps[...])
            }
        } catch {
            if Self.isNoReading(text) { return .noReading }
            return .invalid(PayloadShape.of(payload).error(payload: payload) ?? PayloadError(.json, "not JSON (\(error))"))
        }
        switch found {
        case .number(let number): return .value(number + 0.0)
        case .null: return .noReading
        case .text(let inner): return number(in: Array(inner.utf8)[...], quoted: true)
        case .bool(let flag) where map != nil: return number(in: Array((flag ? "true" : "false").utf8)[...], quoted: true)
        case .bool: return .invalid(PayloadError(.json, "\(path) is a boolean, not a number"))
        case .other(let kind): return .invalid(PayloadError(.json, "\(path) is \(kind), not a number"))
        case .missing: return .noField
        case .mismatch: return .invalid(PayloadError(.json, "the path \(path) does not fit the payload (\(JSONParser.kindDescription(startingWith: text.first!)))"))
        }
    }

    /// A number written as text; `quoted` when it came from inside a JSON string.
    func number(in raw: ArraySlice<UInt8>, quoted: Bool) -> DecodedPayload {
        let text = Self.trimmed(raw)
        if text.isEmpty || Self.isNoReading(text) { return .noReading }
        if let map, let mapped = map.value(for: text) { return .value(mapped) }
        var bytes = text
        if decimalComma, let comma = bytes.firstIndex(of: UInt8(ascii: ",")), !bytes.contains(UInt8(ascii: ".")) {
            bytes[comma] = UInt8(ascii: ".")
        }
        var shown: String { String(decoding: text.prefix(40), as: UTF8.self) }
        guard Self.hasNumberShape(bytes) else {
            if !decimalComma, bytes.contains(UInt8(ascii: ",")), Self.hasNumberShape(bytes.map { $0 == UInt8(ascii: ",") ? UInt8(ascii: ".") : $0 }[...]) {
                return .invalid(PayloadError(.notANumber, "'\(shown)' has a decimal comma; set `decimal_comma: true` on the source"))
            }
            if let map {
                return .invalid(PayloadError(.unmapped, "'\(shown)' is not a number and not in the source's map (\(map.words))"))
            }
            return .invalid(PayloadError(.notANumber, quoted ? "\"\(shown)\" is text, not a number" : "'\(shown)' is not a number"))
        }
        guard let value = bytes.withUnsafeBufferPointer(NumberText.double(ascii:)) else {
            return .invalid(PayloadError(.outOfRange, "'\(shown)' is out of range"))
        }
        return .value(value + 0.0)  // -0 reads as 0
    }

    /// The start of a payload as one line of text, for messages.
    static func excerpt(_ payload: [UInt8]) -> String {
        String(decoding: payload.prefix(40), as: UTF8.self).split(whereSeparator: \.isNewline).joined(separator: " ") + (payload.count > 40 ? "…" : "")
    }

    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0 }
        var slice = bytes
        while let first = slice.first, isSpace(first) { slice = slice.dropFirst() }
        while let last = slice.last, isSpace(last) { slice = slice.dropLast() }
        return slice
    }

    /// A text payload that is nothing (an empty retained message: the value cleared) or, whole, a
    /// device's word for none: no reading in every format, as in plain text and JSON, never a
    /// payload refused.
    static func saysNoReading(_ payload: [UInt8]) -> Bool {
        let text = trimmed(payload[...])
        return text.isEmpty || isNoReading(text)
    }

    /// The words devices use for "no value", compared without case.
    static let noReadingWords: Set<String> = ["nan", "-nan", "unavailable", "unknown", "none", "null", "n/a", "-"]

    static func isNoReading(_ text: ArraySlice<UInt8>) -> Bool {
        guard text.count <= 11 else { return false }
        // Every word but "-" has a letter: a number is told apart without making a String.
        guard text.contains(where: { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) }) else {
            return text.elementsEqual("-".utf8)
        }
        return noReadingWords.contains(String(decoding: text, as: UTF8.self).lowercased())
    }

    /// `[+-]digits[.digits][(e|E)[+-]digits]`, also `.5` and `5.`; nothing else (no `inf`, no hex).
    static func hasNumberShape(_ bytes: ArraySlice<UInt8>) -> Bool {
        var index = bytes.startIndex
        func digits() -> Int {
            let start = index
            while index < bytes.endIndex, (48...57).contains(bytes[index]) { index += 1 }
            return index - start
        }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
        var mantissa = digits()
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") {
            index += 1
            mantissa += digits()
        }
        guard mantissa > 0 else { return false }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.endIndex, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return index == bytes.endIndex
    }
}

/// What a scan along a JSON path found; the value itself only when it is one the decoder reads.
enum PathScan: Equatable {
    case number(Double)
    case text(String)
    case bool(Bool)
    case null
    /// Another kind of value (its `kindDescription`).
    case other(kind: String)
    /// An object without the key, or an array without the index.
    case missing
    /// A step meets a value of the wrong kind (a key into a number): the path does not fit at all.
    case mismatch
}

extension JSONParser {
    /// Reads one JSON text (as `parseDocument` does, with the same errors) while following `steps`
    /// into it: only the value at the end of the path is made, everything else is checked and
    /// skipped, so a payload costs no document tree when one number is wanted. A key that appears
    /// twice counts as its last appearance, as in a parsed object.
    mutating func scanDocument(_ steps: ArraySlice<JSONPath.Step>) throws(JSONParseError) -> PathScan {
        let found = try scan(steps)
        skipWhitespace()
        if index < bytes.count { throw fail("unexpected text after the JSON value") }
        return found
    }

    mutating func scan(_ steps: ArraySlice<JSONPath.Step>) throws(JSONParseError) -> PathScan {
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end of JSON") }
        let first = bytes[index]
        guard let step = steps.first else {
            switch first {
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
            case UInt8(ascii: "\""): return .text(try parseString())
            case UInt8(ascii: "t"), UInt8(ascii: "f"):
                try skipValue()
                return .bool(first == UInt8(ascii: "t"))
            default:
                try skipValue()
                return first == UInt8(ascii: "n") ? .null : .other(kind: Self.kindDescription(startingWith: first))
            }
        }
        var found = PathScan.missing
        switch (step, first) {
        case (.key(let wanted), UInt8(ascii: "{")):
            try readObject { parser, key throws(JSONParseError) in
                if try key.equals(wanted, &parser) { found = try parser.scan(steps.dropFirst()) } else { try parser.skipValue() }
            }
        case (.index(let wanted), UInt8(ascii: "[")):
            try readArray { parser, position throws(JSONParseError) in
                if position == wanted { found = try parser.scan(steps.dropFirst()) } else { try parser.skipValue() }
            }
        default:
            try skipValue()
            found = .mismatch
        }
        return found
    }

    /// `JSONValue.kindDescription` of a (valid) value that starts with `byte`.
    static func kindDescription(startingWith byte: UInt8) -> String {
        let kind: JSONValue = switch byte {
        case UInt8(ascii: "{"): .object([:])
        case UInt8(ascii: "["): .array([])
        case UInt8(ascii: "\""): .string("")
        case UInt8(ascii: "t"), UInt8(ascii: "f"): .bool(false)
        case UInt8(ascii: "n"): .null
        default: .number(0)
        }
        return kind.kindDescription
    }
}
