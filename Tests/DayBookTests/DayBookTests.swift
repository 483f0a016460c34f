import DayBook
import FlowCore
import Foundation
import Platform
import Testing

/// A book in a folder of its own, removed at the end.
final class BookFolder {
    let path: String
    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("flowbridge-book-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    var book: String { "\(path)/book.sqlite" }
}

let berlin = SystemTimeZone(identifier: "Europe/Berlin")!
let euro = Currency.euro

/// A home's slot with easy numbers: production 0.1 kWh, consumption 0.2, import 0.15, export 0.05,
/// import at 0.30 and export at 0.08 €/kWh, standing charge 1/96 of 0.48 €.
func homeSlot(_ start: Date, widget: String = "power", scale: Double = 1) -> ClosedSlot {
    ClosedSlot(
        widget: widget, start: start,
        energyKWh: [
            "inputs[0]": [.production: 0.1 * scale], "output": [.consumption: 0.2 * scale],
            "exchange": [.imported: 0.15 * scale, .exported: 0.05 * scale],
        ],
        money: SlotMoney(
            currency: euro, importCost: 0.15 * scale * 0.30, exportEarnings: 0.05 * scale * 0.08, standingCharge: 0.005,
            importPricePerKWh: 0.30, exportPricePerKWh: 0.08))
}

/// Every slot of a local day, and the day row that is their sum.
func homeDay(_ date: CivilDate, zone: any LocalTimeZone = berlin) -> (slots: [ClosedSlot], day: BookDay) {
    let bounds = zone.day(on: date)!
    let starts = stride(from: bounds.start.timeIntervalSince1970, to: bounds.end.timeIntervalSince1970, by: ClosedSlot.seconds)
    let slots = starts.map { homeSlot(Date(timeIntervalSince1970: $0)) }
    var nodes: [String: [EnergyAccount: Double]] = [:]
    var money = BookMoney(currency: euro, importCost: 0, exportEarnings: 0, standingCharge: 0, saved: 1.5)
    for slot in slots {
        for (node, accounts) in slot.energyKWh {
            for (account, energy) in accounts { nodes[node, default: [:]][account, default: 0] += energy }
        }
        money.add(BookMoney(slot: slot.money!))
    }
    money.saved = 1.5
    let day = BookDay(
        widget: "power", date: date, start: bounds.start, end: bounds.end, hours: bounds.lengthHours, nodeAccountsKWh: nodes,
        levelRangePercent: 20...80, money: money)
    return (slots, day)
}

@Suite struct DayBookTests {
    @Test func slotsAndDaysReadBackAsWritten() throws {
        let folder = BookFolder()
        let book = try DayBook(path: folder.book)
        let (slots, day) = homeDay(CivilDate(year: 2026, month: 6, day: 10))
        try book.write(slots: slots, days: [day])
        #expect(try book.slots(from: day.start, to: day.end) == slots)
        #expect(try book.days(from: day.date, through: day.date) == [day])
    }

    @Test func aSlotWrittenTwiceIsOneRowWithTheLaterFigures() throws {
        let folder = BookFolder()
        let book = try DayBook(path: folder.book)
        let start = Date(timeIntervalSince1970: 1_780_000_200)
        try book.write(slots: [homeSlot(start), homeSlot(start.addingTimeInterval(900))], days: [])
        var again = homeSlot(start, scale: 2)
        again.energyKWh["storage"] = [.charged: 0.3]
        try book.write(slots: [again], days: [])
        // Reopened: what is read comes from the file.
        let reopened = try DayBook(path: folder.book, readOnly: true)
        let read = try reopened.slots(from: start, to: start.addingTimeInterval(1800))
        #expect(read.count == 2)
        #expect(read[0] == again)
        #expect(try reopened.summary().slotCount == 2)
    }

    /// A slot rewritten with fewer nodes (a node removed from the config) keeps none of the old ones.
    @Test func aRewrittenSlotKeepsNoNodeItNoLongerHas() throws {
        let folder = BookFolder()
        let book = try DayBook(path: folder.book)
        let start = Date(timeIntervalSince1970: 1_780_000_200)
        var slot = homeSlot(start)
        try book.write(slots: [slot], days: [])
        slot.energyKWh["inputs[0]"] = nil
        try book.write(slots: [slot], days: [])
        #expect(try book.slots(from: start, to: start.addingTimeInterval(900)) == [slot])
    }

    /// UTC-aligned slots: a local day of 23 hours holds 92, one of 25 hours 100, and the slots of
    /// each day add up to its day row.
    @Test(arguments: [(CivilDate(year: 2026, month: 3, day: 29), 92, 23.0), (CivilDate(year: 2026, month: 10, day: 25), 100, 25.0),
        (CivilDate(year: 2026, month: 10, day: 26), 96, 24.0)])
    func aDaysSlotsAddUpToItsRow(date: CivilDate, slotCount: Int, hours: Double) throws {
        let folder = BookFolder()
        let book = try DayBook(path: folder.book)
        let (slots, day) = homeDay(date)
        try book.write(slots: slots, days: [day])
        let period = BookPeriod(first: date, last: date)
        let slotRows = try book.rows(of: period, by: .slot, zone: berlin)
        #expect(slotRows.count == slotCount)
        let dayRows = try book.rows(of: period, by: .day, zone: berlin)
        #expect(dayRows.count == 1)
        #expect(dayRows[0].hours == hours)
        let summed = try book.rows(of: period, by: .month, zone: berlin)
        for account in EnergyAccount.allCases {
            let fromSlots = slotRows.map { $0.accountsKWh[account] ?? 0 }.reduce(0, +)
            #expect(abs(fromSlots - (dayRows[0].accountsKWh[account] ?? 0)) < 1e-9, "\(account)")
            #expect(abs(fromSlots - (summed[0].accountsKWh[account] ?? 0)) < 1e-9, "\(account)")
        }
        let slotNet = slotRows.map { $0.money!.netCost }.reduce(0, +)
        #expect(abs(slotNet - dayRows[0].money!.netCost) < 1e-9)
        // Hour rows: 23 or 25 of them, each four slots.
        #expect(try book.rows(of: period, by: .hour, zone: berlin).count == Int(hours))
    }

