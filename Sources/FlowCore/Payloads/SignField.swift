/// `sign:`: a magnitude whose direction is another field of the same JSON message (`"power": 2145,
/// "flow": "producing"`). The reading is the magnitude, negative when the field holds one of
/// `negative` (or, given `positive` only, any value not in it). With both lists, a value in neither
/// is an error; so is a message without the field: a guess would count export as import.
public struct SignField: Sendable, Hashable {
    public var path: JSONPath
    /// The values, as text (numbers as JSON writes them, `true`/`false`), that mean negative.
    public var negative: Set<String>?
    /// The values that mean positive.
    public var positive: Set<String>?

    public init(path: JSONPath, negative: Set<String>? = nil, positive: Set<String>? = nil) {
        self.path = path
        self.negative = negative
        self.positive = positive
    }

    /// The magnitude with the direction `payload` gives it.
    func apply(_ magnitude: Double, to payload: ArraySlice<UInt8>) -> DecodedPayload {
        let found = try? payload.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            var parser = JSONParser(bytes: buffer)
            return try parser.scanDocument(path.steps[...])
        }
        let text: String
        switch found {
        case .text(let value): text = value
        case .number(let value): text = JSONValue.format(value)
        case .bool(let value): text = value ? "true" : "false"
        case .null, .missing, .mismatch, nil:
            return .invalid(PayloadError(.missingSign, "no direction field \(path) in the message; reading ignored (`sign:` never guesses the direction)"))
        case .other(let kind):
            return .invalid(PayloadError(.missingSign, "the direction field \(path) is \(kind), not a text or a number"))
        }
        let isNegative: Bool
        if let negative, negative.contains(text) {
            isNegative = true
        } else if let positive, positive.contains(text) {
            isNegative = false
        } else if negative == nil || positive == nil {
            isNegative = negative == nil
        } else {
            let known = (negative ?? []).union(positive ?? []).sorted().joined(separator: ", ")
            return .invalid(PayloadError(.unknownSign, "the direction field \(path) is '\(text)', in neither `negative:` nor `positive:` (\(known)); add it to one"))
        }
        return .value((isNegative ? -abs(magnitude) : abs(magnitude)) + 0.0)
    }
}
