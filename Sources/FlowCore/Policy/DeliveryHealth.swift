import FoundationEssentials

/// How a sink's deliveries went: counts by result (`delivered`, `rejected`, `refused`, `failed`),
/// the last one (when, its result, what the other side said), failures in a row (the retries of
/// what waits). What the window shows of a sink and counts in `/metrics`.
public struct DeliveryHealth: Sendable, Equatable {
    /// Deliveries by result word.
    public private(set) var results: [String: Int] = [:]
    public private(set) var lastAt: Date?
    public private(set) var lastResult: String?
    /// What the other side said of the last delivery (a 422's reason), or why it failed.
    public private(set) var lastDetail: String?
    /// Failed deliveries since the last that went through: each one a retry of what waits.
    public private(set) var failuresInARow = 0
    /// Whether something waits to be delivered (a retry, a backoff).
    public var waiting = false

    public init() {}

    /// Counts one delivery. `delivered` ends a run of failures.
    public mutating func record(_ result: String, detail: String? = nil, at: Date) {
        results[result, default: 0] += 1
        lastAt = at
        lastResult = result
        lastDetail = detail
        failuresInARow = result == Self.delivered ? 0 : failuresInARow + 1
    }

    public static let delivered = "delivered"
    public static let failed = "failed"
}
