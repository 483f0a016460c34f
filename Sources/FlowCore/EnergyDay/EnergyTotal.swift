import FoundationEssentials

/// A rate at an instant: one end of an integration segment.
public struct RateSample: Sendable, Equatable {
    public var at: Date
    public var rateW: Double

    public init(at: Date, rateW: Double) {
        self.at = at
        self.rateW = rateW
    }
}

/// Energy a total has just counted and the stretch of time it flowed in: what a price applies to,
/// stretch by stretch, when the price changed within it. An integrated segment's rate moved in a
/// line from `startRateW` to `endRateW` (the total's direction applied: only its positive part is
/// energy); a counter's rise has no rates and is spread evenly over the time since its last reading.
public struct EnergySpan: Sendable, Equatable {
    public var start: Date
    public var end: Date
    public var energyKWh: Double
    public var startRateW: Double?
    public var endRateW: Double?

    public init(start: Date, end: Date, energyKWh: Double, startRateW: Double? = nil, endRateW: Double? = nil) {
        self.start = start
        self.end = end
        self.energyKWh = energyKWh
        self.startRateW = startRateW
        self.endRateW = endRateW
    }

    /// The part of the energy that flowed in `from..<to` (within the span): the shares of
    /// stretches that cover the span add up to `energyKWh`. A span of no time (a counter's rise
    /// between two readings with one timestamp) is all in the stretch that holds its instant, the
    /// stretch of no time at that instant included: its energy is priced like any other.
    public func energyKWh(from: Date, to: Date) -> Double {
        let seconds = end.timeIntervalSince(start)
        guard seconds > 0 else { return from <= start && (start < to || from == to) ? energyKWh : 0 }
        let a = max(from, start).timeIntervalSince(start)
        let b = min(to, end).timeIntervalSince(start)
        guard b > a else { return 0 }
        guard let r0 = startRateW, let r1 = endRateW else { return energyKWh * (b - a) / seconds }
        let whole = EnergyTotal.positivePart(from: r0, to: r1, seconds: seconds)
        guard whole > 0 else { return 0 }
        func rate(_ t: Double) -> Double { r0 + (r1 - r0) * t / seconds }
        return energyKWh * EnergyTotal.positivePart(from: rate(a), to: rate(b), seconds: b - a) / whole
    }
}

/// One node's energy so far in the current local day (kWh).
///
/// The bugs this type exists to avoid are the field's classics: totals doubled after a restart,
/// hours of the last rate added after a silence, negative energy when a device counter resets, a
/// day's energy lost when a device resets its own daily counter. So the shown total never goes
/// negative and never decreases within a day.
public struct EnergyTotal: Sendable, Equatable {
    public let spec: TotalSpec
    /// What the widget shows: never negative, never decreasing until the day closes.
    public internal(set) var energyKWh: Double = 0
    /// The last rate integrated (integrating totals only).
    public internal(set) var lastSample: RateSample?
    /// How far the segment from `lastSample` is counted already: midnight, which split it between
    /// two days. The next rate counts only the rest, and only when the whole silence since
    /// `lastSample` is within `max_gap`: a silence is no shorter for spanning midnight.
    public internal(set) var countedUntil: Date?
    /// The device counter's bookkeeping (counter and daily totals only).
    public internal(set) var counter: CounterTrack?

    public init(spec: TotalSpec) {
        self.spec = spec
        if spec.counterSource != nil {
            if case .daily = spec { counter = CounterTrack(restartsFromZero: true) } else {
                counter = CounterTrack(restartsFromZero: false)
            }
        }
    }

    /// +1 when the total counts the positive part of the signed rate, −1 for the negative part.
    var direction: Double? {
        switch spec {
        case .integrate, .imported, .charged: 1
        case .exported, .discharged: -1
        case .counter, .daily: nil
        }
    }

    /// Whether the total counts anything yet: an integral always, a counter once it has read.
    var isCounting: Bool { direction != nil || counter?.last != nil }

    /// Integrates the segment from the last sample to this one (trapezoid, split exactly where the
    /// rate crosses zero so that import and export add up to the net). Adds nothing across a silence
    /// longer than `maxGapSeconds` or when the clock went backwards. Returns what it counted.
    @discardableResult
    public mutating func integrate(rateW: Double, at instant: Date, maxGapSeconds: Double) -> EnergySpan? {
        guard let direction else { return nil }
        var span: EnergySpan?
        if let last = lastSample {
            let seconds = instant.timeIntervalSince(last.at)
            let from = countedUntil ?? last.at
            let uncounted = instant.timeIntervalSince(from)
            if seconds > 0, seconds <= maxGapSeconds, uncounted > 0 {
                let (r0, r1) = (direction * last.rateW, direction * rateW)
                let energy = Self.positivePart(from: r0, to: r1, seconds: uncounted) / 3_600_000
                energyKWh += energy
                span = EnergySpan(start: from, end: instant, energyKWh: energy, startRateW: r0, endRateW: r1)
            }
        }
        lastSample = RateSample(at: instant, rateW: rateW)
        countedUntil = nil
        return span
    }

