/// `format: keyvalue`: a number under `key` in text such as `pwr=-1,soc=87` (DESIGN §1.1).
public struct KeyValueFormat: Sendable, Hashable {
    public var key: String
    /// What ends a pair; by default any of `,`, `;` and a newline.
    public var separators: [[UInt8]]
    /// What stands between a key and its value; `=` by default.
    public var assign: [UInt8]

    public static let defaultSeparators: [[UInt8]] = [[0x2C], [0x3B], [0x0A]]

    public init(key: String, separator: String? = nil, assign: String = "=") {
        self.key = key
        separators = separator.map { [Array($0.utf8)] } ?? Self.defaultSeparators
        self.assign = Array(assign.utf8)
    }

    /// What a payload holds under the key.
    enum Lookup: Equatable {
        case value(ArraySlice<UInt8>)
        /// No such key; the keys there are (at most 8), empty when there are no pairs at all.
        case missing(keys: [String])
    }

    /// The value of the first pair with the key, trimmed.
    func lookup(in payload: [UInt8]) -> Lookup {
        let wanted = Array(key.utf8)
        var keys: [String] = []
        var start = payload.startIndex
        var index = start
        func pair(_ range: Range<Int>) -> ArraySlice<UInt8>? {
            let pair = payload[range]
            guard let assignAt = Self.find(assign, in: pair) else { return nil }
            let name = PayloadDecoder.trimmed(pair[..<assignAt])
            if name.elementsEqual(wanted) { return PayloadDecoder.trimmed(pair[(assignAt + assign.count)...]) }
            if keys.count < 8, !name.isEmpty { keys.append(String(decoding: name, as: UTF8.self)) }
            return nil
        }
        while index < payload.endIndex {
            if let separator = separators.first(where: { Self.starts(with: $0, in: payload, at: index) }) {
                if let value = pair(start..<index) { return .value(value) }
                index += separator.count
                start = index
            } else {
                index += 1
            }
        }
        if let value = pair(start..<payload.endIndex) { return .value(value) }
        return .missing(keys: keys)
    }

    static func starts(with needle: [UInt8], in bytes: [UInt8], at index: Int) -> Bool {
        !needle.isEmpty && index + needle.count <= bytes.endIndex && bytes[index..<(index + needle.count)].elementsEqual(needle)
    }

    static func find(_ needle: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count else { return nil }
        var index = bytes.startIndex
        while index + needle.count <= bytes.endIndex {
            if bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    /// The number under the key, read as plain text is (units of the source, `decimal_comma`, `map:`).
    func decode(_ payload: [UInt8], with decoder: PayloadDecoder) -> DecodedPayload {
        if PayloadShape.isBinary(payload), let error = PayloadShape.of(payload).error(payload: payload) { return .invalid(error) }
        switch lookup(in: payload) {
        case .value(var value):
            if value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") {
                value = value.dropFirst().dropLast()
            }
            return decoder.number(in: value, quoted: false)
        case .missing(let keys) where keys.isEmpty:
            return .invalid(PayloadError(.missingKey, "no key=value pairs in '\(PayloadDecoder.excerpt(payload))'; `format: keyvalue` reads pairs such as \(key)\(String(decoding: assign, as: UTF8.self))1200"))
        case .missing(let keys):
            return .invalid(PayloadError(.missingKey, "no key '\(key)' in the payload (keys seen: \(keys.joined(separator: ", "))); set `key:` to the one that holds the number"))
        }
    }
}
