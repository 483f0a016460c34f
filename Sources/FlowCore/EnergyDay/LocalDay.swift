import FoundationEssentials

/// Time zone arithmetic, the one thing about time the core cannot compute on its own. The Daemon
/// implements it with the system's zone rules; tests can also use a `FixedOffsetZone`.
public protocol LocalTimeZone: Sendable {
    /// A name for messages (`Europe/Berlin`).
    var identifier: String { get }
    /// Seconds east of UTC in force at `instant` (7200 for CEST).
    func utcOffsetSeconds(at instant: Date) -> Int
}

/// A zone without daylight saving time: UTC, or a fixed offset.
public struct FixedOffsetZone: LocalTimeZone {
    public let offsetSeconds: Int
    public init(offsetSeconds: Int = 0) { self.offsetSeconds = offsetSeconds }
    public var identifier: String { offsetSeconds == 0 ? "UTC" : "UTC\(offsetSeconds < 0 ? "-" : "+")\(abs(offsetSeconds))s" }
    public func utcOffsetSeconds(at instant: Date) -> Int { offsetSeconds }
}

/// One local calendar day and the instants where it starts and ends. 23- and 25-hour days, zones
/// with half-hour offsets and DST changes at midnight are ordinary: the bounds are searched for,
/// not computed as `midnight + 24 h`.
public struct LocalDay: Sendable, Equatable, CustomStringConvertible {
    public let date: CivilDate
    /// The first instant of the day.
    public let start: Date
    /// The first instant of the next day.
    public let end: Date

    public var lengthHours: Double { end.timeIntervalSince(start) / 3600 }
    public func contains(_ instant: Date) -> Bool { instant >= start && instant < end }
    public var description: String { date.description }
}

extension LocalTimeZone {
    /// The local calendar date at `instant`.
    public func localDate(at instant: Date) -> CivilDate {
        let local = Int(instant.timeIntervalSince1970.rounded(.down)) + utcOffsetSeconds(at: instant)
        return CivilDate(daysSinceEpoch: Int((Double(local) / 86_400).rounded(.down)))
    }

    /// The local day that holds `instant`.
    public func day(containing instant: Date) -> LocalDay {
        let date = localDate(at: instant)
        let now = Int(instant.timeIntervalSince1970.rounded(.down))
        // The first second whose local date is `date`: search the 36 hours before `instant`.
        let start = firstSecond(from: now - 36 * 3600, to: now) { localDate(at: $0) >= date }
        // The first second of a later date: search the 50 hours after the start.
        let end = firstSecond(from: start, to: start + 50 * 3600) { localDate(at: $0) > date }
        return LocalDay(date: date, start: Date(timeIntervalSince1970: Double(start)), end: Date(timeIntervalSince1970: Double(end)))
    }

    /// The local day after `day`.
    public func day(after day: LocalDay) -> LocalDay { self.day(containing: day.end) }

    /// The local day on `date`, found from its noon; nil for a date the zone skipped (Samoa
    /// moving across the date line went from 29 to 31 December 2011).
    public func day(on date: CivilDate) -> LocalDay? {
        let noonUTC = Date(timeIntervalSince1970: Double(date.daysSinceEpoch) * 86_400 + 43_200)
        let day = day(containing: noonUTC.addingTimeInterval(-Double(utcOffsetSeconds(at: noonUTC))))
        return day.date == date ? day : nil
    }

    /// Binary search for the first whole second in `low...high` where `isLater` holds (it holds at
    /// `high` and, once true, stays true).
    private func firstSecond(from low: Int, to high: Int, _ isLater: (Date) -> Bool) -> Int {
        var low = low
        var high = high
        while low < high {
            let middle = low + (high - low) / 2
            if isLater(Date(timeIntervalSince1970: Double(middle))) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

extension LocalTimeZone {
    /// The local wall-clock time at `instant` for people: `14:02`, or `2026-05-31 23:50` when it is
    /// not on the local date of `today` (`withSeconds` adds `:07`). The instant is taken to the
    /// millisecond, as `RFC3339.write` prints it: a push's line in words and its `t` name the same
    /// second, also in a second's last half-millisecond (which `t` prints as the next second).
    public func clockText(at exactInstant: Date, today: Date? = nil, withSeconds: Bool = false) -> String {
        let instant = Date(timeIntervalSince1970: (exactInstant.timeIntervalSince1970 * 1000).rounded() / 1000)
        let local = Int(instant.timeIntervalSince1970.rounded(.down)) + utcOffsetSeconds(at: instant)
        let secondOfDay = ((local % 86_400) + 86_400) % 86_400
        func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var text = "\(pad(secondOfDay / 3600)):\(pad(secondOfDay / 60 % 60))"
        if withSeconds { text += ":\(pad(secondOfDay % 60))" }
        let date = localDate(at: instant)
        if let today, localDate(at: today) == date { return text }
        return "\(date) \(text)"
    }
}

/// A length of time for people: `45 s`, `12 min`, `2 h 05 min`, `3 days`.
package func durationText(seconds: Double) -> String {
    let whole = Int(abs(seconds).rounded())
    if whole < 90 { return "\(whole) s" }
    if whole < 5400 { return "\(Int((Double(whole) / 60).rounded())) min" }
    if whole < 172_800 {
        let minutes = whole / 60 % 60
        return "\(whole / 3600) h \(minutes < 10 ? "0" : "")\(minutes) min"
    }
    return "\(whole / 86_400) days"
}