    /// Moves the day's energy by what other accounts counted (a derived output's day is their
    /// balance); never below 0.
    mutating func add(_ energyKWh: Double) {
        self.energyKWh = max(0, self.energyKWh + energyKWh)
    }

    /// Hands the first `kWh` of today's count back to the day before (a counter's rise across
    /// midnight): the counter's day starts that much further up, so its next readings count from
    /// there.
    mutating func handBack(_ kWh: Double) {
        energyKWh -= kWh
        counter?.baseline? += kWh
    }

    /// Ends the current segment without counting it: the rate was unknown from here (a balance with
    /// a stale term), or the clock stepped. Counting starts again at the next known rate.
    public mutating func interrupt() {
        lastSample = nil
        countedUntil = nil
    }

    /// The wall clock stepped by `seconds` without that time passing: nothing is counted across the
    /// step, and a counter's next rise is judged against the time that really passed.
    mutating func clockStepped(by seconds: Double) {
        interrupt()
        counter?.lastAt?.addTimeInterval(seconds)
    }

    /// ∫ max(r, 0) dt over a segment where r moves linearly from `r0` to `r1`.
    static func positivePart(from r0: Double, to r1: Double, seconds: Double) -> Double {
        if r0 >= 0, r1 >= 0 { return (r0 + r1) / 2 * seconds }
        if r0 <= 0, r1 <= 0 { return 0 }
        let crossing = r0 / (r0 - r1) * seconds  // where the line meets zero
        return r0 > 0 ? r0 * crossing / 2 : r1 * (seconds - crossing) / 2
    }

    /// Takes a reading of the device's counter (kWh); `maxPowerW` bounds how fast it can rise.
    /// Returns the energy it added, spread over the time since the counter's last reading, and the
    /// recount, when this reading confirmed one, for the log.
    @discardableResult
    public mutating func read(
        counterKWh value: Double, at now: Date, maxPowerW: Double = SourceConfig.defaultMaxPowerW, dayStart: Date? = nil
    ) -> (added: EnergySpan?, recount: CounterTrack.Recount?) {
        guard var track = counter else { return (nil, nil) }
        let before = energyKWh
        // A daily counter's first value holds the energy since the day began (shown once the
        // counter moves): spread over the day so far, not dropped on the moment it counts.
        let since = track.lastAt.map { min($0, now) } ?? now
        let spreadFrom = track.isHoldingAssumedValue ? min(dayStart ?? since, since) : since
        let recount = track.read(value, at: now, maxPowerW: maxPowerW)
        counter = track
        energyKWh = max(energyKWh, track.todayKWh)
        let added = energyKWh > before ? EnergySpan(start: spreadFrom, end: now, energyKWh: energyKWh - before) : nil
        return (added, recount)
    }

    /// Counts the last rate up to `boundary` (midnight), when it is within `maxGapSeconds`; a
    /// rate older than that is interrupted. Returns what it counted. `closeDay` does it first;
    /// called before, it lets the caller price the stretch up to midnight (then `closeDay` adds
    /// nothing more).
    @discardableResult
    public mutating func carry(to boundary: Date, maxGapSeconds: Double) -> EnergySpan? {
        guard let direction, let last = lastSample, last.at < boundary else { return nil }
        guard boundary.timeIntervalSince(last.at) <= maxGapSeconds else {
            interrupt()
            return nil
        }
        let from = countedUntil ?? last.at
        let rate = direction * last.rateW
        let energy = Self.positivePart(from: rate, to: rate, seconds: boundary.timeIntervalSince(from)) / 3_600_000
        energyKWh += energy
        countedUntil = boundary
        return energy > 0 ? EnergySpan(start: from, end: boundary, energyKWh: energy, startRateW: rate, endRateW: rate) : nil
    }

    /// Ends the day at `boundary` (local midnight) and starts the next one at 0. An integrating
    /// total carries its last rate up to midnight, when that is within `maxGapSeconds`, so the
    /// segment that spans midnight is split between the two days; a counter takes its last reading
    /// as the new day's baseline. A rate older than that is no rate for the new day either: carried
    /// to midnight, it would count the first minutes after it at a rate read hours ago (after a
    /// silence, or a restart on a later day). Returns the closed day's energy.
    @discardableResult
    public mutating func closeDay(at boundary: Date, maxGapSeconds: Double) -> Double {
        carry(to: boundary, maxGapSeconds: maxGapSeconds)
        let closed = energyKWh
        energyKWh = 0
        counter?.startDay()
        return closed
    }
}

/// The bookkeeping of a device's energy counter against flowbridge's day.
///
/// today = carried + (last − baseline). One sample can be a glitch, so an odd reading (a drop, or a
/// rise no plausible power explains) is only believed when the next one carries on from it (as
/// evcc does); until then the day's energy stays as it was. A confirmed drop is a device reset, a
/// confirmed jump a new count (a swapped meter, a reboot that read it again): either way the energy
/// counted so far is kept and counting goes on from the new value.
public struct CounterTrack: Sendable, Equatable {
    /// True for the device's own daily counters, which count again from 0 after a reset; a lifetime
    /// counter that drops is counted again from the value it dropped to.
    public let restartsFromZero: Bool
    /// The counter's value when today's counting began.
    public var baseline: Double?
    /// The highest trusted reading since the baseline, and when it came.
    public var last: Double?
    public var lastAt: Date?
    /// Energy counted today before the device's last reset.
    public var carried: Double = 0
    /// An odd reading (a drop, or an implausible jump), waiting for the next one to confirm it.
    public var suspect: Double?
    /// A daily counter's first value when flowbridge started without knowing the day (no state):
    /// taken as today's, unless the counter never moved before the device reset it, in which case it
    /// was yesterday's, left over from an inverter asleep since dusk.
    public var assumedFrom: Double?

