import Commands
import Configuration
import FlowCore
import FoundationEssentials
import Platform
import TestSupport
import ReplaySupport
import Testing

/// The day's money through `replay`, each case computed by hand in its comments: every kWh priced
/// at the price in force while it flowed.
@Suite struct TariffReplayTests: TariffHome {
    static let berlin = SystemTimeZone(identifier: "Europe/Berlin")!

    // MARK: - Fixed prices, fees and VAT, negative prices

    struct FixedCase: Sendable, CustomTestStringConvertible {
        var name: String
        var tariff: String
        var gridW: Double
        var importCost: Double
        var exportEarnings: Double
        var net: Double
        var saved: Double
        var testDescription: String { name }
    }

    /// Two hours, 10:00 to 12:00 UTC, at a constant rate: 2 kWh imported at 1 kW, or exported at
    /// −1 kW.
    static let fixedCases: [FixedCase] = [
        // 2 kWh × 0.30 = 0.60; the home used the same 2 kWh from the grid: saved 0.
        FixedCase(name: "a fixed price", tariff: "  import: {price: 0.30}", gridW: 1000, importCost: 0.60, exportEarnings: 0, net: 0.60, saved: 0),
        // (0.30 + 0.12) × 1.19 = 0.4998 per kWh; × 2 kWh = 0.9996.
        FixedCase(
            name: "fees and VAT", tariff: "  import: {price: 0.30, fees: 0.12, vat: 19%}", gridW: 1000, importCost: 0.9996, exportEarnings: 0,
            net: 0.9996, saved: 0),
        // Import at −0.10: 2 kWh × −0.10 = −0.20, the grid pays for the import.
        FixedCase(name: "a negative import price", tariff: "  import: {price: -0.10}", gridW: 1000, importCost: -0.20, exportEarnings: 0, net: -0.20, saved: 0),
        // Export at 0.08: 2 kWh × 0.08 = 0.16 earned; net −0.16. Consumption is 0 (the balance
        // clamps at 0), so grid-only 0 and saved 0 − (−0.16) = 0.16.
        FixedCase(
            name: "export earns", tariff: "  import: {price: 0.30}\n  export: {price: 0.08}", gridW: -1000, importCost: 0, exportEarnings: 0.16,
            net: -0.16, saved: 0.16),
        // Export at −0.05: 2 kWh × −0.05 = −0.10 earned, so exporting cost 0.10: net +0.10.
        FixedCase(
            name: "a negative export price costs", tariff: "  import: {price: 0.30}\n  export: {price: -0.05}", gridW: -1000, importCost: 0,
            exportEarnings: -0.10, net: 0.10, saved: -0.10),
    ]

    @Test(arguments: fixedCases)
    func fixedPrices(_ test: FixedCase) throws {
        let (report, _) = try Self.money(
            Self.config(tariff: test.tariff), Self.minutes(from: Self.time("2026-06-01T10:00:00Z"), to: Self.time("2026-06-01T12:00:00Z")) { _ in test.gridW })
        #expect(abs(report.importCost - test.importCost) < 1e-9, "\(report.text)")
        #expect(abs(report.exportEarnings - test.exportEarnings) < 1e-9, "\(report.text)")
        #expect(abs(report.netCost - test.net) < 1e-9, "\(report.text)")
        #expect(abs((report.saved ?? .nan) - test.saved) < 1e-9, "\(report.text)")
        #expect(report.unpricedTotalKWh == 0)
    }

    // MARK: - Time of use across both DST changes

    struct DayCase: Sendable, CustomTestStringConvertible {
        var date: String
        var hours: Double
        /// 1 kW all day: the kWh at the day price (07:00–22:00) and at the night price.
        var dayKWh: Double
        var nightKWh: Double
        var testDescription: String { "\(date) (\(hours) h)" }
    }

