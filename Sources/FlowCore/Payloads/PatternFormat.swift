/// `regex:`: the number is what one capture group of a pattern reaches in the payload's text (a
/// number inside a sentence). The pattern is compiled once, when the config is read.
///
/// Matching is bounded: a payload longer than `maxInputBytes` is refused unread, because a match
/// can cost the square of the text's length (a pattern that fails at every start: `([0-9.]+) W`
/// against 64 KiB of digits did not finish in 40 s, and nothing else ran meanwhile). A pattern
/// that repeats a repetition (`^(\d+)+$`) costs more still, exponential in the length of a text
/// that nearly matches: `nestedRepetition` names it, and `check` warns of it.
public struct PatternFormat: @unchecked Sendable, Hashable {
    /// The pattern as written, for messages and equality (a compiled `Regex` has neither).
    public let pattern: String
    /// The compiled pattern, behind a reference. `Regex` comes from a library built for evolution,
    /// whose types' layout is known only when the program runs: held in place, it made every type
    /// around it (the decoder, each source's config and state, the engine) one whose every copy and
    /// field went through the runtime's metadata, at every message, for every source.
    private let compiled: Compiled
    var regex: Regex<(Substring, Substring)> { compiled.regex }

    // `Regex` is immutable once made; it is only matched, never changed, so sharing it is safe.
    private final class Compiled: @unchecked Sendable {
        let regex: Regex<(Substring, Substring)>
        init(_ regex: Regex<(Substring, Substring)>) { self.regex = regex }
    }

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
        self.compiled = Compiled(typed)
    }

    /// The longest payload a pattern is matched against. A sentence with a number in it is short;
    /// the square of 1 KiB is a millisecond's work, of 64 KiB a minute's.
    public static let maxInputBytes = 1024

    /// The first group of the pattern that is repeated and repeats inside (`(\d+)+`, `(a*)*`,
    /// `(?:x+){2,}`), as written; nil when there is none.
    public var nestedRepetition: String? { Self.nestedRepetition(in: pattern) }

    /// Scans the pattern's text: escapes (`\+`) and character classes (`[+*]`) repeat nothing; a
    /// group's content repeats when it holds `+`, `*` or `{n,}`; the group is repeated when one of
    /// those (or `{n,m}` with m > 1) follows its `)`.
    package static func nestedRepetition(in pattern: String) -> String? {
        let characters = Array(pattern)
        var groups: [(start: Int, repeats: Bool)] = []
        var index = 0
        func repeatsAfter(_ position: Int) -> Bool {
            guard position < characters.count else { return false }
            switch characters[position] {
            case "+", "*": return true
            case "{":
                guard let close = characters[position...].firstIndex(of: "}") else { return false }
                let bounds = String(characters[(position + 1)..<close]).split(separator: ",", omittingEmptySubsequences: false)
                return bounds.count == 2 && (bounds[1].isEmpty || (Int(bounds[1]) ?? 0) > 1) || bounds.count == 1 && (Int(bounds[0]) ?? 0) > 1
            default: return false
            }
        }
        while index < characters.count {
            switch characters[index] {
            case "\\":
                index += 1
            case "[":
                index += 1
                if index < characters.count, characters[index] == "^" { index += 1 }
                if index < characters.count, characters[index] == "]" { index += 1 }
                while index < characters.count, characters[index] != "]" {
                    if characters[index] == "\\" { index += 1 }
                    index += 1
                }
            case "(":
                groups.append((index, false))
            case ")":
                guard let group = groups.popLast() else { break }
                let repeated = repeatsAfter(index + 1)
                if group.repeats, repeated { return String(characters[group.start...index]) + String(characters[index + 1]) }
                // A group that repeats inside, or is repeated, makes the group around it repeat.
                if group.repeats || repeated, !groups.isEmpty { groups[groups.count - 1].repeats = true }
            case "+", "*", "{":
                if repeatsAfter(index), !groups.isEmpty { groups[groups.count - 1].repeats = true }
            default:
                break
            }
            index += 1
        }
        return nil
    }

    public static func == (lhs: PatternFormat, rhs: PatternFormat) -> Bool { lhs.pattern == rhs.pattern }
    public func hash(into hasher: inout Hasher) { hasher.combine(pattern) }

    func decode(_ payload: [UInt8], with decoder: PayloadDecoder) -> DecodedPayload {
        guard payload.count <= Self.maxInputBytes else {
            return .invalid(PayloadError(
                .tooLongForRegex, "a payload of \(payload.count) bytes is longer than a regex source matches (\(Self.maxInputBytes) bytes); not read"))
        }
        if PayloadShape.isBinary(payload), let error = PayloadShape.of(payload).error(payload: payload) { return .invalid(error) }
        let text = String(decoding: payload, as: UTF8.self)
        guard let match = try? regex.firstMatch(in: text) else {
            return .invalid(PayloadError(.noMatch, "the regex '\(pattern)' does not match the payload '\(PayloadDecoder.excerpt(payload))'"))
        }
        return decoder.number(in: Array(match.output.1.utf8)[...], quoted: false)
    }
}
