import FlowCore
import FoundationEssentials
@testable import Simulator
import Testing

/// The model: its energy balance, its battery, its sun, its determinism.
@Suite struct SimulatedHomeTests {
    /// Central European time without DST: local standard time is the clock, solar noon is 12:00.
    static let cet = FixedOffsetZone(offsetSeconds: 3600)

    static let summer = CivilDate(year: 2026, month: 6, day: 21)
    static let winter = CivilDate(year: 2026, month: 12, day: 21)
    static let spring = CivilDate(year: 2026, month: 3, day: 20)

    /// Steps through a day second by second: every state the model ever has.
    static func everySecond(seed: UInt64, date: CivilDate, zone: any LocalTimeZone = cet, _ body: (HomeState, HomeState) -> Void) {
        var home = SimulatedHome(seed: seed, date: date, zone: zone)
        var previous = home.state
        while home.state.at < home.firstDay.end {
            home.advance(to: home.state.at.addingTimeInterval(1))
            body(previous, home.state)
            previous = home.state
        }
    }

    /// grid = load + charge − solar at every step, the phases add up to the grid, and the meter's
    /// counters, the battery and the panels account for the same energy.
    @Test(arguments: [(1, summer), (2, winter), (3, spring)] as [(UInt64, CivilDate)])
    func energyBalanceHoldsAtEveryStep(seed: UInt64, date: CivilDate) {
        let start = SimulatedHome(seed: seed, date: date, zone: Self.cet).state
        var worstBalanceW = 0.0
        var worstPhasesW = 0.0
        var worstEnergyWh = 0.0
        Self.everySecond(seed: seed, date: date) { _, state in
            worstBalanceW = max(worstBalanceW, abs(state.gridW - (state.loadW + state.batteryW - state.solarW)))
            worstPhasesW = max(worstPhasesW, abs(state.phases.map(\.powerW).reduce(0, +) - state.gridW))
            // Net metered energy = what the house used + what went into the battery − what came
            // out of it − what the panels made.
            let metered = state.phases.map { $0.importedWh - $0.exportedWh }.reduce(0, +)
                - start.phases.map { $0.importedWh - $0.exportedWh }.reduce(0, +)
            let balance = state.loadEnergyWh + state.chargedWh - state.dischargedWh - state.solarEnergyWh
            worstEnergyWh = max(worstEnergyWh, abs(metered - balance))
        }
        #expect(worstBalanceW < 1e-9)
        #expect(worstPhasesW < 1e-9)
        #expect(worstEnergyWh < 1e-6)
    }

    /// The SoC stays within 0…100 % (above the reserve), is the stored energy over the capacity,
    /// and the stored energy is what the day started with plus what went in minus what came out.
    /// The battery fills from surplus only and drains only for a deficit.
    @Test(arguments: [(4, summer), (5, winter)] as [(UInt64, CivilDate)])
    func socFollowsTheBatteryEnergy(seed: UInt64, date: CivilDate) {
        let profile = HomeProfile.demo
        let initialWh = SimulatedHome(seed: seed, date: date, zone: Self.cet).state.batteryEnergyWh
        var lowest = 100.0
        var highest = 0.0
        var problems: [String] = []
        Self.everySecond(seed: seed, date: date) { _, state in
            lowest = min(lowest, state.socPercent)
            highest = max(highest, state.socPercent)
            let expectedWh = initialWh + state.chargedWh - state.dischargedWh
            if abs(state.batteryEnergyWh - expectedWh) > 1e-6 || abs(state.socPercent - expectedWh / profile.batteryCapacityWh * 100) > 1e-9 {
                problems.append("\(state.at): SoC \(state.socPercent) % for \(state.batteryEnergyWh) Wh, expected \(expectedWh) Wh")
            }
            if state.batteryW > 0, state.solarW <= state.loadW - 50 {
                problems.append("\(state.at): charging \(state.batteryW) W from the grid (solar \(state.solarW) W, load \(state.loadW) W)")
            }
            if state.batteryW < 0, state.solarW >= state.loadW + 50 {
                problems.append("\(state.at): draining \(state.batteryW) W with a surplus (solar \(state.solarW) W, load \(state.loadW) W)")
            }
        }
        #expect(problems.count == 0, "\(problems.prefix(5))")
        #expect(lowest >= profile.batteryReservePercent - 1e-9)
        #expect(highest <= 100 + 1e-9)
        #expect(highest > lowest + 10, "the battery did not cycle")
    }