    /// Europe/Berlin, 1 kW imported all day; 0.35 from 07:00 to 22:00 local, 0.25 the rest.
    static let dstDays: [DayCase] = [
        // 29 March: 02:00 becomes 03:00; the night before 07:00 has 6 hours, the day 15 and
        // 22:00–24:00 two: 15 × 0.35 + 8 × 0.25 = 5.25 + 2.00 = 7.25.
        DayCase(date: "2026-03-29", hours: 23, dayKWh: 15, nightKWh: 8),
        // 1 June: 15 × 0.35 + 9 × 0.25 = 5.25 + 2.25 = 7.50.
        DayCase(date: "2026-06-01", hours: 24, dayKWh: 15, nightKWh: 9),
        // 25 October: 03:00 becomes 02:00 again; the night before 07:00 has 8 hours:
        // 15 × 0.35 + 10 × 0.25 = 5.25 + 2.50 = 7.75.
        DayCase(date: "2026-10-25", hours: 25, dayKWh: 15, nightKWh: 10),
    ]

    @Test(arguments: dstDays)
    func timeOfUseZonesFollowTheLocalClockAcrossDST(_ test: DayCase) throws {
        let day = Self.berlin.day(on: CivilDate(test.date)!)!
        #expect(day.lengthHours == test.hours)
        let tariff = """
              import:
                zones:
                  - {days: mon-sun, from: "07:00", to: "22:00", price: 0.35}
                  - {price: 0.25}
              standing_charge: 0.40
            """
        // A minute past midnight after, so that the day closes.
        let messages = Self.minutes(from: day.start, to: day.end.addingTimeInterval(60)) { _ in 1000 }
        let run = try replayWithLog(config: Self.config(tariff: tariff, timezone: "Europe/Berlin"), trace: Self.lines(messages), final: false)
        let closed = try #require(run.engine.lastClosedDay?.money["home"])
        #expect(abs(closed.importCost - (test.dayKWh * 0.35 + test.nightKWh * 0.25)) < 1e-9, "\(closed.text)")
        // Exactly one day's standing charge, whatever the day's length.
        #expect(abs(closed.standingCharge - 0.40) < 1e-12)
        #expect(abs(closed.netCost - (test.dayKWh * 0.35 + test.nightKWh * 0.25 + 0.40)) < 1e-9)
        #expect(run.log.contains { $0.diagnostic.message.hasPrefix("day \(test.date) widget 'home' money: import €") })
    }

    /// The standing charge accrues through the day by the share of the day's real hours: at local
    /// noon of the 23-hour day 11 hours have passed (00:00 CET to 12:00 CEST), of the 25-hour day 13.
    @Test(arguments: [("2026-03-29", 11.0 / 23), ("2026-06-01", 12.0 / 24), ("2026-10-25", 13.0 / 25)])
    func theStandingChargeAccruesByTheDaysRealHours(date: String, share: Double) throws {
        let day = Self.berlin.day(on: CivilDate(date)!)!
        let noon = Self.time("\(date)T12:00:00\(Self.berlin.utcOffsetSeconds(at: day.end.addingTimeInterval(-3600)) == 7200 ? "+02:00" : "+01:00")")
        // Nothing flows: only the standing charge.
        let (report, _) = try Self.money(
            Self.config(tariff: "  import: {price: 0.30}\n  standing_charge: 0.40", timezone: "Europe/Berlin"),
            [(day.start, "home/grid", "0"), (noon, "home/grid", "0")])
        // The replay runs its widgets' settle and min_interval (0 s here) past the last message.
        #expect(abs(report.standingCharge - 0.40 * share) < 1e-9, "\(report.standingCharge)")
        #expect(abs(report.netCost - 0.40 * share) < 1e-9)
    }

    // MARK: - Dynamic prices

    /// Prices of 15-minute slots as a day-ahead feed publishes them (EUR/MWh): 100, 200, 300, 400
    /// from 12:00, 500 from 13:00.
    static let slotPrices: [(String, String)] = [
        ("2026-06-01T12:00:00Z", "100"), ("2026-06-01T12:15:00Z", "200"), ("2026-06-01T12:30:00Z", "300"),
        ("2026-06-01T12:45:00Z", "400"), ("2026-06-01T13:00:00Z", "500"),
    ]

    static let priceSource = "  price: {topic: market/price, unit: EUR/MWh, stale_after: 20m}\n  meter: {topic: home/meter, unit: kWh}"

