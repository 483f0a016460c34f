import FlowCore

/// A span of whole local days the book is read for: `history --period`, a progress widget's
/// month, the status page's last 30 days.
public struct BookPeriod: Sendable, Equatable, CustomStringConvertible {
    public var first: CivilDate
    public var last: CivilDate

    public init(first: CivilDate, last: CivilDate) {
        self.first = first
        self.last = last
    }

    public var description: String { first == last ? first.description : "\(first)..\(last)" }

    /// Every date from `first` through `last`.
    public var dates: [CivilDate] {
        (first.daysSinceEpoch...max(first.daysSinceEpoch, last.daysSinceEpoch)).map(CivilDate.init(daysSinceEpoch:))
    }

    /// The words `history --period` takes, for its help and its errors.
    public static let words =
        "today, yesterday, week, month, year, billing, last Nd (last 30d), a day (2026-10-25) or FROM..TO"

    /// Reads a period relative to `today` (the local date now):
    /// - `today`, `yesterday`; `week`: Monday through today; `month`, `year`: the calendar's, through today;
    /// - `billing`: the billing month that holds today, from the last `billingDay` (1–28) on;
    /// - `last Nd` (`last 30d`, also `last30d`): the N days through today;
    /// - `2026-10-25`: that day; `2026-10-01..2026-10-31`: those days, both included.
    public static func parse(_ text: String, today: CivilDate, billingDay: Int = 1) -> BookPeriod? {
        let word = text.lowercased().filter { $0 != " " }
        let day = today.daysSinceEpoch
        switch word {
        case "today": return BookPeriod(first: today, last: today)
        case "yesterday": return BookPeriod(first: CivilDate(daysSinceEpoch: day - 1), last: CivilDate(daysSinceEpoch: day - 1))
        case "week": return BookPeriod(first: CivilDate(daysSinceEpoch: day - Weekday(of: today).rawValue), last: today)
        case "month": return BookPeriod(first: CivilDate(year: today.year, month: today.month, day: 1), last: today)
        case "year": return BookPeriod(first: CivilDate(year: today.year, month: 1, day: 1), last: today)
        case "billing": return billing(holding: today, billingDay: billingDay)
        default: break
        }
        if word.hasPrefix("last") {
            let count = word.dropFirst(4)
            guard count.hasSuffix("d"), let days = Int(count.dropLast()), (1...36_600).contains(days) else { return nil }
            return BookPeriod(first: CivilDate(daysSinceEpoch: day - days + 1), last: today)
        }
        let ends = word.split(separator: ".", omittingEmptySubsequences: false)
        if ends.count > 1 {
            guard ends.count == 3, ends[1].isEmpty, let first = CivilDate(String(ends[0])), let last = CivilDate(String(ends[2])),
                first <= last
            else { return nil }
            return BookPeriod(first: first, last: last)
        }
        return CivilDate(word).map { BookPeriod(first: $0, last: $0) }
    }

    /// The billing month that holds `date`: from its `billingDay` through the day before the next.
    public static func billing(holding date: CivilDate, billingDay: Int) -> BookPeriod {
        span(from: MoneyPeriod.billing.first(holding: date, billingDay: billingDay))
    }

    /// The calendar month that holds `date`.
    public static func month(holding date: CivilDate) -> BookPeriod {
        span(from: MoneyPeriod.month.first(holding: date, billingDay: 1))
    }

    /// The month from `first` through the day before the same day of the next month.
    static func span(from first: CivilDate) -> BookPeriod {
        BookPeriod(first: first, last: CivilDate(daysSinceEpoch: MoneyPeriod.month(after: first).daysSinceEpoch - 1))
    }
}
