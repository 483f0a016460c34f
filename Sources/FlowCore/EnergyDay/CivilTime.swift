import FoundationEssentials

/// A calendar date (proleptic Gregorian), without a zone.
public struct CivilDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
    public var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (`civil_from_days`).
    public init(daysSinceEpoch days: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    public var isValid: Bool {
        guard (1...12).contains(month), day >= 1 else { return false }
        return CivilDate(daysSinceEpoch: daysSinceEpoch) == self
    }

    public static func < (lhs: CivilDate, rhs: CivilDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    /// `2026-03-29`
    public var description: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// Parses `YYYY-MM-DD`.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
        else { return nil }
        self.init(year: year, month: month, day: day)
        guard isValid else { return nil }
    }
}

/// RFC 3339 timestamps: the format of the widget's dates, of trace lines and of the state file.
public enum RFC3339 {
    /// Parses `2027-05-10T22:00:00Z`, `2027-05-10t22:00:00.250+02:00`, `2027-05-10 22:00:00Z`.
    /// Returns nil for anything else, including impossible dates and times.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard index < bytes.count, (48...57).contains(bytes[index]) else { return nil }
                value = value * 10 + Int(bytes[index] - 48)
            }
            return value
        }
        guard let year = number(0..<4), bytes[4] == UInt8(ascii: "-"), let month = number(5..<7),
            bytes[7] == UInt8(ascii: "-"), let day = number(8..<10),
            [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(bytes[10]),
            let hour = number(11..<13), bytes[13] == UInt8(ascii: ":"), let minute = number(14..<16),
            bytes[16] == UInt8(ascii: ":"), let second = number(17..<19)
        else { return nil }
        let date = CivilDate(year: year, month: month, day: day)
        guard date.isValid, hour < 24, minute < 60, second <= 60 else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, (48...57).contains(bytes[index]) {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard let offsetHour = number(index + 1..<index + 3), index + 3 < bytes.count,
                bytes[index + 3] == UInt8(ascii: ":"), let offsetMinute = number(index + 4..<index + 6),
                offsetHour < 24, offsetMinute < 60
            else { return nil }
            offsetSeconds = sign * (offsetHour * 3600 + offsetMinute * 60)
            index += 6
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        let seconds = date.daysSinceEpoch * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Formats an instant in UTC: `2026-03-29T01:00:00Z`, with milliseconds only when it has them.
    public static func format(_ instant: Date) -> String {
        format(instant, utcOffsetSeconds: 0)
    }

    /// Formats an instant as local time at the given offset: `2026-03-29T03:00:00+02:00`.
    public static func format(_ instant: Date, utcOffsetSeconds offset: Int) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(29)
        write(instant, utcOffsetSeconds: offset, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends what `format` returns to `out`, digit by digit: every pushed line carries a time,
    /// and building it from interpolated strings cost more than the rest of the line.
    public static func write(_ instant: Date, utcOffsetSeconds offset: Int, to out: inout [UInt8]) {
        let (second, millis) = shownSecond(of: instant)
        writeSecond(second, utcOffsetSeconds: offset, to: &out)
        writeFraction(millis, to: &out)
        writeOffset(offset, to: &out)
    }

    /// The whole second (since 1970, UTC) of `instant` rounded to the millisecond, which its text
    /// shows, and the milliseconds after it.
    static func shownSecond(of instant: Date) -> (second: Int64, millis: Int) {
        let totalMillis = Int64((instant.timeIntervalSince1970 * 1000).rounded())
        let millis = Int(((totalMillis % 1000) + 1000) % 1000)
        return ((totalMillis - Int64(millis)) / 1000, millis)
    }

    /// `2026-03-29T03:00:00`: the local date and time of UTC second `second` at `offset`.
    static func writeSecond(_ second: Int64, utcOffsetSeconds offset: Int, to out: inout [UInt8]) {
        let totalSeconds = Int(second) + offset
        let days = Int((Double(totalSeconds) / 86_400).rounded(.down))
        let secondOfDay = totalSeconds - days * 86_400
        let date = CivilDate(daysSinceEpoch: days)
        if (0...9999).contains(date.year) {
            writePair(date.year / 100, to: &out)
            writePair(date.year % 100, to: &out)
        } else {
            // At least 4 digits, zero-padded; a year beyond 9999 keeps all of its digits.
            var text = String(date.year)
            if text.utf8.count < 4 { text = String(repeating: "0", count: 4 - text.utf8.count) + text }
            out.append(contentsOf: text.utf8)
        }
        out.append(UInt8(ascii: "-"))
        writePair(date.month, to: &out)
        out.append(UInt8(ascii: "-"))
        writePair(date.day, to: &out)
        out.append(UInt8(ascii: "T"))
        writePair(secondOfDay / 3600, to: &out)
        out.append(UInt8(ascii: ":"))
        writePair(secondOfDay / 60 % 60, to: &out)
        out.append(UInt8(ascii: ":"))
        writePair(secondOfDay % 60, to: &out)
    }

    /// `.250`, only when there are milliseconds.
    static func writeFraction(_ millis: Int, to out: inout [UInt8]) {
        guard millis != 0 else { return }
        out.append(UInt8(ascii: "."))
        out.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: millis / 100))
        writePair(millis % 100, to: &out)
    }

    /// `Z`, or `+02:00`.
    static func writeOffset(_ offset: Int, to out: inout [UInt8]) {
        guard offset != 0 else { return out.append(UInt8(ascii: "Z")) }
        out.append(offset < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
        writePair(abs(offset) / 3600, to: &out)
        out.append(UInt8(ascii: ":"))
        writePair(abs(offset) / 60 % 60, to: &out)
    }

    /// Two digits of `value` (0...99).
    private static func writePair(_ value: Int, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10))
        out.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10))
    }
}

/// The RFC 3339 texts of instants in one zone, written as `RFC3339.write` writes them at the
/// zone's offset, with the last second's text kept: every pushed line carries its time, and the
/// date, the time of day and the zone's offset (a look at the zone's rules under a lock) cost
/// more than the rest of the line. They are worked out once for each second that a line falls in.
public struct LocalTimeStamps: Sendable {
    public let zone: any LocalTimeZone
    /// The second kept: the instant's whole second, which the zone's offset is asked at, and the
    /// whole second of its time rounded to the millisecond, which the text shows (the two part
    /// in the last half millisecond of a second).
    private var second: (offsetAt: Double, shown: Int64)?
    /// Its text up to the seconds (`2026-03-29T03:00:00`), and the offset after them (`+02:00`).
    private var head: [UInt8] = []
    private var tail: [UInt8] = []

    public init(zone: any LocalTimeZone) { self.zone = zone }

    /// Appends `RFC3339.write(instant, utcOffsetSeconds: zone.utcOffsetSeconds(at: instant))`.
    public mutating func write(_ instant: Date, to out: inout [UInt8]) {
        let (shown, millis) = RFC3339.shownSecond(of: instant)
        let offsetAt = instant.timeIntervalSince1970.rounded(.down)
        if second?.offsetAt != offsetAt || second?.shown != shown {
            let offset = zone.utcOffsetSeconds(at: instant)
            head.removeAll(keepingCapacity: true)
            RFC3339.writeSecond(shown, utcOffsetSeconds: offset, to: &head)
            tail.removeAll(keepingCapacity: true)
            RFC3339.writeOffset(offset, to: &tail)
            second = (offsetAt, shown)
        }
        out.append(contentsOf: head)
        RFC3339.writeFraction(millis, to: &out)
        out.append(contentsOf: tail)
    }
}