    /// A counter rising 1 kWh an hour from 12:00 to 13:10, reporting every `minutes`: 0.25 kWh per
    /// slot at 0.10, 0.20, 0.30, 0.40, then 1/6 kWh at 0.50: 0.25 + 0.0833… = 0.3333… A 70-minute
    /// counter priced at its tick would cost 7/6 × 0.50 = 0.5833.
    @Test(arguments: [5.0, 70.0])
    func aCountersRiseIsSpreadOverTheSlotsItCovers(minutes: Double) throws {
        let start = Self.time("2026-06-01T12:00:00Z")
        var messages = Self.slotPrices.map { (Self.time($0.0), "market/price", $0.1) }
        for t in stride(from: 0.0, through: 70 * 60, by: minutes * 60) {
            messages.append((start.addingTimeInterval(t), "home/meter", JSONValue.format(1000 + t / 3600)))
        }
        let (report, log) = try Self.money(
            Self.config(tariff: "  import: {price: price}", sources: Self.priceSource, exchange: "{name: Grid, rate: grid, total: {counter: meter}}"),
            messages)
        #expect(abs(report.importCost - (0.25 + 1.0 / 6 * 0.5)) < 1e-9, "\(report.text)")
        #expect(report.unpricedTotalKWh == 0, "\(log)")
    }

    /// Integrated 1 kW across the slots: the same 0.3333… for 12:00–13:10.
    @Test func anIntegratedRateIsPricedPerSlot() throws {
        var messages = Self.slotPrices.map { (Self.time($0.0), "market/price", $0.1) }
        messages += Self.minutes(from: Self.time("2026-06-01T12:00:00Z"), to: Self.time("2026-06-01T13:10:00Z"), every: 7) { _ in 1000 }
        let (report, _) = try Self.money(Self.config(tariff: "  import: {price: price}", sources: Self.priceSource), messages)
        #expect(abs(report.importCost - (0.25 + 1.0 / 6 * 0.5)) < 1e-9, "\(report.text)")
        #expect(report.importPricePerKWh == 0.5)
    }

    /// A price source silent from 12:00 to 14:00. Its price (300 EUR/MWh every 15 minutes)
    /// holds for its stale_after, 20 min: 1 kW from 10:00 to 15:00 is priced 10:00–12:20 (2⅓ kWh)
    /// and 14:00–15:00 (1 kWh): 3⅓ kWh × 0.30 = 1.00; 12:20–14:00 is unpriced: 1⅔ kWh of import,
    /// and as much of consumption. Said once.
    @Test func aSilentPriceSourceLeavesEnergyUnpricedAndSaysSo() throws {
        var messages: [(Date, String, String)] = []
        for quarter in 0..<20 where !(9..<16).contains(quarter) {  // 10:00…12:00, then 14:00…14:45
            messages.append((Self.time("2026-06-01T10:00:00Z").addingTimeInterval(Double(quarter) * 900), "market/price", "300"))
        }
        messages += Self.minutes(from: Self.time("2026-06-01T10:00:00Z"), to: Self.time("2026-06-01T15:00:00Z")) { _ in 1000 }
        let (report, log) = try Self.money(Self.config(tariff: "  import: {price: price}", sources: Self.priceSource), messages)
        #expect(abs(report.importCost - 1.0) < 1e-9, "\(report.text)")
        #expect(abs((report.unpricedKWh[.imported] ?? 0) - 5.0 / 3) < 1e-9, "\(report.text)")
        #expect(abs((report.unpricedKWh[.consumption] ?? 0) - 5.0 / 3) < 1e-9, "\(report.text)")
        let said = log.filter { $0.contains("flows without a price") }
        #expect(said.count == 1, "\(log)")
        #expect(said.first?.contains("'price' (topic market/price) has sent no price since 12:00") == true, "\(said)")
        // The unpriced energy is in the report's line, never a made-up amount.
        #expect(report.text.contains("unpriced consumption 1.667 kWh, import 1.667 kWh"), "\(report.text)")
    }
}

/// What a review of the pricing found, each case held: a retained price is no live one, a
/// daily counter's first value is spread over the day, a stepped clock moves the prices with it.
@Suite struct TariffEdgeTests: TariffHome {
    static let priceSource = "  price: {topic: market/price, unit: EUR/MWh, stale_after: 20m}"