    /// A summer day fills the battery and exports at noon; the night drains it; a long winter
    /// evening empties it to the reserve and the grid takes over.
    @Test func theBatteryCyclesThroughTheSeasons() {
        var summer = SimulatedHome(seed: 1, date: Self.summer, zone: Self.cet)
        summer.advance(to: summer.firstDay.start.addingTimeInterval(13 * 3600))
        #expect(summer.state.socPercent > 99)
        #expect(summer.state.gridW < -1000, "exporting at 13:00: \(summer.state.gridW) W")
        summer.advance(to: summer.firstDay.start.addingTimeInterval(23 * 3600))
        #expect(summer.state.batteryW < -100 && summer.state.solarW == 0)

        var winter = SimulatedHome(seed: 5, date: Self.winter, zone: Self.cet)
        var emptied = false
        var imported = false
        for minute in 0..<(3 * 24 * 60) {  // three winter days: the evenings outlast the battery
            winter.advance(to: winter.firstDay.start.addingTimeInterval(Double(minute * 60)))
            if winter.state.socPercent <= HomeProfile.demo.batteryReservePercent + 1e-6 {
                emptied = true
                if winter.state.gridW > 100 { imported = true }
            }
        }
        #expect(emptied && imported)
    }

    /// The sun: nothing at night, the day centred on solar noon (12:00 standard time, 13:00 in
    /// summer time), long in June and short in December.
    @Test(arguments: [summer, winter, spring])
    func noSunAtNightAndTheDayCentredOnNoon(date: CivilDate) {
        for (zone, noonHour) in [(Self.cet as any LocalTimeZone, 12.0), (SummerTime() as any LocalTimeZone, date == Self.summer ? 13 : 12)] {
            let midnight = SimulatedHome(seed: 9, date: date, zone: zone).firstDay.start
            var wake: Double?
            var sleep: Double?
            var weighted = 0.0
            var energy = 0.0
            Self.everySecond(seed: 9, date: date, zone: zone) { _, state in
                let hour = state.at.timeIntervalSince(midnight) / 3600
                if state.solarW > 0 {
                    if wake == nil { wake = hour }
                    sleep = hour
                }
                weighted += state.solarW * hour
                energy += state.solarW
            }
            guard let wake, let sleep else {
                Issue.record("no sun on \(date)")
                return
            }
            // Night is night: nothing before 03:00 or after 21:00 standard time, whatever the season.
            #expect(wake > noonHour - 9 && sleep < noonHour + 9, "\(date): sun from \(wake) to \(sleep)")
            #expect(abs((wake + sleep) / 2 - noonHour) < 0.1, "\(date): the day's middle is \((wake + sleep) / 2), not \(noonHour)")
            // Clouds move the day's centre of production a little, never far from noon.
            #expect(abs(weighted / energy - noonHour) < 0.75, "\(date): production centred on \(weighted / energy)")
        }
    }

    @Test func summerDaysAreLongerAndBrighterThanWinterDays() {
        func day(_ date: CivilDate) -> (hours: Double, clearNoonW: Double) {
            var awake = 0.0
            Self.everySecond(seed: 1, date: date) { _, state in if state.inverterAwake { awake += 1 } }
            let solar = SolarArray(profile: .demo, noise: SeededNoise(seed: 1))
            var clock = LocalClock(zone: Self.cet)
            let noon = SimulatedHome(seed: 1, date: date, zone: Self.cet).firstDay.start.addingTimeInterval(12 * 3600)
            let sky = solar.clearSky(at: clock.moment(at: noon))
            return (awake / 3600, sky.directW + sky.diffuseW)
        }
        let june = day(Self.summer)
        let december = day(Self.winter)
        #expect(june.hours > 15.5 && june.hours < 17.5, "\(june.hours) h")
        #expect(december.hours > 7 && december.hours < 9, "\(december.hours) h")
        #expect(june.clearNoonW > 1.5 * december.clearNoonW)
        #expect(june.clearNoonW <= HomeProfile.demo.solarPeakW)
    }

