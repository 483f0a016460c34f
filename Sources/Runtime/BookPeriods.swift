import DayBook
import FlowCore
import FoundationEssentials
import Window

/// The day book as the window reads it: the first flow widget's last 30 days and the months of
/// the year so far, opened read-only for each page (the writer keeps writing meanwhile: SQLite's
/// WAL lets a reader in). No book yet, or one that cannot be read: no periods, and the page says
/// nothing of them.
struct BookPeriods: PeriodSource {
    let path: String
    let widget: String

    func periods(through now: Date, zone: any LocalTimeZone) -> PeriodRows? {
        guard let book = try? DayBook(path: path, create: false, readOnly: true) else { return nil }
        let today = zone.day(containing: now).date
        let lastDays = BookPeriod(first: CivilDate(daysSinceEpoch: today.daysSinceEpoch - 30), last: CivilDate(daysSinceEpoch: today.daysSinceEpoch - 1))
        let year = BookPeriod(first: CivilDate(year: today.year, month: 1, day: 1), last: today)
        guard let days = try? book.rows(of: lastDays, by: .day, zone: zone), let months = try? book.rows(of: year, by: .month, zone: zone) else {
            return nil
        }
        func rows(_ rows: [BookRow]) -> [PeriodRows.Row] {
            rows.filter { $0.widget == widget }.map { PeriodRows.Row(period: $0.label, accountsKWh: $0.accountsKWh, netCost: $0.money?.netCost) }
        }
        let currency = (days + months).lazy.compactMap(\.money).first?.currency.code
        return PeriodRows(days: rows(days), months: rows(months), currencyCode: currency)
    }
}
