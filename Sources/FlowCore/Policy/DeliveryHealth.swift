import FoundationEssentials

/// How a sink's deliveries went: counts by result, the last one (when, its result, what the
/// other side said), failures in a row (the retries of what waits). What the window shows of a
/// sink and counts in `/metrics`.
public struct DeliveryHealth: Sendable, Equatable {
    /// What became of one delivery, in the word the window and `/metrics` show. The cases are in
    /// the order of their words, the order in which they are listed.
    public enum Result: String, Sendable, CaseIterable {
        /// It went through.
        case delivered
        /// It could not be made (a network failure, 5xx, a write that failed): retried.
        case failed
        /// The other side refuses the sender (a token, a widget unknown): a configuration problem.
        case refused
        /// The other side refused the body (422): resent whole, never the same body again.
        case rejected
    }

    /// Deliveries per result, indexed by the result's place among `Result.allCases`: counted at
    /// every delivery, where a dictionary by word hashed the word each time.
    private var counts = [Int](repeating: 0, count: Result.allCases.count)
    public private(set) var lastAt: Date?
    public private(set) var lastResult: Result?
    /// What the other side said of the last delivery (a 422's reason), or why it failed.
    public private(set) var lastDetail: String?
    /// Failed deliveries since the last that went through: each one a retry of what waits.
    public private(set) var failuresInARow = 0
    /// Whether something waits to be delivered (a retry, a backoff).
    public var waiting = false

    public init() {}

    /// The results seen so far and how many of each, in the order of their words.
    public var results: [(result: Result, count: Int)] {
        Result.allCases.indices.compactMap { counts[$0] > 0 ? (Result.allCases[$0], counts[$0]) : nil }
    }

    /// Counts one delivery. `delivered` ends a run of failures.
    public mutating func record(_ result: Result, detail: String? = nil, at: Date) {
        counts[Result.allCases.firstIndex(of: result)!] += 1
        lastAt = at
        lastResult = result
        lastDetail = detail
        failuresInARow = result == .delivered ? 0 : failuresInARow + 1
    }
}
