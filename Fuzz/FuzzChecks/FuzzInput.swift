/// Structured values drawn from a fuzzer's bytes, in the manner of libFuzzer's FuzzedDataProvider:
/// every byte sequence is a valid input, and a short one yields zeros and empty values, so a
/// mutation of a few bytes changes a few choices rather than making the input unreadable.
public struct FuzzInput {
    private let bytes: [UInt8]
    private var index = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isExhausted: Bool { index >= bytes.count }

    public mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    /// A number in `0..<count` (0 when `count` is 0).
    public mutating func below(_ count: Int) -> Int {
        guard count > 1 else { return 0 }
        let raw = count > 255 ? Int(byte()) << 8 | Int(byte()) : Int(byte())
        return raw % count
    }

    public mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }

    /// A finite Double: mostly values a meter or a widget writes (small integers, a few decimals,
    /// the sign flips and float32 noise), sometimes any finite bit pattern.
    public mutating func finiteDouble() -> Double {
        switch below(4) {
        case 0: return Double(Int(byte()) - 128)
        case 1: return Double(Int(byte()) << 8 | Int(byte())) / 10 - 3000
        case 2: return pick([0, -0.0, 0.1, 1e-9, 100, 20.43000030517578, -1400, 1e15, 1e300, -Double.leastNonzeroMagnitude])
        default:
            var pattern: UInt64 = 0
            for _ in 0..<8 { pattern = pattern << 8 | UInt64(byte()) }
            let value = Double(bitPattern: pattern)
            return value.isFinite ? value : 0
        }
    }

    /// Text: from `words` mostly (so that two drawn values often meet), else a few raw bytes read as
    /// UTF-8 (invalid sequences become U+FFFD, as the JSON parser makes them).
    public mutating func text(_ words: [String]) -> String {
        if below(4) != 0 { return pick(words) }
        let count = below(8)
        var raw: [UInt8] = []
        for _ in 0..<count { raw.append(byte()) }
        return String(decoding: raw, as: UTF8.self)
    }

    /// The bytes not drawn yet.
    public mutating func rest() -> [UInt8] {
        defer { index = bytes.count }
        return index < bytes.count ? Array(bytes[index...]) : []
    }
}
