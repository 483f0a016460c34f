/// `decode:`: a binary number, sent raw or as hex text (`hex: true`), as Modbus bridges and small
/// radios publish them. The payload must be exactly the type's width: any other length is a
/// named error, never a number made of some of the bytes.
public struct BinaryNumberFormat: Sendable, Hashable {
    public enum NumberType: String, Sendable, Hashable, CaseIterable {
        case int16, uint16, int32, uint32, int64, float32, float64

        public var byteCount: Int {
            switch self {
            case .int16, .uint16: 2
            case .int32, .uint32, .float32: 4
            case .int64, .float64: 8
            }
        }
    }

    public enum ByteOrder: String, Sendable, Hashable, CaseIterable {
        /// Most significant byte first: network order, the default.
        case big
        case little
    }

    public var type: NumberType
    public var byteOrder: ByteOrder
    /// The payload is the bytes as hex text (`08a1`, `0x08A1`), not the bytes themselves.
    public var hex: Bool

    public init(_ type: NumberType, byteOrder: ByteOrder = .big, hex: Bool = false) {
        self.type = type
        self.byteOrder = byteOrder
        self.hex = hex
    }

    public func decode(_ payload: [UInt8]) -> DecodedPayload {
        var bytes = payload[...]
        if hex {
            let text = PayloadDecoder.trimmed(payload[...])
            guard let parsed = Self.hexBytes(text) else {
                return .invalid(PayloadError(.notHex, "'\(PayloadDecoder.excerpt(Array(text)))' is not hex text (pairs of 0-9, a-f); `hex: true` reads e.g. 08a1 for an int16"))
            }
            bytes = parsed[...]
        }
        guard bytes.count == type.byteCount else {
            let what = hex ? "hex text of \(bytes.count) bytes" : "a payload of \(bytes.count) bytes"
            let article = type.rawValue.hasPrefix("i") ? "an" : "a"
            return .invalid(PayloadError(.wrongLength, "\(what) is not \(article) \(type.rawValue) (\(type.byteCount) bytes); check `decode:`\(hex ? "" : " (or `hex: true` for hex text)")"))
        }
        var bits: UInt64 = 0
        for byte in byteOrder == .big ? Array(bytes) : bytes.reversed() { bits = bits << 8 | UInt64(byte) }
        let value: Double = switch type {
        case .int16: Double(Int16(truncatingIfNeeded: bits))
        case .uint16: Double(UInt16(truncatingIfNeeded: bits))
        case .int32: Double(Int32(truncatingIfNeeded: bits))
        case .uint32: Double(UInt32(truncatingIfNeeded: bits))
        case .int64: Double(Int64(bitPattern: bits))
        case .float32: Double(Float(bitPattern: UInt32(truncatingIfNeeded: bits)))
        case .float64: Double(bitPattern: bits)
        }
        // A float NaN is how such devices say "no value"; an infinity is a broken reading.
        if value.isNaN { return .noReading }
        guard value.isFinite else { return .invalid(PayloadError(.notFinite, "the \(type.rawValue) is \(value > 0 ? "+" : "-")infinity, not a reading")) }
        return .value(value + 0.0)
    }

    /// `08a1`, `08A1`, `0x08a1`; nil for anything else (odd length, other characters).
    static func hexBytes(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var digits = text
        if digits.count >= 2, digits.first == UInt8(ascii: "0"), digits.dropFirst().first.map({ $0 | 0x20 }) == UInt8(ascii: "x") {
            digits = digits.dropFirst(2)
        }
        guard !digits.isEmpty, digits.count % 2 == 0 else { return nil }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