    /// OpenDTU's daily counter: yesterday's yield through the night, 0 when the inverters power up
    /// at sunrise, then the day's energy; the lifetime counter only ever rises.
    @Test func dailyYieldRestartsWhenTheInvertersPowerUp() {
        let start = SimulatedHome(seed: 1, date: Self.summer, zone: Self.cet).state
        #expect(start.yieldTodayWh > 10_000, "yesterday's yield, still shown at midnight")
        var resets = 0
        var problems: [String] = []
        var solarSinceWakeWh = 0.0
        Self.everySecond(seed: 1, date: Self.summer) { previous, state in
            if state.yieldTodayWh < previous.yieldTodayWh {
                resets += 1
                if !(state.inverterAwake && !previous.inverterAwake && state.yieldTodayWh == 0) {
                    problems.append("\(state.at): the daily counter dropped while the inverters ran")
                }
            }
            if !previous.inverterAwake, !state.inverterAwake, state.yieldTodayWh != previous.yieldTodayWh {
                problems.append("\(state.at): moved while the inverters slept")
            }
            if state.yieldTotalWh < previous.yieldTotalWh { problems.append("\(state.at): the lifetime counter went back") }
            if resets == 1 { solarSinceWakeWh += state.solarEnergyWh - previous.solarEnergyWh }
            if resets == 1, abs(state.yieldTodayWh - solarSinceWakeWh) > 1e-6 { problems.append("\(state.at): daily counter off") }
        }
        #expect(resets == 1)
        #expect(problems.count == 0, "\(problems.prefix(5))")
    }

    /// The same seed and date: the same messages, byte for byte. Another seed: another day.
    @Test func sameSeedSameMessages() {
        func cycles(seed: UInt64) -> [SimulationCycle] {
            var simulation = Simulation(seed: seed, date: Self.summer, secondsIntoDay: 3600, speed: 300, zone: Self.cet)
            return (0..<240).map { _ in simulation.next() }
        }
        let first = cycles(seed: 42)
        #expect(first == cycles(seed: 42))
        let other = cycles(seed: 43)
        let differing = zip(first, other).filter { $0.0.bursts != $0.1.bursts }.count
        #expect(differing > 200)
    }

    /// The home does not depend on how often it is looked at: a trace a minute apart and one two
    /// minutes apart see the same home at the instants they share.
    @Test func theHomeIsTheSameHoweverOftenItIsSampled() {
        var everyMinute = Simulation(seed: 7, date: Self.spring, speed: 60, zone: Self.cet)
        var everyTwo = Simulation(seed: 7, date: Self.spring, speed: 120, zone: Self.cet)
        for _ in 0..<360 {
            let two = everyTwo.next()
            let one = everyMinute.next()
            _ = everyMinute.next()
            #expect(one == two)
        }
    }

    /// The first cycle of a simulation that starts in the afternoon is the state a simulation from
    /// midnight reaches then: the battery has had its morning.
    @Test func aLateStartRunsTheMorningFirst() {
        var late = Simulation(seed: 3, date: Self.summer, secondsIntoDay: 15 * 3600, speed: 600, zone: Self.cet)
        var early = Simulation(seed: 3, date: Self.summer, speed: 600, zone: Self.cet)
        let afternoon = late.next()
        var cycle = early.next()
        while cycle.at < afternoon.at { cycle = early.next() }
        #expect(cycle == afternoon)
        #expect(afternoon.at == early.firstDay.start.addingTimeInterval(15 * 3600))
    }
}

/// A zone with summer time from April to October (whole months: enough for a season's noon).
struct SummerTime: LocalTimeZone {
    var identifier: String { "CET/CEST (test)" }
    func utcOffsetSeconds(at instant: Date) -> Int {
        let month = CivilDate(daysSinceEpoch: Int((instant.timeIntervalSince1970 / 86_400).rounded(.down))).month
        return (4...10).contains(month) ? 7200 : 3600
    }
}
