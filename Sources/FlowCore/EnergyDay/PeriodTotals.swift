import FoundationEssentials

/// The span of local days a figure of money counts: the day, the calendar month, or the billing
/// month (from the meter-reading day, `billing_day`, through the day before the next one).
public enum MoneyPeriod: String, Sendable, CaseIterable {
    case day, month, billing

    /// The first day of the period that holds `date`; `billingDay` (1–28) starts a billing month.
    public func first(holding date: CivilDate, billingDay: Int) -> CivilDate {
        switch self {
        case .day: return date
        case .month: return CivilDate(year: date.year, month: date.month, day: 1)
        case .billing:
            let start = CivilDate(year: date.year, month: date.month, day: billingDay)
            return date.day >= billingDay ? start : Self.month(before: start)
        }
    }

    /// The date one calendar month after `date` (its day kept: 1–28 is in every month).
    public static func month(after date: CivilDate) -> CivilDate {
        date.month == 12 ? CivilDate(year: date.year + 1, month: 1, day: date.day) : CivilDate(year: date.year, month: date.month + 1, day: date.day)
    }

    /// The date one calendar month before `date` (its day kept).
    public static func month(before date: CivilDate) -> CivilDate {
        date.month == 1 ? CivilDate(year: date.year - 1, month: 12, day: date.day) : CivilDate(year: date.year, month: date.month - 1, day: date.day)
    }

    /// How a text says which period a figure is of: `this month`.
    public var words: String {
        switch self {
        case .day: "today"
        case .month: "this month"
        case .billing: "this billing month"
        }
    }
}

/// The closed days of the month and of the billing month that hold the engine's day: with
/// today's figures, the month's money a progress bar and a subtitle show and the sensors Home
/// Assistant gets.
///
/// The engine keeps it as a value and adds each day it closes (as `LifetimeAccounts` adds them:
/// once by its date, an amended day by what it gained), so the month's figure never dips at
/// midnight, when the closed day leaves today's figures and joins the closed ones in the same
/// step. What it held before a start is no part of the state: the day book has every closed day,
/// and the daemon seeds the periods from it (`seed`) before the first event. A day of an earlier
/// period is ignored; one of a later period starts that period afresh.
public struct PeriodTotals: Sendable, Equatable {
    /// The closed days of one period so far.
    public struct Running: Sendable, Equatable {
        /// The period's first day.
        public var first: CivilDate
        public var closed: LifetimeAccounts
    }

    /// The day of the month a billing month starts on (1–28; 1: the calendar month).
    public let billingDay: Int
    /// The month's and the billing month's closed days (`.day` has none: today is all of it).
    public private(set) var running: [MoneyPeriod: Running] = [:]

    public init(billingDay: Int = 1) { self.billingDay = billingDay }

    /// The periods that sum closed days.
    public static let summed: [MoneyPeriod] = [.month, .billing]

    /// Takes the closed days `closed` of the period `period` that holds `today`, counted before
    /// today (from the day book): what a start begins with.
    public mutating func seed(_ period: MoneyPeriod, holding today: CivilDate, closed: LifetimeAccounts) {
        guard period != .day else { return }
        running[period] = Running(first: period.first(holding: today, billingDay: billingDay), closed: closed)
    }

    /// Takes over what `other` (a reloaded config's engine before) counted of each period that
    /// starts on the same day here: a new `billing_day:` starts the billing month afresh, to be
    /// seeded again from the book at the next start.
    public mutating func carry(_ other: PeriodTotals) {
        for (period, run) in other.running where period != .billing || other.billingDay == billingDay {
            running[period] = run
        }
    }

    /// Adds a day the engine closed to the periods that hold it.
    public mutating func add(_ day: FlowEngine.ClosedDay) {
        for period in Self.summed {
            let first = period.first(holding: day.date, billingDay: billingDay)
            if let current = running[period]?.first, first < current { continue }
            if running[period]?.first != first { running[period] = Running(first: first, closed: LifetimeAccounts()) }
            running[period]?.closed.add(day)
        }
    }

    /// Widget `widget`'s money of `period` through today (`date`): the closed days' and `today`'s.
    /// Only what the amounts add up to is known of the closed days, so the report has no saved
    /// figure, no unpriced energy and no prices; `dayStart` is the period's start. Nil without
    /// today's money (no tariff).
    public func money(_ period: MoneyPeriod, of widget: String, today: MoneyReport?, on date: CivilDate, zone: any LocalTimeZone) -> MoneyReport? {
        guard var report = today else { return nil }
        guard period != .day else { return report }
        let first = period.first(holding: date, billingDay: billingDay)
        report.gridOnlyCost = nil
        report.unpricedKWh = [:]
        report.importPricePerKWh = nil
        report.exportPricePerKWh = nil
        report.dayStart = zone.day(on: first)?.start
        if let run = running[period], run.first == first, let closed = run.closed.closedMoney[widget], closed.currencyCode == report.currency.code {
            report.importCost += closed.importCost
            report.exportEarnings += closed.exportEarnings
            report.standingCharge += closed.standingCharge
        }
        return report
    }
}
