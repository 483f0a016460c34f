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
        guard text.utf8.count <= 65_535, !text.utf8.contains(0) else {
            throw InvalidFilter(description: "topic filter '\(text)' is too long or holds a NUL")
        }
        let levels = text.split(separator: "/", omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            if level.contains("+"), level != "+" {
                throw InvalidFilter(description: "topic filter '\(text)': '+' must fill a whole level")
            }
            if level.contains("#"), level != "#" || index != levels.count - 1 {
                throw InvalidFilter(description: "topic filter '\(text)': '#' must be the whole last level")
            }
        }
        description = text
        self.levels = levels
        isExact = !text.contains("+") && !text.contains("#")
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
