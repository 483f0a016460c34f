import FoundationEssentials

/// A payload a source did not read, and why: what `check --listen` counts by kind, and what a
/// status page can show, without decoding the payload again.
public struct Refusal: Sendable, Equatable {
    public enum Reason: Sendable, Equatable {
        /// Beyond the source's `max_payload`: counted, never parsed.
        case oversized(bytes: Int, maxBytes: Int)
        /// The payload held no number the source's format reads.
        case undecodable(PayloadError)
        /// A number no device of the source's kind sends (beyond `max_power`, a level outside
        /// 0…100): the text says which limit and what it suggests.
        case implausible(String)
        /// A `combine: sum` source already reads its most topics; this one is left out.
        case tooManyTopics(max: Int)
    }

    public var source: String
    /// The topic the payload came on.
    public var topic: String
    public var at: Date
    public var reason: Reason

    public init(source: String, topic: String, at: Date, reason: Reason) {
        self.source = source
        self.topic = topic
        self.at = at
        self.reason = reason
    }

    /// Whether the source counts it as rejected (`SourceStats.rejected`): a payload it read and
    /// could not use, as opposed to one it never parsed or left out.
    public var isRejection: Bool {
        switch reason {
        case .undecodable, .implausible: true
        case .oversized, .tooManyTopics: false
        }
    }
}

/// A source that had been sending values went quiet for its `stale_after`, or spoke again: the
/// widget grays or recovers the nodes it feeds, and the log must say so too (under a container
/// there is no other trace of it).
public struct SourceSilence: Sendable, Equatable {
    public var source: String
    /// The source's topic (its filter, for a wildcard).
    public var topic: String
    /// When its last value before the silence came.
    public var lastValueAt: Date
    /// When the silence was noticed, or ended.
    public var at: Date

    public init(source: String, topic: String, lastValueAt: Date, at: Date) {
        self.source = source
        self.topic = topic
        self.lastValueAt = lastValueAt
        self.at = at
    }

    /// How long the source had been quiet at `at`.
    public var silentSeconds: Double { at.timeIntervalSince(lastValueAt) }
}
