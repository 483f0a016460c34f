import FoundationEssentials

/// One price a price source sent: in force from `from`, last confirmed at `heard`, and held for
/// the source's `stale_after` after that.
public struct PricePoint: Sendable, Equatable {
    public var from: Date
    public var heard: Date
    /// The base price per kWh, before fees and VAT.
    public var basePerKWh: Double
}

/// The price of one direction over time: what energy that flowed at any moment still being priced
/// is worth. A fixed price and a zone table answer from the config alone; a price source answers
/// from the prices it sent, kept back as far as an uncounted stretch of energy reaches (a counter
/// that reports every 70 minutes is priced over the 15-minute prices of those 70 minutes): a
/// schedule's slot where one covers the moment, else its latest single price while that holds.
public struct PriceTimeline: Sendable, Equatable {
    public let config: PriceConfig
    /// A price source's `stale_after`: how long a price holds without being sent again (nil: it
    /// holds until the next).
    let holdSeconds: Double?
    /// A price source's prices, oldest first.
    public internal(set) var points: [PricePoint] = []
    /// A schedule source's slots, each in force over its own times.
    public internal(set) var schedule = PriceSchedule()

    /// A source that sends a new price every 15 minutes keeps two days' worth at most, however
    /// long a counter stays silent: energy older than the oldest point kept is unpriced.
    static let maxPoints = 200

    public init(config: PriceConfig, holdSeconds: Double?) {
        self.config = config
        self.holdSeconds = holdSeconds
    }

    /// A price source's timeline over past prices known as a whole (a price list `history` is
    /// given): the schedule's slots, and no single price.
    public init(config: PriceConfig, schedule: PriceSchedule) {
        self.init(config: config, holdSeconds: nil)
        self.schedule = schedule
    }

    /// The price billed per kWh at `instant` (fees and VAT in); nil when unknown.
    public func price(at instant: Date, zone: any LocalTimeZone) -> Double? {
        basePrice(at: instant, zone: zone).map(config.billed)
    }

    func basePrice(at instant: Date, zone: any LocalTimeZone) -> Double? {
        switch config.base {
        case .fixed(let price): return price
        case .zones(let table): return table.zone(at: instant, in: zone).basePerKWh
        case .source: return schedule.slot(at: instant)?.basePerKWh ?? heldPoint(at: instant)?.basePerKWh
        }
    }

    /// A price source's price in force at `instant`, while it still holds.
    func heldPoint(at instant: Date) -> PricePoint? {
        guard let point = points.last(where: { $0.from <= instant }) else { return nil }
        if let holdSeconds, instant.timeIntervalSince(point.heard) >= holdSeconds { return nil }
        return point
    }

    /// The next instant after `instant` where the price may change; nil when it never does (as
    /// far as is known now).
    public func nextChange(after instant: Date, zone: any LocalTimeZone) -> Date? {
        switch config.base {
        case .fixed: return nil
        case .zones(let table): return table.nextChange(after: instant, in: zone)
        case .source:
            var next = points.first { $0.from > instant }?.from
            if let holdSeconds, let point = points.last(where: { $0.from <= instant }) {
                let end = point.heard.addingTimeInterval(holdSeconds)
                if end > instant, next.map({ end < $0 }) ?? true { next = end }
            }
            if let boundary = schedule.nextBoundary(after: instant), next.map({ boundary < $0 }) ?? true { next = boundary }
            return next
        }
    }

    /// Calls `body` for each stretch of `start..<end` with one price (nil: unknown), in order.
    public func forEachStretch(from start: Date, to end: Date, zone: any LocalTimeZone, _ body: (Date, Date, Double?) -> Void) {
        var at = start
        repeat {
            var next = min(nextChange(after: at, zone: zone) ?? end, end)
            if next <= at, at < end { next = end }  // never a stretch of no time inside the span
            body(at, next, price(at: at, zone: zone))
            at = next
        } while at < end
    }

    /// A price source sent `basePerKWh` at `now`: in force from now (the same price again only
    /// confirms it).
    mutating func take(_ basePerKWh: Double, at now: Date) {
        if let last = points.last, last.basePerKWh == basePerKWh, heldPoint(at: now) != nil {
            points[points.count - 1].heard = now
            return
        }
        points.append(PricePoint(from: now, heard: now, basePerKWh: basePerKWh))
        if points.count > Self.maxPoints { points.removeFirst(points.count - Self.maxPoints) }
    }

    /// A schedule source sent `slots` at `now` (see `PriceSchedule.take`).
    mutating func take(schedule slots: [PriceSlot], at now: Date) {
        schedule.take(slots, at: now)
    }

    /// The wall clock stepped by `seconds` without that time passing: the prices moved with it,
    /// so each holds for the time that really passed.
    mutating func shift(by seconds: Double) {
        for index in points.indices {
            points[index].from.addTimeInterval(seconds)
            points[index].heard.addTimeInterval(seconds)
        }
        // A schedule's slots are the feed's own times, not the stepped clock's: they stay.
    }

    /// Forgets the prices no stretch still to be priced can reach: those replaced before `horizon`.
    mutating func forget(before horizon: Date) {
        schedule.forget(before: horizon)
        guard let keep = points.lastIndex(where: { $0.from <= horizon }), keep > 0 else { return }
        points.removeFirst(keep)
    }

    /// Whether it holds a price no stretch after `now` needs: one a later price replaced, or a
    /// slot that ended. Only then is it worth asking where the pending stretches begin.
    func holdsPassedPrices(at now: Date) -> Bool {
        points.count > 1 || schedule.slots.first.map { $0.end <= now } ?? false
    }
}