    public init(
        restartsFromZero: Bool, baseline: Double? = nil, last: Double? = nil, lastAt: Date? = nil, carried: Double = 0,
        suspect: Double? = nil, assumedFrom: Double? = nil
    ) {
        self.restartsFromZero = restartsFromZero
        self.baseline = baseline
        self.last = last
        self.lastAt = lastAt
        self.carried = carried
        self.suspect = suspect
        self.assumedFrom = assumedFrom
    }

    /// A counter that moved for good in a way no energy explains, confirmed by the reading after it.
    public struct Recount: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// It went back: the device restarted (or was reset) and counts again.
            case reset
            /// It jumped further than `max_power` could explain: a swapped meter, a reboot that
            /// read the meter again.
            case jump
        }

        public var kind: Kind
        public var fromKWh: Double
        public var toKWh: Double
        /// Energy counted today before the recount, which is kept.
        public var keptKWh: Double
    }

    public var todayKWh: Double {
        guard let baseline, let last else { return carried }
        // An assumed daily value that has not moved yet may be yesterday's: not shown until it does.
        if isHoldingAssumedValue { return carried }
        return carried + max(0, last - baseline)
    }

    /// A daily counter's first value (or none yet) that has not moved since: held back, and so the
    /// energy of the day so far once it moves.
    public var isHoldingAssumedValue: Bool {
        guard restartsFromZero, baseline != nil || last == nil else { return false }
        guard let last else { return true }
        guard let assumedFrom else { return false }
        return last <= assumedFrom + Self.moveTolerance
    }

    /// A daily counter that rose by more than this has moved: far below the smallest step a device
    /// counts in (a Wh; a kWh to three decimals), so its first step of one unit counts, as every
    /// later one does. (A drop is judged by `noise`, which tells a reset from number formatting.)
    static let moveTolerance = 1e-6

    /// A drop smaller than this is noise of the device's number formatting, not a reset.
    static func noise(at value: Double) -> Double { 0.001 + abs(value) * 1e-6 }

    mutating func read(_ value: Double, at now: Date, maxPowerW: Double) -> Recount? {
        guard let previous = last else {
            // First reading: a daily counter holds today's energy (assumed: see `assumedFrom`); a
            // lifetime counter counts from here.
            if baseline == nil {
                baseline = restartsFromZero ? 0 : value
                if restartsFromZero { assumedFrom = value }
            }
            accept(value, at: now)
            return nil
        }
        let drop = isDrop(from: previous, to: value)
        guard drop || isImplausibleRise(from: previous, to: value, at: now, maxPowerW: maxPowerW) else {
            suspect = nil
            accept(max(previous, value), at: now)
            return nil
        }
        // One odd sample: wait for the next, which has to carry on from it.
        guard let candidate = suspect, value >= candidate - Self.noise(at: candidate),
            !isImplausibleRise(from: candidate, to: value, at: now, maxPowerW: maxPowerW)
        else {
            suspect = value
            return nil
        }
        // Confirmed: the device restarted (a drop) or its count moved for good (a swap, a reboot
        // that read the meter again). What was counted stays; counting goes on from the new value,
        // and the jump itself is no energy.
        carried = todayKWh  // an assumed value that never moved counts nothing
        baseline = drop && restartsFromZero ? 0 : candidate
        assumedFrom = nil
        suspect = nil
        accept(value, at: now)
        return Recount(kind: drop ? .reset : .jump, fromKWh: previous, toKWh: candidate, keptKWh: carried)
    }

    private mutating func accept(_ value: Double, at now: Date) {
        last = value
        lastAt = now
    }

    /// A daily counter resets to near zero; anything else that goes down by more than noise is a
    /// lifetime counter's reset (or a glitch, which the next reading tells apart).
    func isDrop(from previous: Double, to value: Double) -> Bool {
        if restartsFromZero { return value < previous / 2 && previous - value > Self.noise(at: previous) }
        return previous - value > Self.noise(at: previous)
    }

    /// More energy than `maxPowerW` could deliver since the last reading.
    func isImplausibleRise(from previous: Double, to value: Double, at now: Date, maxPowerW: Double) -> Bool {
        guard let lastAt else { return false }
        let hours = max(now.timeIntervalSince(lastAt), 1) / 3600
        return value - previous > maxPowerW / 1000 * hours + Self.noise(at: previous)
    }

    /// Midnight: today's counting starts at the last reading.
    mutating func startDay() {
        baseline = last
        carried = 0
        suspect = nil
        assumedFrom = nil
    }
}
