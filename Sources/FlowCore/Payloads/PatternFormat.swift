/// `regex:`: the number is what one capture group of a pattern reaches in the payload's text (a
/// number inside a sentence). The pattern is compiled once, when the config is read.
public struct PatternFormat: @unchecked Sendable, Hashable {
    /// The pattern as written, for messages and equality (a compiled `Regex` has neither).
    public let pattern: String
    // `Regex` is immutable once made; it is only matched, never changed, so sharing it is safe.
    let regex: Regex<(Substring, Substring)>

    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public init(_ pattern: String) throws(SyntaxError) {
        self.pattern = pattern
        let compiled: Regex<AnyRegexOutput>
        do { compiled = try Regex(pattern) } catch {
            throw SyntaxError(description: "the regex '\(pattern)' does not compile: \(error)")
        }
        guard let typed = Regex<(Substring, Substring)>(compiled) else {
            throw SyntaxError(description: "the regex '\(pattern)' needs exactly one capture group ( … ) around the number, not optional (write (?: … ) for groups that only group)")
        }
        regex = typed
    }

    public static func == (lhs: PatternFormat, rhs: PatternFormat) -> Bool { lhs.pattern == rhs.pattern }
    public func hash(into hasher: inout Hasher) { hasher.combine(pattern) }

    func decode(_ payload: [UInt8], with decoder: PayloadDecoder) -> DecodedPayload {
        if PayloadShape.isBinary(payload), let error = PayloadShape.of(payload).error(payload: payload) { return .invalid(error) }
        let text = String(decoding: payload, as: UTF8.self)
        guard let match = try? regex.firstMatch(in: text) else {
            return .invalid(PayloadError(.noMatch, "the regex '\(pattern)' does not match the payload '\(PayloadDecoder.excerpt(payload))'"))
        }
        return decoder.number(in: Array(match.output.1.utf8)[...], quoted: false)
    }
}
