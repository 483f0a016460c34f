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
    /// longer than `maxGapSeconds` or when the clock went backwards.
    public mutating func integrate(rateW: Double, at instant: Date, maxGapSeconds: Double) {
        guard let direction else { return }
        if let last = lastSample {
            let seconds = instant.timeIntervalSince(last.at)
            let uncounted = instant.timeIntervalSince(countedUntil ?? last.at)
            if seconds > 0, seconds <= maxGapSeconds, uncounted > 0 {
                let joules = Self.positivePart(from: direction * last.rateW, to: direction * rateW, seconds: uncounted)
                energyKWh += joules / 3_600_000
            }
        }
        lastSample = RateSample(at: instant, rateW: rateW)
        countedUntil = nil
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
    /// Returns the recount, when this reading confirmed one, for the log.
    @discardableResult
    public mutating func read(
        counterKWh value: Double, at now: Date, maxPowerW: Double = SourceConfig.defaultMaxPowerW
    ) -> CounterTrack.Recount? {
        guard var track = counter else { return nil }
        let recount = track.read(value, at: now, maxPowerW: maxPowerW)
        counter = track
        energyKWh = max(energyKWh, track.todayKWh)
        return recount
    }

    /// Ends the day at `boundary` (local midnight) and starts the next one at 0. An integrating
    /// total carries its last rate up to midnight, when that is within `maxGapSeconds`, so the
    /// segment that spans midnight is split between the two days; a counter takes its last reading
    /// as the new day's baseline. A rate older than that is no rate for the new day either: carried
    /// to midnight, it would count the first minutes after it at a rate read hours ago (after a
    /// silence, or a restart on a later day). Returns the closed day's energy.
    @discardableResult
    public mutating func closeDay(at boundary: Date, maxGapSeconds: Double) -> Double {
        if let direction, let last = lastSample, last.at < boundary {
            if boundary.timeIntervalSince(last.at) <= maxGapSeconds {
                let seconds = boundary.timeIntervalSince(countedUntil ?? last.at)
                energyKWh += Self.positivePart(from: direction * last.rateW, to: direction * last.rateW, seconds: seconds) / 3_600_000
                countedUntil = boundary
            } else {
                interrupt()
            }
        }
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
        if let assumedFrom, last <= assumedFrom + Self.noise(at: assumedFrom) { return carried }
        return carried + max(0, last - baseline)
    }

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
