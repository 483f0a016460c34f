import FlowCore
import FoundationEssentials

/// How a period's rows are cut.
public enum BookGrouping: String, Sendable, CaseIterable {
    /// Each 15-minute slot.
    case slot
    /// Each local hour: four slots (the slots are UTC-aligned, and every zone's offset is a whole
    /// number of quarter hours, so a local hour is four whole slots in Kolkata or Kathmandu too).
    case hour
    /// Each local day.
    case day
    /// Each local calendar month.
    case month
}

/// One row of a period: a flow widget's accounts and money from `start` to `end`, the sum of the
/// days (or slots) it holds. `history` prints these; the status page shows them.
public struct BookRow: Sendable, Equatable {
    public var start: Date
    public var end: Date
    /// What the row is called: `2026-10-25`, `2026-10`, or its local start for slots and hours
    /// (`2026-10-25T02:15:00+01:00`).
    public var label: String
    public var widget: String
    public var accountsKWh: [EnergyAccount: Double]
    /// Nil without a tariff.
    public var money: BookMoney?
    /// The hours the row counts (a 25-hour day is 25).
    public var hours: Double
    /// How many closed days it holds (0 for slot and hour rows, and for a day not closed yet).
    public var dayCount: Int
}

extension DayBook {
    /// The rows of `period`, cut `by`, in `zone`: each widget's, oldest first. Day and month rows
    /// are the sums of the day rows; a day not closed yet (today) is the sum of its closed slots.
    public func rows(of period: BookPeriod, by grouping: BookGrouping, zone: any LocalTimeZone) throws(BookError) -> [BookRow] {
        guard let firstDay = zone.day(on: period.first) ?? zone.day(on: CivilDate(daysSinceEpoch: period.first.daysSinceEpoch + 1)),
            let lastDay = zone.day(on: period.last) ?? zone.day(on: CivilDate(daysSinceEpoch: period.last.daysSinceEpoch - 1))
        else { return [] }
        switch grouping {
        case .slot, .hour:
            let step = grouping == .slot ? ClosedSlot.seconds : 3600
            return Self.merged(
                try slots(from: firstDay.start, to: lastDay.end).map { slot in
                    // Cut on the local clock: an hour row is the hour a person reads on it.
                    let offset = Double(zone.utcOffsetSeconds(at: slot.start))
                    let start = Date(timeIntervalSince1970: ((slot.start.timeIntervalSince1970 + offset) / step).rounded(.down) * step - offset)
                    return BookRow(
                        start: start, end: start.addingTimeInterval(step), label: RFC3339.format(start, utcOffsetSeconds: zone.utcOffsetSeconds(at: start)), widget: slot.widget,
                        accountsKWh: BookMoney.sum(slot.energyKWh.values), money: slot.money.map(BookMoney.init(slot:)),
                        hours: ClosedSlot.seconds / 3600, dayCount: 0)
                })
        case .day, .month:
            let closed = try days(from: period.first, through: period.last)
            var rows = closed.map { day in
                BookRow(
                    start: day.start, end: day.end, label: day.date.description, widget: day.widget, accountsKWh: day.accountsKWh,
                    money: day.money, hours: day.hours, dayCount: 1)
            }
            // Days without a day row (today, or a day whose close waits for the book): their slots.
            let closedDates = Set(closed.map(\.date))
            for date in period.dates where !closedDates.contains(date) {
                guard let day = zone.day(on: date) else { continue }
                let partial = try slots(from: day.start, to: day.end).map { slot in
                    BookRow(
                        start: day.start, end: day.end, label: date.description, widget: slot.widget,
                        accountsKWh: BookMoney.sum(slot.energyKWh.values), money: slot.money.map(BookMoney.init(slot:)),
                        hours: ClosedSlot.seconds / 3600, dayCount: 0)
                }
                rows += Self.merged(partial)
            }
            rows.sort { ($0.start, $0.widget) < ($1.start, $1.widget) }
            guard grouping == .month else { return Self.merged(rows) }
            return Self.merged(
                rows.map { row in
                    let date = zone.localDate(at: row.start)
                    let month = BookPeriod.month(holding: date)
                    var monthly = row
                    monthly.label = String(date.description.prefix(7))
                    monthly.start = max(zone.day(on: month.first)?.start ?? row.start, firstDay.start)
                    monthly.end = min(zone.day(on: month.last)?.end ?? row.end, lastDay.end)
                    return monthly
                })
        }
    }

    /// Each widget's rows added up into one (per currency), labelled `total`.
    public static func total(_ rows: [BookRow]) -> [BookRow] {
        merged(rows.map { row in
            var total = row
            total.label = "total"
            return total
        })
    }

    /// Rows with the same label, widget and currency added up, in the order they first came.
    static func merged(_ rows: [BookRow]) -> [BookRow] {
        var merged: [BookRow] = []
        var index: [String: Int] = [:]
        for row in rows {
            let key = "\(row.label)\n\(row.widget)\n\(row.money?.currency.code ?? "")"
            guard let position = index[key] else {
                index[key] = merged.count
                merged.append(row)
                continue
            }
            merged[position].accountsKWh = BookMoney.sum([merged[position].accountsKWh, row.accountsKWh])
            if let money = row.money { merged[position].money?.add(money) }
            merged[position].hours += row.hours
            merged[position].dayCount += row.dayCount
            merged[position].start = min(merged[position].start, row.start)
            merged[position].end = max(merged[position].end, row.end)
        }
        return merged
    }
}
