/// A JSON document value.
///
/// flowbridge reads JSON from meters (often sloppy), writes widget documents, and diffs them, so it
/// keeps its own small value type instead of `Codable` models: one parser and one printer serve the
/// payload decoder, the merge-patch code, the widget models, traces and the state file.
///
/// Printing is deterministic (object keys sorted by their UTF-8 bytes) and numbers print as a person
/// writes them: `1000`, `-1400`, `12.4`, never `1000.0`.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue {
    /// The value under `key` when this is an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// A short name of the kind, for error messages ("expected a number, found a text").
    public var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a text"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

// MARK: - Printing

extension JSONValue: CustomStringConvertible {
    /// Compact JSON text.
    public var description: String { String(decoding: encoded(), as: UTF8.self) }

    /// Compact JSON as UTF-8 bytes, keys sorted.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(to: &out)
        return out
    }

    /// Appends the compact JSON text of this value to `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let number): JSONValue.writeNumber(number, to: &out)
        case .string(let text): JSONValue.writeString(text, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            func member(_ key: String, _ value: JSONValue) {
                JSONValue.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            if members.count == 1, let (key, value) = members.first {
                member(key, value)  // most members of a patch: nothing to sort
            } else {
                for (index, (key, value)) in members.sorted(by: { JSONValue.keyOrder($0.key, $1.key) }).enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    member(key, value)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Byte order of the UTF-8 text: the same on every platform and locale.
    static func keyOrder(_ lhs: String, _ rhs: String) -> Bool {
        // Native strings compare in their storage; others through the generic view.
        let compared = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right in left.lexicographicallyPrecedes(right) }
        }
        return (compared ?? nil) ?? lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    /// Appends what `format` returns; whole numbers digit by digit, without making a String.
    static func writeNumber(_ number: Double, to out: inout [UInt8]) {
        guard number.isFinite, number == number.rounded(), abs(number) < 1e15 else {
            out.append(contentsOf: format(number).utf8)
            return
        }
        var magnitude = Int64(number).magnitude  // also turns -0 into 0
        if number < 0, magnitude != 0 { out.append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64) = (0, 0)  // 16 bytes: room for the 15 digits below 1e15
        withUnsafeMutableBytes(of: &digits) { buffer in
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: buffer[start...])
        }
    }

    /// Formats a number the way a person writes it: integers without a fraction, other values with
    /// the shortest text that reads back to the same Double. Non-finite values have no JSON form and
    /// print as `null` (validation keeps them out of widget documents).
    public static func format(_ number: Double) -> String {
        guard number.isFinite else { return "null" }
        if number == number.rounded(), abs(number) < 1e15 {
            return String(Int64(number))  // also turns -0 into "0"
        }
        return number.description  // shortest round-trip form, e.g. "12.4", "1e-05"
    }

    static func writeString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            // Most texts (names, keys) need no escape: one copy.
            guard bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                out.append(contentsOf: bytes)
                return
            }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
                case 0x0A: out.append(contentsOf: "\\n".utf8)
                case 0x0D: out.append(contentsOf: "\\r".utf8)
                case 0x09: out.append(contentsOf: "\\t".utf8)
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0xF)])
                default: out.append(byte)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

// MARK: - Parsing

/// Why a text is not JSON, with the byte offset where reading stopped.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public var description: String { "\(message) at byte \(offset)" }
}

extension JSONValue {
    /// Parses one JSON text (RFC 8259). Surrounding white space is allowed; anything else after the
    /// value is an error. Nesting deeper than 128 levels is refused rather than risking the stack.
    public init(parsing text: String) throws(JSONParseError) {
        self = try JSONValue(parsing: Array(text.utf8))
    }

    public init(parsing bytes: [UInt8]) throws(JSONParseError) {
        self = try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            var parser = JSONParser(bytes: buffer)
            return try parser.parseDocument()
        }
    }
}

