import FoundationEssentials

/// Which event times the engine believes.
///
/// Clocks jump: NTP steps a clock back, a device without a real-time clock starts in 1970, a
/// recorded trace holds a line out of order or one dated tomorrow. Taken at face value, a step back
/// counts the same energy twice, and one line from tomorrow closes today and loses its totals. So
/// a time before the latest event taken is *late* (its reading may show, it counts no energy and
/// moves no day), and a time far ahead on a later local day is held *ahead* and ignored. Either
/// becomes the new timeline only when a later event confirms it: the clock really moved. An event
/// less than `simultaneousSeconds` before the latest is simultaneous with it: the daemon's message
/// and tick threads read the clock a moment apart.
///
/// A time far back before the day in progress began is an *excursion*: a bad NTP answer, or a
/// machine without a real-time clock booting with an old time, that NTP soon corrects. Believed at
/// the next event, it would move the day back, and the clock's return would then close that
/// earlier day with today's totals. So an excursion stays late until its events have spanned
/// `excursionHoldSeconds`: long enough for NTP to answer, short enough that a clock that really was
/// ahead (and is now right) loses at most that long of counting.
struct EventTimeline: Sendable, Equatable {
    static let simultaneousSeconds = 1.0
    static let excursionHoldSeconds = 3600.0

    /// The latest event time taken; nil before the first event (a start believes its first event).
    private(set) var latest: Date?
    /// A time off the timeline (late, or ahead), waiting for a later event to confirm it.
    private(set) var offTimeline: Date?

    enum Verdict: Equatable {
        /// On the timeline: taken.
        case onTime
        /// Before the latest event, or in an excursion: its reading may show; it counts no energy
        /// and moves no day.
        case late
        /// Far ahead, on a later local day: ignored until a later event confirms it. `first` is
        /// true for the first event at this time (the one to log).
        case ahead(first: Bool)
        /// A later event confirmed the time off the timeline: the clock moved from `from`.
        case stepped(from: Date)
    }

    /// Whether `time` is an excursion: before the start of `day` (the day in progress), and more
    /// than `jumpSeconds` before the latest event (or the day's start, before any event: a restored
    /// day). A shorter step back across midnight is a clock that ran ahead a little, confirmed
    /// like any step back.
    func isExcursion(_ time: Date, day: LocalDay?, jumpSeconds: Double) -> Bool {
        guard let day, time < day.start else { return false }
        return (latest ?? day.start).timeIntervalSince(time) > jumpSeconds
    }

    /// Where `time` stands in `day` (the current local day); a jump further than `jumpSeconds`
    /// across its end is a date change that needs confirming, a shorter one is midnight.
    func classify(_ time: Date, day: LocalDay?, jumpSeconds: Double) -> Verdict {
        if isExcursion(time, day: day, jumpSeconds: jumpSeconds), let day {
            guard let suspect = offTimeline, suspect < day.start, time.timeIntervalSince(suspect) >= Self.excursionHoldSeconds else {
                return .late
            }
            return .stepped(from: latest ?? day.start)
        }
        guard let latest else { return .onTime }
        let isLate = time < latest.addingTimeInterval(-Self.simultaneousSeconds)
        if let suspect = offTimeline, time > suspect, suspect > latest || isLate {
            return .stepped(from: latest)
        }
        if isLate { return .late }
        if let dayEnd = day?.end, time >= dayEnd, time.timeIntervalSince(latest) > jumpSeconds {
            return .ahead(first: offTimeline != time)
        }
        return .onTime
    }

    /// The time to take an event at: an event on time a moment before the latest is taken as of
    /// the latest, so that time never runs back within the engine.
    func effectiveTime(_ time: Date, _ verdict: Verdict) -> Date {
        guard verdict == .onTime, let latest else { return time }
        return max(latest, time)
    }

    /// Records an event at `time` with its verdict.
    mutating func take(_ time: Date, _ verdict: Verdict) {
        switch verdict {
        case .onTime:
            latest = effectiveTime(time, verdict)
            offTimeline = nil
        case .stepped:
            latest = time
            offTimeline = nil
        case .ahead:
            offTimeline = time
        case .late:
            // Keep the earliest late time: the next later one (still before `latest`) confirms it.
            if let suspect = offTimeline, latest.map({ suspect < $0 }) ?? true, suspect <= time { return }
            offTimeline = time
        }
    }

    /// The clock stepped to `time` (the daemon saw it against its monotonic clock): believed at once.
    mutating func reset(to time: Date) {
        latest = time
        offTimeline = nil
    }
}
