import FoundationEssentials

/// A message for the log, produced by the core (which never logs itself).
public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    public enum Level: String, Sendable, Comparable {
        case debug, info, warning, error

        var rank: Int { [.debug, .info, .warning, .error].firstIndex(of: self)! }
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    public var level: Level
    public var message: String

    public init(_ level: Level, _ message: String) {
        self.level = level
        self.message = message
    }

    public var description: String { "\(level): \(message)" }
}

/// Keeps bad input from flooding the log: per key (a source and a kind of problem), the first
/// message goes out, then at most one per `interval`, saying how many were held back.
struct DiagnosticLimiter: Sendable {
    var interval: Double = 60
    private var windows: [String: (openedAt: Date, suppressed: Int)] = [:]

    mutating func admit(_ key: String, at now: Date, _ diagnostic: () -> Diagnostic) -> Diagnostic? {
        if let window = windows[key], now >= window.openedAt, now.timeIntervalSince(window.openedAt) < interval {
            windows[key]!.suppressed += 1
            return nil
        }
        let suppressed = windows[key]?.suppressed ?? 0
        windows[key] = (now, 0)
        var message = diagnostic()
        if suppressed > 0 { message.message += " (\(suppressed) more like this since the last report)" }
        return message
    }
}
