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

    /// A silence around midnight (at 0 s here), 3600 W before and after it, `max_gap` 300 s: the day
    /// before gets the stretch up to midnight and the new day the rest, each only when the whole
    /// silence is within `max_gap`. A rate stale at midnight is no rate for the new day.
    @Test(arguments: [
        (-100.0, 100.0, 100.0, 100.0),  // 200 s: split at midnight
        (-1000, 100, 0, 0),  // silent since long before midnight
        (-1000, 400, 0, 0),
        (-200, 200, 200, 0),  // 400 s: more than max_gap, found out only after midnight
    ])
    func aSilenceAcrossMidnight(lastBefore: Double, firstAfter: Double, closedSeconds: Double, newDaySeconds: Double) {
        var total = EnergyTotal(spec: .integrate)
        total.integrate(rateW: 3600, at: Self.at(lastBefore), maxGapSeconds: 300)
        let closed = total.closeDay(at: Self.at(0), maxGapSeconds: 300)
        total.integrate(rateW: 3600, at: Self.at(firstAfter), maxGapSeconds: 300)
        #expect(abs(closed - closedSeconds / 1000) < 1e-12, "closed \(closed) kWh")
        #expect(abs(total.energyKWh - newDaySeconds / 1000) < 1e-12, "new day \(total.energyKWh) kWh")
    }

    /// Counter readings an hour apart.
    static func reading(_ total: inout EnergyTotal, _ values: Double...) {
        for value in values {
            let hour = (total.counter?.lastAt?.timeIntervalSince1970 ?? 0) + 3600
            total.read(counterKWh: value, at: at(hour))
        }
    }

    @Test func oneLowCounterSampleIsAGlitchNotAReset() {
        var total = EnergyTotal(spec: .counter(source: "c"))
        Self.reading(&total, 100, 105, 0)  // a glitch
        Self.reading(&total, 106)  // back: nothing was reset
        #expect(abs(total.energyKWh - 6) < 1e-12)
        Self.reading(&total, 1, 2)  // confirmed: 6 kept, counted again from 1
        #expect(abs(total.energyKWh - 7) < 1e-12)
        total.closeDay(at: Self.at(0), maxGapSeconds: 300)
        Self.reading(&total, 4)
        #expect(abs(total.energyKWh - 2) < 1e-12)
    }

    /// A jump no plausible power explains (here 8000 kWh in an hour, beyond 100 kW) is held back;
    /// back to normal, it was a glitch; carried on from, it is a new count (a swapped meter), and
    /// the jump itself is no energy.
    @Test func anImplausibleJumpIsNeverEnergy() {
        var total = EnergyTotal(spec: .counter(source: "c"))
        Self.reading(&total, 1000, 1001, 9001)
        #expect(abs(total.energyKWh - 1) < 1e-9)
        Self.reading(&total, 1001.5)
        #expect(abs(total.energyKWh - 1.5) < 1e-9)
        Self.reading(&total, 9001.5, 9002)
        #expect(abs(total.energyKWh - 2) < 1e-9)
    }

    /// Field cases: a Tasmota SML reader that reports 0 twice after a reboot before it reads the
    /// meter again; a first reading of 0 after a start; a drop "confirmed" by a value back near
    /// the old count.
    @Test(arguments: [
        ([12345.6, 12346.1, 0, 0, 12346.11, 12346.12], 0.51),
        ([0, 12345.6, 12345.601], 0.001),
        ([1000, 1000.5, 0, 1000.49, 1000.6], 0.6),
    ])
    func counterFieldCases(values: [Double], kWh: Double) {
        var total = EnergyTotal(spec: .counter(source: "c"))
        for value in values { Self.reading(&total, value) }
        #expect(abs(total.energyKWh - kWh) < 1e-9, "\(total.energyKWh)")
    }

    @Test func aDailyCounterThatJittersIsNotReset() {
        var total = EnergyTotal(spec: .daily(source: "d"))
        Self.reading(&total, 5)
        total.closeDay(at: Self.at(0), maxGapSeconds: 300)  // midnight: counting from 5
        Self.reading(&total, 5.301, 5.3, 5.3)  // formatting noise, not a reset
        #expect(abs(total.energyKWh - 0.301) < 1e-12)
    }

    /// Started at night without a state: the daily counter still shows yesterday's yield until the
    /// inverter wakes and resets it; that yield is not today's.
    @Test func aDailyCounterLeftOverFromYesterdayIsNotToday() {
        var night = EnergyTotal(spec: .daily(source: "d"))
        Self.reading(&night, 5, 5, 0, 0.01, 3)
        #expect(abs(night.energyKWh - 3) < 1e-12)
        // But one that was counting when we started, and resets mid-day, keeps its morning.
        var day = EnergyTotal(spec: .daily(source: "d"))
        Self.reading(&day, 2, 4, 0, 0.5, 1)
        #expect(abs(day.energyKWh - 5) < 1e-12)
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
