import DayBook
import FlowCore
import Foundation
import Platform
import TestSupport
import ReplaySupport
import Testing

/// `history --tariff`: a fortnight of stored slots priced under two other tariffs gives the bills
/// worked out by hand.
@Suite struct BookWhatIfTests {
    /// 14 June days in Berlin, each slot 0.15 kWh imported and 0.05 kWh exported, billed at 0.30
    /// and 0.08 with 0.48 a day standing.
    static func fortnight(into path: String) throws {
        let zone = SystemTimeZone(identifier: "Europe/Berlin")!
        let book = try DayBook(path: path)
        for offset in 0..<14 {
            let day = zone.day(on: CivilDate(daysSinceEpoch: CivilDate(year: 2026, month: 6, day: 1).daysSinceEpoch + offset))!
            let slots = stride(from: day.start.timeIntervalSince1970, to: day.end.timeIntervalSince1970, by: ClosedSlot.seconds).map { start in
                ClosedSlot(
                    widget: "power", start: Date(timeIntervalSince1970: start), energyKWh: ["exchange": [.imported: 0.15, .exported: 0.05]],
                    money: SlotMoney(
                        currency: .euro, importCost: 0.045, exportEarnings: 0.004, standingCharge: 0.005, importPricePerKWh: 0.30,
                        exportPricePerKWh: 0.08))
            }
            try book.write(slots: slots, days: [])
        }
    }

    /// Fixed: a day imports 14.4 kWh × 0.25 = 3.60, exports 4.8 kWh × 0.05 = 0.24, stands 0.50:
    /// 3.86 a day, 54.04 the fortnight.
    /// Time of use, 0.35 from 07:00 to 22:00 and 0.15 else, fees 0.02, VAT 10 %: a day imports
    /// 9.0 kWh at 0.407 (3.663) and 5.4 kWh at 0.187 (1.0098), exports 4.8 kWh × 0.08 = 0.384,
    /// stands 0.30: 4.5888 a day, 64.2432 the fortnight.
    @Test(arguments: [
        ("import: {price: 0.25}\n  export: {price: 0.05}\n  standing_charge: 0.50", 54.04),
        ("import:\n    zones:\n      - {days: daily, from: \"07:00\", to: \"22:00\", price: 0.35}\n      - {price: 0.15}\n    fees: 0.02\n    vat: 10%\n  export: {price: 0.08}\n  standing_charge: 0.30", 64.2432),
    ])
    func aFortnightUnderAnotherTariffIsItsHandComputedBill(tariff: String, bill: Double) throws {
        let folder = TemporaryFolder()
        let book = folder.url.appendingPathComponent("book.sqlite").path
        try Self.fortnight(into: book)
        let tariffPath = try folder.write("other.yaml", "tariff:\n  currency: EUR\n  \(tariff)\n")
        let run = try runFlowbridge(
            ["history", "--book", book, "--period", "2026-06-01..2026-06-14", "--tariff", tariffPath, "--format", "json"],
            environment: ["TZ": "Europe/Berlin"])
        #expect(run.status == 0, "\(run.err)")
        let json = try JSONValue(parsing: run.out)
        let total = try #require(json["total"]?.arrayValue?.first)
        let other = try #require(total["other_tariff"]?["net_cost"]?.numberValue)
        #expect(abs(other - bill) < 0.005, "\(other) for \(bill)")
        // The bill as billed: 14 × (14.4 × 0.30 − 4.8 × 0.08 + 0.48) = 14 × 4.416 = 61.824.
        let billed = try #require(total["money"]?["net_cost"]?.numberValue)
        #expect(abs(billed - 61.824) < 0.005)
        #expect(abs((total["difference"]?.numberValue ?? 0) - (bill - 61.824)) < 0.005)
        #expect(json["rows"]?.arrayValue?.count == 14)
    }