/// A recursive-descent JSON parser over UTF-8 bytes.
struct JSONParser: ~Copyable {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0
    static let maxDepth = 128

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        if index < bytes.count { throw fail("unexpected text after the JSON value") }
        return value
    }

    func fail(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: index) }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end of JSON") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw fail("unexpected character")
        }
    }

    mutating func expectLiteral(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of JSON") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw fail("unknown literal")
        }
        index += count
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > JSONParser.maxDepth { throw fail("JSON nested too deeply") }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        var members: [String: JSONValue] = [:]
        try readObject { parser, key throws(JSONParseError) in
            members[try key.text(&parser)] = try parser.parseValue()
        }
        return .object(members)
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        var items: [JSONValue] = []
        try readArray { parser, _ throws(JSONParseError) in items.append(try parser.parseValue()) }
        return .array(items)
    }

    /// A member's key where it stands in the text: compared in place, made a String only on demand.
    struct Key {
        /// The bytes between the quotes.
        let range: Range<Int>
        /// Holds an escape: the text is not the bytes as they stand.
        let escaped: Bool

        func text(_ parser: inout JSONParser) throws(JSONParseError) -> String {
            guard escaped else { return String(decoding: UnsafeBufferPointer(rebasing: parser.bytes[range]), as: UTF8.self) }
            let resume = parser.index
            parser.index = range.lowerBound - 1
            defer { parser.index = resume }
            return try parser.parseString()
        }

        /// Byte by byte in a plain loop: `elementsEqual`, over the key's `String.UTF8View` or over
        /// two buffers, went through generic code for each byte (for "power", 130 instructions a
        /// reading more than this).
        static func same(_ key: UnsafeBufferPointer<UInt8>, _ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
            guard key.count == wanted.count else { return false }
            for index in key.indices where key[index] != wanted[index] { return false }
            return true
        }

        func equals(_ wanted: String, _ parser: inout JSONParser) throws(JSONParseError) -> Bool {
            guard escaped else {
                let key = UnsafeBufferPointer(rebasing: parser.bytes[range])
                var wanted = wanted
                return wanted.withUTF8 { Self.same(key, $0) }
            }
            return try text(&parser) == wanted
        }
    }

    /// Reads an object, member by member: `member` gets each key with the parser at its value, and
    /// must read the value. One reader for building, skipping and scanning, so all three accept the
    /// same texts and fail with the same errors at the same places.
    mutating func readObject(_ member: (inout JSONParser, Key) throws(JSONParseError) -> Void) throws(JSONParseError) {
        try enter()
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let start = index + 1
            let escaped = try readString(keeping: false).escaped
            let key = Key(range: start..<(index - 1), escaped: escaped)
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            try member(&self, key)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return
            } else {
                throw fail("expected ',' or '}'")
            }
        }
    }

    /// Reads an array, item by item: `item` gets each position with the parser at the item, and
    /// must read it.
    mutating func readArray(_ item: (inout JSONParser, Int) throws(JSONParseError) -> Void) throws(JSONParseError) {
        try enter()
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return
        }
        var position = 0
        while true {
            try item(&self, position)
            position += 1
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return
            } else {
                throw fail("expected ',' or ']'")
            }
        }
    }

    /// Checks one value and moves past it, making nothing of it.
    mutating func skipValue() throws(JSONParseError) {
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end of JSON") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try readObject { parser, _ throws(JSONParseError) in try parser.skipValue() }
        case UInt8(ascii: "["): try readArray { parser, _ throws(JSONParseError) in try parser.skipValue() }
        case UInt8(ascii: "\""): _ = try readString(keeping: false)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try readNumber(converting: false)
        default: _ = try parseValue()  // a literal
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> Double {
        try readNumber(converting: true)!
    }

    /// Reads a number; without `converting`, only checks it (converting only what could be out of
    /// range: one with an exponent or more digits than a finite Double has before its point).
    @discardableResult
    mutating func readNumber(converting: Bool) throws(JSONParseError) -> Double? {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits(_ parser: inout JSONParser) -> Int {
            let begin = parser.index
            while parser.index < parser.bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index])
            {
                parser.index += 1
            }
            return parser.index - begin
        }
        let intDigits = digits(&self)
        guard intDigits > 0 else { throw fail("expected a digit") }
        if intDigits > 1, bytes[start + (bytes[start] == UInt8(ascii: "-") ? 1 : 0)] == UInt8(ascii: "0") {
            throw fail("leading zero in a number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw fail("expected a digit after '.'") }
        }
        var exponent = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            exponent = true
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits(&self) > 0 else { throw fail("expected a digit in the exponent") }
        }
        if !converting, !exponent, intDigits <= 308 { return nil }
        let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
        guard let number = NumberText.double(ascii: text) else { throw fail("number out of range") }
        return number
    }

    mutating func parseString() throws(JSONParseError) -> String {
        try readString(keeping: true).text!
    }

    /// Reads a string; without `keeping` it is only checked, and no text is made. `escaped`: the
    /// string held an escape.
    mutating func readString(keeping: Bool) throws(JSONParseError) -> (text: String?, escaped: Bool) {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = keeping ? String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self) : nil
                index += 1
                return (text, false)
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            index += 1
        }
        var scalars: [UInt8] = keeping ? Array(bytes[start..<index]) : []
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return (keeping ? String(decoding: scalars, as: UTF8.self) : nil, true)
            case 0..<0x20:
                throw fail("control character in a string")
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end of JSON") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): scalars.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): scalars.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try parseHex4()
                    if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count,
                        bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                    {
                        index += 2
                        let low = try parseHex4()
                        if (0xDC00..<0xE000).contains(low) {
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            index -= 6  // not a pair: read the second escape on its own
                        }
                    }
                    let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
                    scalars.append(contentsOf: String(Character(scalar)).utf8)
                default:
                    throw fail("unknown escape")
                }
            default:
                scalars.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end of JSON") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: throw fail("bad \\u escape")
            }
            code = code << 4 | UInt32(nibble)
            index += 1
        }
        return code
    }
}

