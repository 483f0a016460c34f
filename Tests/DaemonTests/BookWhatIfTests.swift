import DayBook
import FlowCore
import Foundation
import Platform
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

    @Test func aTariffPricedByASourceIsRefused() throws {
        let folder = TemporaryFolder()
        let book = folder.url.appendingPathComponent("book.sqlite").path
        try Self.fortnight(into: book)
        let tariffPath = try folder.write("other.yaml", "tariff:\n  import: {price: spot}\n")
        let run = try runFlowbridge(["history", "--book", book, "--tariff", tariffPath, "--period", "2026-06-01"])
        #expect(run.status == 78, "\(run.out)\(run.err)")
    }
}
