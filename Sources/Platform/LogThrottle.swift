import FoundationEssentials

/// Says a recurring problem once per interval per key (a disk that stays full, a publish that keeps
/// failing) instead of on every repeat; a problem that went away and comes back is said at once.
package struct LogThrottle {
    let intervalSeconds: Double
    private var lastSaid: [String: Date] = [:]

    package init(intervalSeconds: Double = 60) { self.intervalSeconds = intervalSeconds }

    /// True when the problem `key` is to be said now (and remembers that it was).
    package mutating func allows(_ key: String, at now: Date) -> Bool {
        if let last = lastSaid[key], now.timeIntervalSince(last) < intervalSeconds, now >= last { return false }
        lastSaid[key] = now
        return true
    }

    /// The problem went away: the next one is said at once.
    package mutating func clear(_ key: String) { lastSaid[key] = nil }
}