    /// A CSV of spot prices for the fortnight, Berlin's half days: 0.20 before noon, 0.40 after.
    /// `through`: the last day it has prices for.
    static func spotPrices(through last: Int = 14) -> String {
        var lines = ["start,end,spot"]
        for day in 1...last {
            let date = String(format: "2026-06-%02d", day)
            let next = String(format: "2026-06-%02d", day + 1)
            lines.append("\(date)T00:00:00+02:00,\(date)T12:00:00+02:00,0.20")
            lines.append("\"\(date)T12:00:00+02:00\", \"\(next)T00:00:00+02:00\", 0.40")
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    static let spotTariff = "tariff:\n  currency: EUR\n  import: {price: spot, fees: 0.02}\n  export: {price: 0.05}\n  standing_charge: 0.50\n"

    /// A dynamic tariff over the fortnight, its spot prices from a CSV: a day imports 7.2 kWh at
    /// 0.22 and 7.2 kWh at 0.42 (4.608), exports 4.8 kWh × 0.05 = 0.24, stands 0.50: 4.868 a day,
    /// 68.152 the fortnight. Without the last day's prices that day's 14.4 kWh are unpriced, said,
    /// and its bill has only its export and standing charge: 13 × 4.868 − 0.24 + 0.50 = 63.544.
    @Test(arguments: [(14, 68.152, 0.0), (13, 63.544, 14.4)])
    func aDynamicTariffIsPricedFromTheGivenPrices(through last: Int, bill: Double, unpricedKWh: Double) throws {
        let folder = TemporaryFolder()
        let book = folder.url.appendingPathComponent("book.sqlite").path
        try Self.fortnight(into: book)
        let tariffPath = try folder.write("other.yaml", Self.spotTariff)
        let pricesPath = try folder.write("spot.csv", Self.spotPrices(through: last))
        let arguments = ["history", "--book", book, "--period", "2026-06-01..2026-06-14", "--tariff", tariffPath, "--prices", pricesPath]
        let run = try runFlowbridge(arguments + ["--format", "json"], environment: ["TZ": "Europe/Berlin"])
        #expect(run.status == 0, "\(run.err)")
        let total = try #require(try JSONValue(parsing: run.out)["total"]?.arrayValue?.first)
        #expect(abs((total["other_tariff"]?["net_cost"]?.numberValue ?? .nan) - bill) < 1e-6, "\(total)")
        #expect(abs((total["other_tariff"]?["unpriced_kWh"]?["import"]?.numberValue ?? 0) - unpricedKWh) < 1e-6, "\(total)")
        let table = try runFlowbridge(arguments, environment: ["TZ": "Europe/Berlin"])
        #expect(table.out.contains("no price for 14.400 kWh") == (unpricedKWh > 0), "\(table.out)")
    }

    /// A price that changes inside a slot prices each part of the slot's energy (taken as spread
    /// over its 15 minutes) at its own: June 1st's first slot imports 0.075 kWh at 0.22 and 0.075 at
    /// 0.42 (0.048), its other 95 slots 14.25 kWh at 0.42 (5.985); with the export (0.24) and the
    /// standing charge (0.50): 6.293.
    @Test func aPriceChangeInsideASlotSplitsItsEnergy() throws {
        let folder = TemporaryFolder()
        let book = folder.url.appendingPathComponent("book.sqlite").path
        try Self.fortnight(into: book)
        let csv = "start,end,spot\n2026-06-01T00:00:00+02:00,2026-06-01T00:07:30+02:00,0.20\n2026-06-01T00:07:30+02:00,2026-06-02T00:00:00+02:00,0.40\n"
        let run = try runFlowbridge(
            [
                "history", "--book", book, "--period", "2026-06-01", "--tariff", try folder.write("other.yaml", Self.spotTariff),
                "--prices", try folder.write("spot.csv", csv), "--format", "json",
            ], environment: ["TZ": "Europe/Berlin"])
        #expect(run.status == 0, "\(run.err)")
        let total = try #require(try JSONValue(parsing: run.out)["total"]?.arrayValue?.first)
        #expect(abs((total["other_tariff"]?["net_cost"]?.numberValue ?? .nan) - 6.293) < 1e-6, "\(total)")
    }

    /// A price list that cannot be right is refused with the line that says why, and no bill.
    @Test(arguments: [
        ("begin,end,spot\n", "line 1"),
        ("start,end,spot\n2026-06-01T00:00:00,2026-06-01T12:00:00,0.2\n", "line 2: spot: '2026-06-01T00:00:00' has no zone"),
        ("start,end,spot\n2026-06-01T12:00:00Z,2026-06-01T00:00:00Z,0.2\n", "line 2: spot: ends at"),
        ("start,end,spot\n2026-06-01T00:00:00Z,2026-06-01T12:00:00Z,cheap\n", "line 2: spot: the price"),
        ("start,end,spot\n2026-06-01T00:00:00Z,2026-06-01T12:00:00Z\n", "line 2: 2 fields"),
        ("start,end,spot\n2026-06-01T00:00:00Z,2026-06-01T12:00:00Z,0.2\n2026-06-01T11:00:00Z,2026-06-01T13:00:00Z,0.3\n", "overlap"),
        ("start,end,spot\n2026-06-01T00:00:00Z,2026-06-01T12:00:00Z,4000\n", "beyond any tariff's price"),
    ])
    func aPriceListThatCannotBeRightIsRefused(csv: String, reason: String) throws {
        let folder = TemporaryFolder()
        let book = folder.url.appendingPathComponent("book.sqlite").path
        try Self.fortnight(into: book)
        let run = try runFlowbridge([
            "history", "--book", book, "--period", "2026-06-01", "--tariff", try folder.write("other.yaml", Self.spotTariff),
            "--prices", try folder.write("spot.csv", csv),
        ])
        #expect(run.status == 65, "\(run.out)\(run.err)")
        #expect(run.err.contains(reason), "\(run.err)")
    }

    @Test func aTariffPricedByASourceIsRefused() throws {
        let folder = TemporaryFolder()
        let book = folder.url.appendingPathComponent("book.sqlite").path
        try Self.fortnight(into: book)
        let tariffPath = try folder.write("other.yaml", "tariff:\n  import: {price: spot}\n")
        let run = try runFlowbridge(["history", "--book", book, "--tariff", tariffPath, "--period", "2026-06-01"])
        #expect(run.status == 78, "\(run.out)\(run.err)")
        #expect(run.err.contains("--prices"), "\(run.err)")
    }
}