    /// Hour rows follow the local clock, whatever the zone's offset: a day of Kolkata (+05:30) or
    /// Kathmandu (+05:45) is 24 rows that each start on a local full hour and hold four slots,
    /// where hours cut on UTC would give 25 rows of partial hours.
    @Test(arguments: ["Asia/Kolkata", "Asia/Kathmandu", "Europe/Berlin"])
    func hourRowsAreLocalHours(_ identifier: String) throws {
        let zone = SystemTimeZone(identifier: identifier)!
        let folder = BookFolder()
        let book = try DayBook(path: folder.book)
        let date = CivilDate(year: 2026, month: 6, day: 10)
        let (slots, day) = homeDay(date, zone: zone)
        try book.write(slots: slots, days: [day])
        let rows = try book.rows(of: BookPeriod(first: date, last: date), by: .hour, zone: zone)
        #expect(rows.count == 24)
        for row in rows {
            #expect(row.hours == 1, "\(row.label)")
            #expect(row.end.timeIntervalSince(row.start) == 3600, "\(row.label)")
            #expect(row.label.dropFirst(13).hasPrefix(":00:00"), "\(row.label) starts on a local full hour")
        }
        #expect(rows.first?.start == day.start)
        let importedKWh: Double = rows.map { $0.accountsKWh[.imported] ?? 0 }.reduce(0, +)
        #expect(abs(importedKWh - (day.accountsKWh[.imported] ?? 0)) < 1e-9)
    }

    /// A day not closed yet (today) is read as the sum of its closed slots.
    @Test func aDayWithoutItsRowIsTheSumOfItsSlots() throws {
        let folder = BookFolder()
        let book = try DayBook(path: folder.book)
        let date = CivilDate(year: 2026, month: 6, day: 11)
        let (slots, _) = homeDay(date)
        try book.write(slots: Array(slots.prefix(40)), days: [])
        let rows = try book.rows(of: BookPeriod(first: date, last: date), by: .day, zone: berlin)
        #expect(rows.count == 1)
        #expect(rows[0].dayCount == 0)
        #expect(abs((rows[0].accountsKWh[.imported] ?? 0) - 40 * 0.15) < 1e-9)
    }

    @Test func summarySaysTheDaysHeldAndTheirRange() throws {
        let folder = BookFolder()
        let book = try DayBook(path: folder.book)
        for offset in 0..<3 {
            let (slots, day) = homeDay(CivilDate(daysSinceEpoch: CivilDate(year: 2026, month: 1, day: 30).daysSinceEpoch + offset))
            try book.write(slots: slots, days: [day])
        }
        let summary = try book.summary()
        #expect(summary.dayCount == 3)
        #expect(summary.slotCount == 3 * 96)
        #expect(summary.firstDay == CivilDate(year: 2026, month: 1, day: 30))
        #expect(summary.lastDay == CivilDate(year: 2026, month: 2, day: 1))
        #expect(summary.sizeBytes > 0)
    }

    @Test func aFileThatIsNoBookIsRefusedWithItsName() throws {
        let folder = BookFolder()
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: folder.book))
        #expect {
            _ = try DayBook(path: folder.book)
        } throws: { error in
            let error = error as! BookError
            return error.path == folder.book && error.description.contains("not a database")
        }
    }

    @Test func aNewerSchemaIsNeverWritten() throws {
        let folder = BookFolder()
        _ = try DayBook(path: folder.book)
        let status = try runSQLite(folder.book, "PRAGMA user_version = 99;")
        #expect(status == 0)
        #expect {
            _ = try DayBook(path: folder.book)
        } throws: { error in (error as! BookError).reason.contains("schema version 99") }
    }

    /// `sqlite3` opens the book: its tables carry the units in their column names.
    @Test func sqlite3ReadsTheBook() throws {
        let folder = BookFolder()
        let book = try DayBook(path: folder.book)
        let (slots, day) = homeDay(CivilDate(year: 2026, month: 6, day: 10))
        try book.write(slots: slots, days: [day])
        #expect(try runSQLite(folder.book, "PRAGMA user_version;") == 0)
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('select round(sum(import_kWh),6), count(*) from slot_nodes where node=\"exchange\"').fetchone())", folder.book]
        process.standardOutput = pipe
        try process.run()
        process.waitUntilExit()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(out.trimmingCharacters(in: .whitespacesAndNewlines) == "(14.4, 96)")
    }
}

/// Runs SQL on a book with Python's sqlite3 module (a reader other than flowbridge).
func runSQLite(_ path: String, _ sql: String) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()", path, sql]
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}
