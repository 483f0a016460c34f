import FlowCore
import FoundationEssentials
import TestSupport
import Testing

@Suite struct EnergyTotalTests {
    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }

    /// Import and export of one segment across zero: each part is the triangle on its side.
    @Test(arguments: [
        (TotalSpec.imported, 100.0, -100.0, 250.0), (.exported, 100, -100, 250), (.imported, 300, 100, 2000),
        (.exported, 300, 100, 0), (.charged, -50, 150, 562.5), (.discharged, -50, 150, 62.5), (.integrate, 1000, 1000, 10_000),
    ])
    func segmentSplitsAtZero(spec: TotalSpec, from r0: Double, to r1: Double, joules: Double) {
        var total = EnergyTotal(spec: spec)
        total.integrate(rateW: r0, at: Self.at(0), maxGapSeconds: 300)
        total.integrate(rateW: r1, at: Self.at(10), maxGapSeconds: 300)
        #expect(abs(total.energyKWh - joules / 3_600_000) < 1e-15)
    }

    @Test func midnightSplitsTheSegmentAndStartsAtZero() {
        var total = EnergyTotal(spec: .integrate)
        total.integrate(rateW: 3600, at: Self.at(0), maxGapSeconds: 300)
        total.integrate(rateW: 3600, at: Self.at(100), maxGapSeconds: 300)
        let closed = total.closeDay(at: Self.at(200), maxGapSeconds: 300)  // carried to midnight
        #expect(abs(closed - 0.2) < 1e-12)
        #expect(total.energyKWh == 0)
        total.integrate(rateW: 3600, at: Self.at(250), maxGapSeconds: 300)  // the rest is the new day's
        #expect(abs(total.energyKWh - 0.05) < 1e-12)
    }

    @Test func midnightAfterALongSilenceCarriesNothing() {
        var total = EnergyTotal(spec: .integrate)
        total.integrate(rateW: 3600, at: Self.at(0), maxGapSeconds: 300)
        #expect(total.closeDay(at: Self.at(1000), maxGapSeconds: 300) == 0)
    }

    @Test func oneLowCounterSampleIsAGlitchNotAReset() {
        var total = EnergyTotal(spec: .counter(source: "c"))
        total.read(counterKWh: 100)
        total.read(counterKWh: 105)
        total.read(counterKWh: 0)  // a glitch
        total.read(counterKWh: 106)  // back: nothing was reset
        #expect(abs(total.energyKWh - 6) < 1e-12)
        total.read(counterKWh: 1)
        total.read(counterKWh: 2)  // confirmed: 6 kept, counted again from 1
        #expect(abs(total.energyKWh - 7) < 1e-12)
        total.closeDay(at: Self.at(0), maxGapSeconds: 300)
        total.read(counterKWh: 4)
        #expect(abs(total.energyKWh - 2) < 1e-12)
    }

    @Test func aDailyCounterThatJittersIsNotReset() {
        var total = EnergyTotal(spec: .daily(source: "d"))
        total.read(counterKWh: 5.301)
        total.read(counterKWh: 5.3)  // formatting noise, not a reset
        total.read(counterKWh: 5.3)
        #expect(abs(total.energyKWh - 5.301) < 1e-12)
    }
}

@Suite struct FixedZoneDayTests {
    @Test(arguments: [(0, 24.0), (19_800, 24), (-34_200, 24)])
    func daysOfAFixedZone(offset: Int, hours: Double) {
        let zone = FixedOffsetZone(offsetSeconds: offset)
        let day = zone.day(containing: Date(timeIntervalSince1970: 1_780_000_000))
        #expect(day.lengthHours == hours)
        #expect(zone.localDate(at: day.start) == day.date)
        #expect(zone.localDate(at: day.start.addingTimeInterval(-1)) < day.date)
        #expect((day.start.timeIntervalSince1970 + Double(offset)).truncatingRemainder(dividingBy: 86_400) == 0)
    }
}
