/// Why a payload gave no number: one named kind per thing the user changes, with the text that
/// says what to change. The kind is what `check --listen` counts; the text is the log line.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Text that is not a number (`abc`, `12 W`, a decimal comma without `decimal_comma`).
        case notANumber = "not a number"
        /// A number beyond what a Double holds.
        case outOfRange = "out of range"
        /// JSON where a number was expected, or not JSON where `json:` expects it.
        case json = "json"
        /// Bytes that are not text: a raw binary number without `decode:`.
        case binary = "binary payload"
        /// `key=value` pairs without `format: keyvalue`.
        case keyValuePairs = "key=value payload"
        /// `format: keyvalue` and the payload lacks the key.
        case missingKey = "missing key"
        /// `regex:` found nothing in the payload.
        case noMatch = "regex does not match"
        /// `regex:` and a payload longer than a pattern is matched against.
        case tooLongForRegex = "too long for the regex"
        /// `decode:` and a payload of another length.
        case wrongLength = "wrong length"
        /// `hex: true` and text that is not hex digits.
        case notHex = "not hex"
        /// A decoded float that is infinite.
        case notFinite = "not finite"
        /// `sign:` and the message has no direction field.
        case missingSign = "missing sign field"
        /// `sign:` and the direction field holds a value that is in neither list.
        case unknownSign = "unknown sign value"
        /// `map:` and a word that is not in it.
        case unmapped = "not in the map"
        /// `schedule:` and a payload that is no list of slots, or a list that cannot be right
        /// (overlapping slots, a slot that ends before it starts, a time without a zone).
        case schedule = "not a schedule"
    }

    public var kind: Kind
    /// What was wrong and what to change, for the log line.
    public var description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
