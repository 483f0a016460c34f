@testable import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// The pieces pricing is made of: how a stretch of energy divides between two prices, and how long
/// a price source's price holds.
@Suite struct PricingTests {
    static let t0 = Date(timeIntervalSince1970: 1_780_300_800)  // 2026-06-01T08:00:00Z

    struct ShareCase: Sendable, CustomTestStringConvertible {
        var name: String
        var span: EnergySpan
        /// The energy of the first half hour and of the second.
        var halves: (Double, Double)
        var testDescription: String { name }
    }

    static let hour = t0.addingTimeInterval(3600)

    static let shareCases: [ShareCase] = [
        // 1 kW flat for an hour: 0.5 kWh each half.
        ShareCase(name: "a flat rate", span: EnergySpan(start: t0, end: hour, energyKWh: 1, startRateW: 1000, endRateW: 1000), halves: (0.5, 0.5)),
        // 0 → 2 kW: the first half ½ · 1 kW · ½ h = 0.25 kWh, the second (1 + 2)/2 · ½ = 0.75.
        ShareCase(name: "a rising rate", span: EnergySpan(start: t0, end: hour, energyKWh: 1, startRateW: 0, endRateW: 2000), halves: (0.25, 0.75)),
        // −1 kW → +1 kW crosses 0 at the half hour: all of its 0.25 kWh in the second half.
        ShareCase(name: "a rate crossing zero", span: EnergySpan(start: t0, end: hour, energyKWh: 0.25, startRateW: -1000, endRateW: 1000), halves: (0, 0.25)),
        // A counter's rise has no rates: spread evenly.
        ShareCase(name: "a counter's rise", span: EnergySpan(start: t0, end: hour, energyKWh: 0.7), halves: (0.35, 0.35)),
    ]

    @Test(arguments: shareCases)
    func aSpanDividesItsEnergyByWhenItFlowed(_ test: ShareCase) {
        let middle = Self.t0.addingTimeInterval(1800)
        let first = test.span.energyKWh(from: Self.t0, to: middle)
        let second = test.span.energyKWh(from: middle, to: Self.hour)
        #expect(abs(first - test.halves.0) < 1e-12 && abs(second - test.halves.1) < 1e-12, "\(first), \(second)")
        #expect(abs(first + second - test.span.energyKWh) < 1e-12)
    }

    /// A source's price holds for its stale_after after it was last heard; the same price again
    /// only confirms it; a later one replaces it from its arrival.
    @Test func aSourcesPriceHoldsForItsStaleAfter() {
        var prices = PriceTimeline(config: PriceConfig(base: .source("p"), feesPerKWh: 0.1), holdSeconds: 1200)
        let zone = FixedOffsetZone()
        #expect(prices.price(at: Self.t0, zone: zone) == nil)
        prices.take(0.2, at: Self.t0)
        prices.take(0.2, at: Self.t0.addingTimeInterval(900))  // confirmed at 08:15: holds to 08:35
        #expect(prices.points.count == 1)
        #expect(prices.price(at: Self.t0.addingTimeInterval(2099), zone: zone).map { abs($0 - 0.3) < 1e-12 } == true)
        #expect(prices.price(at: Self.t0.addingTimeInterval(2100), zone: zone) == nil)
        #expect(prices.nextChange(after: Self.t0.addingTimeInterval(1000), zone: zone) == Self.t0.addingTimeInterval(2100))
        prices.take(0.5, at: Self.t0.addingTimeInterval(3600))
        #expect(prices.price(at: Self.t0.addingTimeInterval(3600), zone: zone).map { abs($0 - 0.6) < 1e-12 } == true)
        // Nothing still to price reaches back before 09:00: the 08:00 price is forgotten.
        prices.forget(before: Self.t0.addingTimeInterval(3600))
        #expect(prices.points.map(\.basePerKWh) == [0.5])
    }
}

/// The money's sensors hear of the standing charge on a quiet night, when no energy moves the
/// accounts: at most a minute apart while readings come, and never more often.
@Suite struct QuietNightMoneyTests {
    @Test func theStandingChargeKeepsTheMoneyMovingWithoutEnergy() {
        // 2.40 a day: 0.0001 every 3.6 s, so every minute's accounts carry a new amount.
        let config = FlowConfig(
            sources: [source("grid", "home/grid")],
            widgets: [FlowWidgetConfig(name: "home", output: node("balance", total: .integrate), exchange: node("grid", total: .imported), policy: eager)],
            tariff: TariffConfig(importPrice: PriceConfig(base: .fixed(0.3)), standingChargePerDay: 2.40))
        var harness = EngineHarness(config)
        let midnight = 1_780_272_000.0  // 2026-06-01T00:00:00Z
        for second in stride(from: 0.0, through: 600, by: 10) { harness.send("home/grid", "0", at: midnight + second) }
        let times = harness.moneyOutputs.map(\.at.timeIntervalSince1970)
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        // The first push sends them, then one a minute: ten minutes give about ten.
        #expect((9...11).contains(times.count), "\(times.map { $0 - midnight })")
        #expect(gaps.allSatisfy { $0 >= FlowEngine.accountsIntervalSeconds && $0 <= FlowEngine.accountsIntervalSeconds + 10 }, "\(gaps)")
        let last = harness.moneyOutputs.last!.money
        #expect(abs(last.standingCharge - 2.40 * (times.last! - midnight) / 86_400) < 1e-12)
        #expect(last.importCost == 0)
    }
}

/// Amounts and prices written as people read them, one rule for both.
@Suite struct CurrencyTextTests {
    @Test(arguments: [
        ("EUR", 1.234, "€1.23", "€1.234/kWh"), ("EUR", -0.45, "−€0.45", "−€0.450/kWh"), ("EUR", -0.0004, "€0.00", "€0.000/kWh"),
        ("SEK", 0.5, "0.50 kr", "0.500 kr/kWh"), ("CHF", 1.2, "CHF 1.20", "CHF 1.200/kWh"), ("JPY", 31.6, "¥32", "¥31.600/kWh"),
    ])
    func amountsAndPrices(code: String, value: Double, amount: String, price: String) throws {
        let currency = try #require(Currency(code: code))
        #expect(currency.text(value) == amount)
        #expect(currency.priceText(value) == price)
    }
}