/// Number text → Double, shared by the JSON parser and the payload decoder.
enum NumberText {
    /// Converts ASCII number text (already checked for its shape by the caller, or checked here by
    /// `strtod`-like rules of `Double(_:)`) to a finite Double; nil when it overflows or isn't a number.
    static func double(ascii text: UnsafeBufferPointer<UInt8>) -> Double? {
        if let value = shortDecimal(text) { return value }
        // Double(Substring) parses decimal text with correct rounding; it also accepts "nan" and
        // "inf", which callers exclude by the shape they check first.
        guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else { return nil }
        return value
    }

    /// `-?digits(.digits)?` with at most 15 digits in all (what meters publish: `1234`, `-56.7`):
    /// the digits as an integer, exact in a Double below 2^53, divided by an exact power of ten,
    /// is the correctly rounded value (Clinger's fast path), without the String and the general
    /// parse that cost most of a payload's decoding. Nil for anything else: the general parse.
    static func shortDecimal(_ text: UnsafeBufferPointer<UInt8>) -> Double? {
        var index = 0
        let negative = !text.isEmpty && text[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        var digits: UInt64 = 0
        var count = 0
        var point: Int?
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: "."), point == nil, count > 0 {
                point = count
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), count < 15 {
                digits = digits * 10 + UInt64(byte - UInt8(ascii: "0"))
                count += 1
            } else {
                return nil
            }
            index += 1
        }
        let fractionDigits = point.map { count - $0 } ?? 0
        guard count > 0, point == nil || fractionDigits > 0 else { return nil }
        let magnitude = Double(digits) / powersOfTen[fractionDigits]
        return negative ? -magnitude : magnitude
    }

    /// 10^0 … 10^14, each exact in a Double.
    private static let powersOfTen: [Double] = (0..<15).map { exponent in (0..<exponent).reduce(1.0) { value, _ in value * 10 } }
}
