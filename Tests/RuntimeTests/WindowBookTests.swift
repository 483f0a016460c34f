import DayBook
import FlowCore
import Foundation
import Rendering
import TestSupport
import ReplaySupport
import Testing
import Window

@testable import Runtime

/// The window over a real day book of 40 past days: `BookPeriods` reads its last 30 days and the
/// months of the year, and headless Chromium finds each of them on the page, as bars and rows
/// with their costs.
@Suite struct WindowBookTests {
    static let zone = FixedOffsetZone(offsetSeconds: 0)
    static let euro = Currency(code: "EUR")!

    /// The day `daysAgo` before today: figures of its own, so that a day shown in another's place
    /// or summed twice gives other numbers.
    static func day(_ daysAgo: Int, of widget: String = "power", today: CivilDate) -> BookDay {
        let date = CivilDate(daysSinceEpoch: today.daysSinceEpoch - daysAgo)
        let bounds = zone.day(on: date)!
        let consumption = 5 + Double(daysAgo) * 0.25
        let imported = consumption / 2
        return BookDay(
            widget: widget, date: date, start: bounds.start, end: bounds.end, hours: bounds.lengthHours,
            nodeAccountsKWh: ["output": [.consumption: consumption], "exchange": [.imported: imported]],
            money: BookMoney(currency: euro, importCost: imported * 0.30, exportEarnings: 0, standingCharge: 0.25))
    }

    /// A book of the 40 days before `today`, written as `BookWriter` writes it (`DayBook.write`),
    /// with another widget's days beside them.
    static func writeBook(at path: String, today: CivilDate) throws -> [BookDay] {
        let days = (1...40).map { day($0, today: today) }
        let book = try DayBook(path: path)
        try book.write(slots: [], days: days + (1...40).map { day($0, of: "other", today: today) })
        return days
    }

    /// The months of the year that `days` fall in, each with its days' consumption and net cost.
    static func months(of days: [BookDay], year: Int) -> [(label: String, consumptionKWh: Double, netCost: Double)] {
        let grouped = Dictionary(grouping: days.filter { $0.date.year == year }) { String($0.date.description.prefix(7)) }
        return grouped.keys.sorted().map { label in
            let month = grouped[label]!
            return (label, month.reduce(0) { $0 + ($1.accountsKWh[.consumption] ?? 0) }, month.reduce(0) { $0 + ($1.money?.netCost ?? 0) })
        }
    }

    @Test func bookPeriodsAreTheLast30DaysAndTheMonthsOfTheYear() throws {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("book.sqlite").path
        let now = Date()
        let today = Self.zone.localDate(at: now)
        let written = try Self.writeBook(at: path, today: today)
        let periods = try #require(BookPeriods(path: path, widget: "power").periods(through: now, zone: Self.zone))

        #expect(periods.currencyCode == "EUR")
        let expectedDays = written.filter { today.daysSinceEpoch - $0.date.daysSinceEpoch <= 30 }.sorted { $0.date < $1.date }
        #expect(periods.days.map(\.period) == expectedDays.map(\.date.description))
        #expect(periods.days.count == 30)
        for (row, day) in zip(periods.days, expectedDays) {
            #expect(row.accountsKWh == day.accountsKWh, "\(row.period)")
            #expect(abs((row.netCost ?? .nan) - day.money!.netCost) < 1e-9, "\(row.period)")
        }
        let expectedMonths = Self.months(of: written, year: today.year)
        #expect(periods.months.map(\.period) == expectedMonths.map(\.label))
        for (row, month) in zip(periods.months, expectedMonths) {
            #expect(abs((row.accountsKWh[.consumption] ?? .nan) - month.consumptionKWh) < 1e-9, "\(row.period)")
            #expect(abs((row.netCost ?? .nan) - month.netCost) < 1e-9, "\(row.period)")
        }
    }

    @Test func withoutABookThereAreNoPeriods() {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("none.sqlite").path
        #expect(BookPeriods(path: path, widget: "power").periods(through: Date(), zone: Self.zone) == nil)
        #expect(!FileManager.default.fileExists(atPath: path), "reading the book made one")
    }
}

/// The page over that book in headless Chromium.
@Suite(.enabled(if: MosquittoBroker.isAvailable && Chromium.isAvailable, "mosquitto or chromium not installed (make test installs them)"), .ownThread)
struct WindowBookPageTests {
    @Test func chromiumShowsTheBooksLast30DaysAndMonthsWithTheirCosts() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let book = folder.url.appendingPathComponent("book.sqlite").path
        let today = WindowBookTests.zone.localDate(at: Date())
        let written = try WindowBookTests.writeBook(at: book, today: today)
        let config = WindowPageTests.config(broker: broker.port, window: 0, state: folder.url.appendingPathComponent("state.json").path)
            + "\nbook_file: \(book)\n"
        let daemon = try RunTests.Daemon(config: config, folder: folder)
        let port = try #require(await daemon.windowPort(), "\(daemon.text)")

        let dom = try Chromium.dumpDOM("http://127.0.0.1:\(port)/", in: folder)
        func fixed(_ value: Double) -> String { DisplayNumber.fixed(value, decimals: 2) }
        // Each of the last 30 days: its bar (consumption and cost) and its row; the 31st is not there.
        for day in written.filter({ today.daysSinceEpoch - $0.date.daysSinceEpoch <= 30 }) {
            let consumption = day.accountsKWh[.consumption]!
            let cost = day.money!.netCost
            #expect(dom.contains("<title>\(day.date): \(DisplayNumber.fixed(consumption, decimals: 1)) kWh, \(fixed(cost)) EUR</title>"), "\(day.date)")
            #expect(
                dom.contains(#"<tr><td>\#(day.date)</td><td class="n">\#(fixed(consumption))</td><td class="n">\#(fixed(day.accountsKWh[.imported]!))</td><td class="n">\#(fixed(cost))</td></tr>"#),
                "\(day.date)")
        }
        for day in written where today.daysSinceEpoch - day.date.daysSinceEpoch > 30 {
            #expect(!dom.contains("<td>\(day.date)</td>"), "\(day.date) is older than 30 days")
        }
        // The months of the year: their bars and rows hold the sums of their days.
        let months = WindowBookTests.months(of: written, year: today.year)
        #expect(!months.isEmpty)
        for month in months {
            #expect(dom.contains("<title>\(month.label): \(DisplayNumber.fixed(month.consumptionKWh, decimals: 1)) kWh, \(fixed(month.netCost)) EUR</title>"), "\(month.label)\n\(dom)")
            #expect(dom.contains(#"<tr><td>\#(month.label)</td><td class="n">\#(fixed(month.consumptionKWh))</td>"#), "\(month.label)")
        }
        await daemon.stop()
    }
}
