import FoundationEssentials

/// A day of the week, Monday first (as tariffs and ISO 8601 count them).
public enum Weekday: Int, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    case monday, tuesday, wednesday, thursday, friday, saturday, sunday

    /// The config's word: `mon` … `sun`.
    public var description: String { ["mon", "tue", "wed", "thu", "fri", "sat", "sun"][rawValue] }

    public init?(word: String) {
        guard let found = Self.allCases.first(where: { $0.description == word.lowercased() }) else { return nil }
        self = found
    }

    /// The weekday of a local date (1970-01-01 was a Thursday).
    public init(of date: CivilDate) {
        self = Self(rawValue: ((date.daysSinceEpoch + 3) % 7 + 7) % 7)!
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One zone of a time-of-use tariff: a price on some weekdays between two local times. A zone
/// whose `to` is before its `from` runs past midnight into the next day (`22:00`–`06:00`).
public struct TimeOfUseZone: Sendable, Equatable {
    public var days: Set<Weekday>
    /// Minutes after local midnight: 0…1439 for `from`, 1…1440 for `to` (1440: midnight after).
    public var fromMinute: Int
    public var toMinute: Int
    /// The base price (currency per kWh), before fees and VAT.
    public var basePerKWh: Double
    /// True for the zone without days or times: the price at every time no other zone covers.
    public var isRest: Bool

    public init(days: Set<Weekday> = Set(Weekday.allCases), fromMinute: Int = 0, toMinute: Int = 1440, basePerKWh: Double, isRest: Bool = false) {
        self.days = days
        self.fromMinute = fromMinute
        self.toMinute = toMinute
        self.basePerKWh = basePerKWh
        self.isRest = isRest
    }

    /// The minutes of the week (Monday 00:00 = 0) the zone covers.
    var minutesOfWeek: [Int] {
        let length = toMinute > fromMinute ? toMinute - fromMinute : toMinute + TimeOfUseTable.minutesPerDay - fromMinute
        return days.sorted().flatMap { day in
            (0..<length).map { (day.rawValue * TimeOfUseTable.minutesPerDay + fromMinute + $0) % TimeOfUseTable.minutesPerWeek }
        }
    }
}

/// Prices by weekday and local time of day, checked to cover every minute of the week exactly
/// once: a gap would leave energy without a price, an overlap would leave two. Local time is the
/// zone's wall clock, so a zone that starts at 07:00 starts at 07:00 on both sides of a DST change.
public struct TimeOfUseTable: Sendable, Equatable {
    public static let minutesPerDay = 1440
    public static let minutesPerWeek = 7 * 1440

    public let zones: [TimeOfUseZone]
    /// Per minute of the week, the zone in force (by position).
    let zoneAt: [UInt8]
    /// The minutes of the week where the zone changes, ascending.
    let changes: [Int]

    /// Why a table is not one price per minute.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// Two zones (by position) both cover this stretch.
        case overlap(first: Int, second: Int, at: String)
        /// No zone covers this stretch (and there is no zone for the rest).
        case gap(at: String)
        /// More than one zone without days or times.
        case twoRests(first: Int, second: Int)
        case tooMany

        public var description: String {
            switch self {
            case .overlap(let first, let second, let at): "zones \(first + 1) and \(second + 1) overlap on \(at)"
            case .gap(let at): "no zone covers \(at); add one, or a last zone with only a price for the rest"
            case .twoRests(let first, let second): "zones \(first + 1) and \(second + 1) both have only a price: one zone is the rest"
            case .tooMany: "at most 200 zones"
            }
        }
    }

    public init(zones: [TimeOfUseZone]) throws(Problem) {
        guard zones.count <= 200 else { throw .tooMany }
        var table = [UInt8](repeating: .max, count: Self.minutesPerWeek)
        var rest: Int?
        for (index, zone) in zones.enumerated() {
            if zone.isRest {
                if let rest { throw .twoRests(first: rest, second: index) }
                rest = index
                continue
            }
            let minutes = zone.minutesOfWeek
            if let taken = minutes.first(where: { table[$0] != .max }) {
                let other = Int(table[taken])
                throw .overlap(first: other, second: index, at: Self.stretchText(minutes.filter { table[$0] == UInt8(other) }))
            }
            for minute in minutes { table[minute] = UInt8(index) }
        }
        let uncovered = table.indices.filter { table[$0] == .max }
        if !uncovered.isEmpty {
            guard let rest else { throw .gap(at: Self.stretchText(uncovered)) }
            for minute in uncovered { table[minute] = UInt8(rest) }
        }
        self.zones = zones
        zoneAt = table
        changes = table.indices.filter { table[$0] != table[($0 + Self.minutesPerWeek - 1) % Self.minutesPerWeek] }
    }

    /// The first run of consecutive minutes in `minutes` (ascending), for people: `mon 07:00–08:00`.
    static func stretchText(_ minutes: [Int]) -> String {
        let sorted = minutes.sorted()
        guard let first = sorted.first else { return "" }
        var end = first + 1
        for minute in sorted.dropFirst() where minute == end { end += 1 }
        let day = Weekday(rawValue: first / minutesPerDay)!
        let dayStart = first / minutesPerDay * minutesPerDay
        return "\(day) \(clockText(minute: first - dayStart))–\(clockText(minute: min(end, dayStart + minutesPerDay) - dayStart))"
    }

    /// A minute of the day as the config writes it: `07:00`, `24:00`.
    public static func clockText(minute: Int) -> String {
        func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(pad(minute / 60)):\(pad(minute % 60))"
    }

    /// The local minute of the week at `instant`, and the seconds into that minute.
    static func localMinute(at instant: Date, zone: any LocalTimeZone) -> (minute: Int, second: Double) {
        let local = instant.timeIntervalSince1970 + Double(zone.utcOffsetSeconds(at: instant))
        let minutes = (local / 60).rounded(.down)
        // 1970-01-01 00:00 was a Thursday: minute 3 × 1440 of the week.
        let ofWeek = ((Int(minutes) + 3 * minutesPerDay) % minutesPerWeek + minutesPerWeek) % minutesPerWeek
        return (ofWeek, local - minutes * 60)
    }

    /// The zone in force at `instant`.
    public func zone(at instant: Date, in zone: any LocalTimeZone) -> TimeOfUseZone {
        zones[Int(zoneAt[Self.localMinute(at: instant, zone: zone).minute])]
    }

    /// The first instant after `instant` where the zone in force changes; nil for a table of one
    /// zone. A DST change in between is found and taken as the next step: from there, the wall
    /// clock (not the elapsed time) says which zone is in force.
    public func nextChange(after instant: Date, in zone: any LocalTimeZone) -> Date? {
        guard !changes.isEmpty else { return nil }
        let (minute, second) = Self.localMinute(at: instant, zone: zone)
        let next = changes.first { $0 > minute } ?? changes[0] + Self.minutesPerWeek
        let candidate = instant.addingTimeInterval(Double(next - minute) * 60 - second)
        let offset = zone.utcOffsetSeconds(at: instant)
        guard zone.utcOffsetSeconds(at: candidate) != offset else { return candidate }
        // The offset changed on the way: the first second under the new one.
        var low = instant.timeIntervalSince1970
        var high = candidate.timeIntervalSince1970
        while high - low > 0.5 {
            let middle = (low + high) / 2
            if zone.utcOffsetSeconds(at: Date(timeIntervalSince1970: middle)) == offset { low = middle } else { high = middle }
        }
        // Zones change on whole seconds (`utcOffsetSeconds` reads whole ones).
        return Date(timeIntervalSince1970: max(high.rounded(.down), low.rounded(.up)))
    }
}