    /// 300 EUR/MWh at 10:00, then nothing live; at 12:00 the broker re-sends its retained copy (a
    /// reconnect). 1 kW from 10:00 to 13:00: priced 10:00–10:20 (1/3 kWh × 0.30 = 0.10), the rest
    /// unpriced (2⅔ kWh), the retained copy of unknown age pricing nothing.
    @Test func aRetainedPriceIsNoLivePrice() throws {
        var messages = Self.minutes(from: Self.time("2026-06-01T10:00:00Z"), to: Self.time("2026-06-01T13:00:00Z")) { _ in 1000 }
        messages.append((Self.time("2026-06-01T10:00:00Z"), "market/price", "300"))
        var lines = Self.lines(messages)
        let retained = TraceMessage(at: Self.time("2026-06-01T12:00:00Z"), topic: "market/price", payload: Array("300".utf8), retained: true)
        lines.insert(retained.line, at: try #require(lines.firstIndex { $0.contains("2026-06-01T12:00:00") }))
        let run = try replayWithLog(config: Self.config(tariff: "  import: {price: price}", sources: Self.priceSource), trace: lines, final: false)
        let report = try #require(run.engine.money(ofWidget: "home"))
        #expect(abs(report.importCost - 0.10) < 1e-9, "\(report.text)")
        #expect(abs((report.unpricedKWh[.imported] ?? 0) - 8.0 / 3) < 1e-9, "\(report.text)")
    }

    /// A daily counter first heard at 18:00 with 10 kWh (no state: the day so far, held back until
    /// it moves), then 10.1 at 18:05; 0.10 before 17:00, 0.50 after. The day's 10.1 kWh are
    /// spread over the 18 h 05 min since midnight: 10.1 × (17 h × 0.10 + 13/12 h × 0.50) / (217/12
    /// h) = 10.1 × 2.2417 / 18.0833 = 1.2520. Priced at its tick it would be 10.1 × 0.50 = 5.05.
    @Test func aDailyCountersFirstValueIsSpreadOverTheDaySoFar() throws {
        let tariff = """
              import:
                zones:
                  - {from: "17:00", to: "24:00", price: 0.50}
                  - {price: 0.10}
            """
        let messages = [
            (Self.time("2026-06-01T00:00:00Z"), "home/grid", "0"),
            (Self.time("2026-06-01T18:00:00Z"), "home/meter", "10"), (Self.time("2026-06-01T18:05:00Z"), "home/meter", "10.1"),
        ]
        let (report, _) = try Self.money(
            Self.config(tariff: tariff, sources: "  meter: {topic: home/meter, unit: kWh}", exchange: "{name: Grid, rate: grid, total: {daily: meter}}"),
            messages)
        #expect(abs(report.importCost - 10.1 * (17 * 0.10 + 13.0 / 12 * 0.50) / (217.0 / 12)) < 1e-9, "\(report.text)")
    }
}

/// A wall clock that steps moves the prices with it: each holds for the time that really passed.
@Suite struct PriceClockStepTests {
    @Test func aStepAheadKeepsThePriceForTheTimeThatPassed() throws {
        let config = try DaemonConfig.parse(
            TariffEdgeTests.config(tariff: "  import: {price: price}", sources: TariffEdgeTests.priceSource), file: "t.yaml")
        var engine = FlowEngine(config: config.flow, zone: FixedOffsetZone())
        let start = RFC3339.parse("2026-06-01T10:00:00Z")!
        _ = engine.receive(topic: "market/price", payload: Array("300".utf8), at: start)
        _ = engine.receive(topic: "home/grid", payload: Array("1000".utf8), at: start)
        // Two minutes later the clock jumps an hour ahead; the price is two minutes old, not 62.
        _ = engine.clockStepped(by: 3600, at: start.addingTimeInterval(3720))
        #expect(engine.priceOutlook(at: start.addingTimeInterval(3720)).first?.pricePerKWh == 0.30)
        #expect(engine.priceOutlook(at: start.addingTimeInterval(3600 + 1200)).first?.pricePerKWh == nil)
    }
}
