import FoundationEssentials

/// How a message's reading is taken.
enum ReadingKind: Sendable, Equatable {
    /// Live: it counts for everything.
    case live
    /// The broker's retained copy, of unknown age: stale at once, never integrated.
    case retained
    /// Dated before the latest event: its rate may show, it counts no energy.
    case late
}

extension FlowEngine {
    /// What the engine knows of one source: its reading (per topic for `combine: sum`), whether it
    /// spoke at all, and what it sent that could not be read.
    struct SourceState: Sendable {
        /// No more topics than this per `combine: sum` source: a filter that matches more is a
        /// mistake (`#` on a busy broker), and the memory stays bounded.
        static let maxTopics = 64

        /// The source's config, behind one reference: it is read at every message, and a copy of
        /// its texts and arrays retained each of them.
        final class Setup: Sendable {
            let config: SourceConfig
            /// `direction:` with its sources by position: the reading is the magnitude signed by them.
            let direction: DirectionFrom<Int>?
            /// Read as a 0/1 flag by another source's `direction:`.
            let isFlag: Bool

            init(_ config: SourceConfig, direction: DirectionFrom<Int>?, isFlag: Bool) {
                self.config = config
                self.direction = direction
                self.isFlag = isFlag
            }

            /// A payload decoded by the source's decoder, in place: called through the config from
            /// outside (`setup.config.decoder.decode`), the decoder was copied for the call, a
            /// retain and a release of each of its parts at every message.
            func decode(_ payload: [UInt8]) -> DecodedPayload { config.decoder.decode(payload) }
        }

        let setup: Setup
        /// Lent, not returned: a field read through a getter copied the whole config first (a
        /// reading's way reads several).
        var config: SourceConfig { _read { yield setup.config } }
        /// The reading: the latest (`combine: latest`), or the sum of the topics' readings that
        /// were fresh at the latest of them (`combine: sum`): what `when_stale: hold` keeps showing.
        var reading: Reading?
        /// With `direction:`: the magnitude as read; `reading` is it with the direction's sign, nil
        /// while the direction is not known yet.
        var magnitude: Reading?
        /// `combine: sum`: the latest reading of each matching topic.
        var topics: [String: Reading] = [:]
        /// When a value last arrived (live or retained; a restored reading's own time): the stale
        /// marker and its "no reading since" count from here.
        var lastValueAt: Date?
        /// Any message at all since the start, even one that could not be read.
        var heard = false
        /// Warned about as silent since the subscription.
        var reportedSilent = false
        /// Said to have gone quiet (`Output.sourceSilent`) after sending values: the time of its
        /// last value then, until its next value.
        var silentSince: Date?
        var stats = SourceStats()
        var fieldWatch = FieldWatch()

        init(config: SourceConfig, direction: DirectionFrom<Int>? = nil, isFlag: Bool = false) {
            setup = Setup(config, direction: direction, isFlag: isFlag)
        }

        /// Whether a reading is stale at `now` for a source stale after `staleAfter` seconds.
        static func isStale(_ reading: Reading, at now: Date, after staleAfter: Double?) -> Bool {
            guard let staleAfter else { return false }
            return now.timeIntervalSince(reading.at) >= staleAfter
        }

        func isStale(_ reading: Reading, at now: Date) -> Bool { Self.isStale(reading, at: now, after: config.staleAfterSeconds) }

        /// The reading `topic` has now, for its source's kind.
        func current(_ topic: String) -> Reading? {
            config.combine == .sum ? topics[topic] : reading
        }

        /// Takes a decoded value from `topic`. Returns false when it changes nothing: a retained
        /// copy while a fresh reading exists (the broker re-sends it on every reconnect), or a late
        /// reading older than the one the source has.
        /// `dayStart`: where the local day began (see `recombine`).
        mutating func take(_ value: Double, topic: String, at now: Date, kind: ReadingKind, dayStart: Date?) -> Bool {
            var at = now
            switch kind {
            case .live:
                break
            case .retained:
                if let current = current(topic), !isStale(current, at: now) { return false }
                // Otherwise the copy may be hours old: stale at once.
                at = now.addingTimeInterval(-(config.staleAfterSeconds ?? 0))
            case .late:
                if let current = current(topic), current.at > now { return false }
            }
            stats.readings += 1
            lastValueAt = max(lastValueAt ?? now, now)
            if config.combine == .sum {
                topics[topic] = Reading(value: value, at: at)
                recombine(dayStart: dayStart)
            } else {
                reading = Reading(value: value, at: at)
            }
            return true
        }

        /// `combine: sum`: the reading from the topics, as of the latest of them. A topic's power or
        /// level leaves the sum once stale (an inverter asleep makes nothing). Its energy count
        /// stays in it through the local day that began at `dayStart` (an inverter asleep at dusk
        /// keeps its yield: dropped, the sum would read as a reset, and a daily counter's reset
        /// would count the others' yield of the day twice), and leaves it on a later day (a daily
        /// count of yesterday is none of today's, and would hide the others' reset at midnight).
        mutating func recombine(dayStart: Date?) {
            guard let latest = topics.values.map(\.at).max() else {
                reading = nil
                return
            }
            let staleAfter = config.staleAfterSeconds ?? .infinity
            let counts = config.unit.quantity == .energy
            var sum = 0.0
            for part in topics.values where counts ? dayStart.map({ part.at >= $0 }) ?? true : latest.timeIntervalSince(part.at) < staleAfter {
                sum += part.value
            }
            reading = Reading(value: sum, at: latest)
        }

        /// The wall clock stepped by `seconds` without that time passing: ages count what really passed.
        mutating func shift(by seconds: Double) {
            reading?.at.addTimeInterval(seconds)
            magnitude?.at.addTimeInterval(seconds)
            for topic in topics.keys { topics[topic]?.at.addTimeInterval(seconds) }
            lastValueAt?.addTimeInterval(seconds)
            silentSince?.addTimeInterval(seconds)
            fieldWatch.shift(by: seconds)
        }

        /// Takes over what the same source of a replaced engine knew of the connection.
        mutating func adoptSession(from old: SourceState) {
            heard = old.heard
            reportedSilent = old.reportedSilent
            silentSince = old.silentSince
            if let reading, let heardAt = old.lastValueAt, heardAt > reading.at { lastValueAt = heardAt }
        }
    }
}

/// How many messages of a source lack its `json:` field. A topic that carries several kinds of
/// messages (Shelly's `events/rpc`) lacks it most of the time, which is no warning per message:
/// a summary with counts a minute after the first, then at most one an hour.
struct FieldWatch: Sendable {
    static let firstSummarySeconds = 60.0
    static let summarySeconds = 3600.0

    private(set) var since: Date?
    private var messages = 0
    private var missing = 0
    private var summaries = 0

    /// Counts one message. Returns the counts of the window that just ended when a summary is due.
    mutating func count(missing lacksField: Bool, at now: Date) -> (messages: Int, missing: Int, since: Date)? {
        guard let start = since, now >= start else {
            restart(at: now)
            tally(lacksField)
            return nil
        }
        tally(lacksField)
        guard now.timeIntervalSince(start) >= (summaries == 0 ? Self.firstSummarySeconds : Self.summarySeconds) else { return nil }
        defer { restart(at: now) }
        guard missing > 0 else { return nil }
        summaries += 1
        return (messages, missing, start)
    }

    private mutating func tally(_ lacksField: Bool) {
        messages += 1
        if lacksField { missing += 1 }
    }

    private mutating func restart(at now: Date) {
        since = now
        messages = 0
        missing = 0
    }

    mutating func shift(by seconds: Double) { since?.addTimeInterval(seconds) }
}
