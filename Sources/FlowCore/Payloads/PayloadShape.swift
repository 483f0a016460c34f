/// What a payload looks like, told from its bytes alone: the one judgement behind both the errors
/// that say which `format:`/`decode:` to set and `discover`'s suggestions, so the two never differ.
public enum PayloadShape: Sendable, Equatable {
    case empty
    /// A number as text (`612.4`).
    case number
    /// A JSON object or array.
    case json
    /// `key=value` pairs (`pwr=-1,soc=87`), with the keys in the order seen (at most 8).
    case keyValue(keys: [String])
    /// Bytes that are not text (control bytes, not UTF-8): a binary number when 2, 4 or 8 long.
    case binary(byteCount: Int)
    /// Any other text.
    case text

    public static func of(_ payload: [UInt8]) -> PayloadShape {
        if isBinary(payload) { return .binary(byteCount: payload.count) }
        let text = PayloadDecoder.trimmed(payload[...])
        guard let first = text.first else { return .empty }
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") { return .json }
        if PayloadDecoder.hasNumberShape(text) { return .number }
        let keys = pairKeys(text)
        return keys.isEmpty ? .text : .keyValue(keys: keys)
    }

    /// Control bytes other than tab, newline and carriage return (a trailing NUL is C's end of
    /// text, not binary), or bytes that are not UTF-8.
    static func isBinary(_ payload: [UInt8]) -> Bool {
        var body = payload[...]
        while body.last == 0 { body = body.dropLast() }
        if body.contains(where: { ($0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D) || $0 == 0x7F }) { return true }
        return String(validating: body, as: UTF8.self) == nil
    }

    /// The keys of `key=value` tokens when at least half the tokens (split at `,`, `;`, `&`, spaces
    /// and newlines) are such pairs with a key of letters, digits, `_`, `.` or `-`.
    static func pairKeys(_ text: ArraySlice<UInt8>) -> [String] {
        let tokens = text.split(whereSeparator: { [0x2C, 0x3B, 0x26, 0x20, 0x09, 0x0A, 0x0D].contains($0) })
        var keys: [String] = []
        var pairs = 0
        for token in tokens {
            guard let assign = token.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = token[..<assign]
            guard !key.isEmpty, key.allSatisfy(isKeyByte) else { continue }
            pairs += 1
            if keys.count < 8 { keys.append(String(decoding: key, as: UTF8.self)) }
        }
        return pairs > 0 && pairs * 2 >= tokens.count ? keys : []
    }

    static func isKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// The source keys that read a payload of this shape, for a message or a suggestion; nil when
    /// the default (a number as text) or `json:` already fits.
    public var suggestion: String? {
        switch self {
        case .keyValue(let keys):
            return "format: keyvalue, key: \(keys.first ?? "KEY")"
        case .binary(let count):
            let types: String = switch count {
            case 2: "int16 or uint16"
            case 4: "int32, uint32 or float32"
            case 8: "int64 or float64"
            default: "int16 … float64"
            }
            return "decode: \(types) (and byte_order: big or little)"
        case .empty, .number, .json, .text:
            return nil
        }
    }

    /// The error for a payload of this shape read as something else; nil when the shape says no
    /// more than the reader's own error.
    func error(payload: [UInt8]) -> PayloadError? {
        switch self {
        case .binary(let count):
            let hex = payload.prefix(8).map { byte in
                let digits = String(byte, radix: 16)
                return digits.count == 1 ? "0" + digits : digits
            }.joined()
            let kinds = count == 2 || count == 4 || count == 8 ? suggestion! : "decode: (a binary number is 2, 4 or 8 bytes)"
            return PayloadError(.binary, "the payload is binary (\(count) bytes: \(hex)\(count > 8 ? "…" : "")), not text; set \(kinds)")
        case .keyValue(let keys):
            return PayloadError(.keyValuePairs, "the payload is key=value pairs (keys \(keys.joined(separator: ", "))); set `format: keyvalue` and `key:` to the one that holds the number")
        case .empty, .number, .json, .text:
            return nil
        }
    }
}
