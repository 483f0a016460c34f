/// `map:`: words a device publishes for states that are numbers to the widget (`on: 1, off: 0`).
/// Compared without case, as devices differ (`ON`, `on`); a number is still read as a number.
public struct ValueMap: Sendable, Hashable {
    /// By lowercased word.
    public let values: [String: Double]

    public init(_ values: [String: Double]) {
        self.values = Dictionary(values.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    func value(for text: ArraySlice<UInt8>) -> Double? {
        values[String(decoding: text, as: UTF8.self).lowercased()]
    }

    /// The words, for messages.
    var words: String { values.keys.sorted().joined(separator: ", ") }
}
