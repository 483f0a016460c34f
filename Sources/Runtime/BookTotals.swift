import DayBook
import Delivery
import FlowCore
import FoundationEssentials

/// The sums of closed days a start needs before its first midnight, read from the day book:
/// the month's and the billing month's closed days (the engine's `periods`: a progress bar of the
/// month and the month's sensors), and, when the state has no lifetime accounts (lost, or
/// written by a release that kept none), the lifetime accounts since the book's first day.
///
/// The book is the record of every closed day, so nothing of it is saved again in the state;
/// a day that waits for the book (`BookQueue`, a book that could not be written) counts from the
/// queue. No book yet, or one that cannot be read: the queue's days alone.
enum BookTotals {
    /// Seeds `engine`'s periods, and `lifetime` when it has counted nothing, with the closed days
    /// before the engine's day (or the day of `now`, for an engine without one).
    static func seed(_ engine: inout FlowEngine, lifetime: inout LifetimeAccounts, bookPath: String, queue: BookQueue, zone: any LocalTimeZone, now: Date) {
        let book = try? DayBook(path: bookPath, create: false, readOnly: true)
        let today = engine.day?.date ?? zone.day(containing: now).date
        for period in PeriodTotals.summed {
            let first = period.first(holding: today, billingDay: engine.periods.billingDay)
            engine.periods.seed(period, holding: today, closed: closed(book: book, queue: queue, from: first, before: today))
        }
        if lifetime.throughDay == nil { lifetime = closed(book: book, queue: queue, from: nil, before: today) }
    }

    /// Each widget's closed days from `first` (nil: the book's first) through the day before
    /// `end`: the book's day rows, and the queue's days the book does not have yet. Money in
    /// another currency than the later days' starts the sum again, as `LifetimeAccounts` does.
    static func closed(book: DayBook?, queue: BookQueue, from first: CivilDate?, before end: CivilDate) -> LifetimeAccounts {
        let last = CivilDate(daysSinceEpoch: end.daysSinceEpoch - 1)
        let start = first ?? CivilDate(daysSinceEpoch: 0)
        guard start <= last else { return LifetimeAccounts() }
        let booked = (try? book?.days(from: start, through: last)) ?? []
        let bookedDays = Set(booked.map { "\($0.widget)\n\($0.date)" })
        let waiting = queue.days.filter { $0.date >= start && $0.date <= last && !bookedDays.contains("\($0.widget)\n\($0.date)") }
        var kWh: [String: [EnergyAccount: Double]] = [:]
        var money: [String: LifetimeAccounts.Money] = [:]
        var through: CivilDate?
        for day in (booked + waiting).sorted(by: { $0.date < $1.date }) {
            through = max(through ?? day.date, day.date)
            for (account, energy) in day.accountsKWh where energy.isFinite && energy >= 0 { kWh[day.widget, default: [:]][account, default: 0] += energy }
            guard let paid = day.money else { continue }
            var sum = money[day.widget].flatMap { $0.currencyCode == paid.currency.code ? $0 : nil } ?? LifetimeAccounts.Money(currencyCode: paid.currency.code)
            sum.importCost += paid.importCost
            sum.exportEarnings += paid.exportEarnings
            sum.standingCharge += paid.standingCharge
            money[day.widget] = sum
        }
        return LifetimeAccounts(throughDay: through, closedKWh: kWh, closedMoney: money)
    }
}

extension Bridge.State {
    /// A flow widget's accounts as the sinks take them: today's, with the lifetime accounts and
    /// the month's and the billing month's money. Accounts of a day already closed (sent by a
    /// tick before the midnight a later tick of the same batch closed) count in the closed days
    /// alone: the closed day is in both sums already, and counting it twice would make a lifetime
    /// sensor fall at the next push.
    func widgetAccounts(_ widget: String, at: Date, _ accounts: FlowEngine.NodeAccounts, money: MoneyReport?) -> WidgetAccounts {
        let day = zone.day(containing: at)
        let date = day.date
        let dayClosed = lifetime.throughDay.map { date <= $0 } ?? false
        var today = money
        if dayClosed {
            today?.importCost = 0
            today?.exportEarnings = 0
            today?.standingCharge = 0
        }
        var periodMoney: [MoneyPeriod: MoneyReport] = [:]
        for period in PeriodTotals.summed {
            periodMoney[period] = engine.periods.money(period, of: widget, today: today, on: date, zone: zone)
        }
        return WidgetAccounts(
            widget: widget, at: at, accountsKWh: accounts, money: money,
            lifetimeKWh: lifetime.totalKWh(of: widget, today: dayClosed ? [:] : FlowEngine.summed(accounts)), periodMoney: periodMoney,
            dayStart: day.start)
    }
}
