/// An MQTT topic filter, checked when it is made: `+` fills a whole level, `#` only the last one.
public struct TopicFilter: Sendable, Hashable, CustomStringConvertible {
    public let description: String
    let levels: [Substring]
    /// True when the filter has no wildcard, so matching is a string comparison.
    public let isExact: Bool

    public struct InvalidFilter: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public init(_ text: String) throws(InvalidFilter) {
        guard !text.isEmpty else { throw InvalidFilter(description: "a topic filter must not be empty") }
        let shown = PrintableText.escaped(text)
        if let refused = Self.refusedCharacter(in: text) {
            throw InvalidFilter(description: "topic filter '\(shown)' holds \(refused), which MQTT refuses in a topic (a control character or a noncharacter)")
        }
        guard text.utf8.count <= 65_535 else {
            throw InvalidFilter(description: "topic filter of \(text.utf8.count) bytes is too long (MQTT allows 65,535)")
        }
        let levels = text.split(separator: "/", omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            if level.contains("+"), level != "+" {
                throw InvalidFilter(description: "topic filter '\(shown)': '+' must fill a whole level")
            }
            if level.contains("#"), level != "#" || index != levels.count - 1 {
                throw InvalidFilter(description: "topic filter '\(shown)': '#' must be the whole last level")
            }
        }
        description = text
        self.levels = levels
        isExact = !text.contains("+") && !text.contains("#")
    }

    /// The first character of `text` a broker refuses in a topic, escaped (`\u0009`), or nil: NUL
    /// and the other C0 controls, DEL and the C1 controls, and Unicode's noncharacters (MQTT 3.1.1
    /// §1.5.3, as libmosquitto checks a topic before it sends one). One such filter fails the whole
    /// SUBSCRIBE, every source's topic with it; for filters, and for the names the sinks make
    /// topics of.
    public static func refusedCharacter(in text: some StringProtocol) -> String? {
        text.unicodeScalars.first { $0.properties.generalCategory == .control || $0.properties.isNoncharacterCodePoint }
            .map { PrintableText.escaped(String($0)) }
    }

    /// MQTT 3.1.1 §4.7: wildcards match whole levels, `#` also its parent level, and a filter that
    /// starts with a wildcard does not match topics that start with `$`.
    public func matches(_ topic: String) -> Bool {
        if isExact { return topic == description }
        if topic.hasPrefix("$"), levels.first == "+" || levels.first == "#" { return false }
        var remaining = topic.split(separator: "/", omittingEmptySubsequences: false)[...]
        for level in levels {
            if level == "#" { return true }
            guard let head = remaining.popFirst() else { return false }
            if level != "+", level != head { return false }
        }
        return remaining.isEmpty
    }
}
