import FoundationEssentials

/// One price of a schedule: the base price per kWh (before fees and VAT) in force from `start` up
/// to `end`.
public struct PriceSlot: Sendable, Equatable {
    public var start: Date
    public var end: Date
    public var basePerKWh: Double

    public init(start: Date, end: Date, basePerKWh: Double) {
        self.start = start
        self.end = end
        self.basePerKWh = basePerKWh
    }
}

/// The slots a schedule source sent (evcc's forecast, a day-ahead list): each price with its own
/// times, so a schedule needs no judgement of its age. A retained one heard at a fresh start prices
/// the slot that covers now at once; one of last week prices nothing now.
///
/// Sorted by start, none overlapping another, touching slots of one price joined. A newer schedule
/// is the feed's word from the moment it came: from then on its slots replace what an older one
/// said where they overlap (a slot it leaves out stays as it was). Before that moment, what was
/// already known was in force then and stays; a newer schedule's past slots only fill its gaps
/// (a fresh start's first hour, the slots a restart's state no longer had).
public struct PriceSchedule: Sendable, Equatable {
    public internal(set) var slots: [PriceSlot] = []

    /// Two full schedules' worth: the one in force and the one that replaced it, cut into pieces.
    static let maxSlots = 2 * ScheduleFormat.maxSlots

    public init(slots: [PriceSlot] = []) { self.slots = slots }

    public var isEmpty: Bool { slots.isEmpty }

    /// The slot in force at `instant`.
    func slot(at instant: Date) -> PriceSlot? {
        let index = firstIndex(endingAfter: instant)
        guard index < slots.count, slots[index].start <= instant else { return nil }
        return slots[index]
    }

    /// The first instant after `instant` where a slot starts or ends.
    func nextBoundary(after instant: Date) -> Date? {
        let index = firstIndex(endingAfter: instant)
        guard index < slots.count else { return nil }
        return slots[index].start > instant ? slots[index].start : slots[index].end
    }

    /// The position of the first slot that ends after `instant` (binary search: slots are sorted
    /// and do not overlap, so their ends ascend too).
    func firstIndex(endingAfter instant: Date) -> Int {
        var low = 0
        var high = slots.count
        while low < high {
            let middle = (low + high) / 2
            if slots[middle].end <= instant { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Takes a schedule heard at `now` (sorted, not overlapping, as `ScheduleFormat` gives them):
    /// its slots from `now` on replace what the held ones say there; its slots before `now` fill
    /// only what no held slot covers. Linear in the slots, apart from one sort.
    public mutating func take(_ schedule: [PriceSlot], at now: Date) {
        let future = schedule.filter { $0.end > now }.map { PriceSlot(start: max($0.start, now), end: $0.end, basePerKWh: $0.basePerKWh) }
        let past = schedule.filter { $0.start < now }.map { PriceSlot(start: $0.start, end: min($0.end, now), basePerKWh: $0.basePerKWh) }
        let kept = Self.subtract(future.map { $0.start..<$0.end }, from: slots)
        let filled = Self.subtract(kept.map { $0.start..<$0.end }, from: past)
        slots = Self.joined((kept + future + filled).sorted { $0.start < $1.start })
        if slots.count > Self.maxSlots { slots.removeFirst(slots.count - Self.maxSlots) }
    }

    /// `slots` without the stretches of `ranges` (both sorted and apart): a slot across one is
    /// shortened, or split around it.
    static func subtract(_ ranges: [Range<Date>], from slots: [PriceSlot]) -> [PriceSlot] {
        var result: [PriceSlot] = []
        result.reserveCapacity(slots.count + 1)
        var first = 0
        for slot in slots {
            while first < ranges.count, ranges[first].upperBound <= slot.start { first += 1 }
            var at = slot.start
            var index = first
            while index < ranges.count, ranges[index].lowerBound < slot.end {
                if ranges[index].lowerBound > at { result.append(PriceSlot(start: at, end: ranges[index].lowerBound, basePerKWh: slot.basePerKWh)) }
                at = max(at, ranges[index].upperBound)
                index += 1
            }
            if at < slot.end { result.append(PriceSlot(start: at, end: slot.end, basePerKWh: slot.basePerKWh)) }
        }
        return result
    }

    /// Touching slots of one price as one: a schedule taken in the middle of a slot splits it, and
    /// a feed that sends the same schedule every minute would otherwise leave a piece a minute.
    static func joined(_ sorted: [PriceSlot]) -> [PriceSlot] {
        var result: [PriceSlot] = []
        result.reserveCapacity(sorted.count)
        for slot in sorted {
            if let last = result.last, last.end == slot.start, last.basePerKWh == slot.basePerKWh {
                result[result.count - 1].end = slot.end
            } else {
                result.append(slot)
            }
        }
        return result
    }

    /// Forgets the slots that ended by `horizon`: no stretch still to be priced reaches them.
    mutating func forget(before horizon: Date) {
        let passed = firstIndex(endingAfter: horizon)
        if passed > 0 { slots.removeFirst(passed) }
    }

    /// As saved: `[[start, end, price], …]`.
    var json: JSONValue {
        .array(slots.map { .array([.number($0.start.timeIntervalSince1970), .number($0.end.timeIntervalSince1970), .number($0.basePerKWh)]) })
    }

    /// Saved slots, as far as each is plausible, sorted and apart from the one before: the slots
    /// before a damaged one are good (a stretch that needs a later one is unpriced).
    static func restored(from json: JSONValue?, times: ClosedRange<Double>) -> (schedule: PriceSchedule, damaged: Bool) {
        var schedule = PriceSchedule()
        for item in json?.arrayValue ?? [] {
            guard let entry = item.arrayValue, entry.count == 3, let start = entry[0].numberValue, let end = entry[1].numberValue,
                let price = entry[2].numberValue, times.contains(start), times.contains(end), start < end,
                abs(price) <= TariffConfig.largestPricePerKWh, schedule.slots.last.map({ $0.end.timeIntervalSince1970 <= start }) ?? true,
                schedule.slots.count < maxSlots
            else { return (schedule, true) }
            schedule.slots.append(PriceSlot(start: Date(timeIntervalSince1970: start), end: Date(timeIntervalSince1970: end), basePerKWh: price))
        }
        return (schedule, false)
    }
}
