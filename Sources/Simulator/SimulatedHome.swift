import FlowCore
import FoundationEssentials

/// One phase of the grid connection, as the grid meter measures it.
public struct PhaseReading: Sendable, Equatable {
    /// + importing, − exporting.
    public var powerW: Double
    public var voltageV: Double
    /// |powerW| / apparentPowerVA, its sign the load's reactive character (not the direction).
    public var powerFactor: Double
    public var apparentPowerVA: Double
    public var currentA: Double
    /// The meter's lifetime counters of this phase: every phase counts its own import and export.
    public var importedWh: Double
    public var exportedWh: Double
}

/// Everything the home's devices can report at one instant.
public struct HomeState: Sendable, Equatable {
    public var at: Date
    public var solarW: Double
    public var loadW: Double
    /// + filling (charging), − draining: the widget's storage sign (evcc publishes the opposite).
    public var batteryW: Double
    /// + importing, − exporting. Always `loadW + batteryW − solarW`: the grid takes the balance.
    public var gridW: Double
    /// L1, L2, L3; their powers add up to `gridW`.
    public var phases: [PhaseReading]
    public var batteryEnergyWh: Double
    public var socPercent: Double
    /// Since the simulation started: what went into the battery and what came out.
    public var chargedWh: Double
    public var dischargedWh: Double
    /// Since the simulation started: what the panels produced and the household used.
    public var solarEnergyWh: Double
    public var loadEnergyWh: Double
    /// The inverters run (between their power-up at sunrise and dusk).
    public var inverterAwake: Bool
    /// The inverters' own daily counter: restarts at 0 when they power up at sunrise, and holds
    /// the day's yield through the night until then.
    public var yieldTodayWh: Double
    /// The inverters' lifetime counter.
    public var yieldTotalWh: Double
}

/// The simulated home: a pure, deterministic state machine. Time comes in through `advance(to:)`,
/// randomness from the seed; the same seed, date and steps always give the same states.
///
/// Powers are computed each simulated second (the panels under drifting clouds, the household
/// with its appliances, the battery that takes the surplus and covers the deficit within its
/// limits, the grid as the balance), and every counter is their integral over those seconds, so
/// the counters hold the kettle that a sparse snapshot missed, as a real meter's do.
public struct SimulatedHome: Sendable {
    public let profile: HomeProfile
    public let seed: UInt64
    /// The local day the simulation started on, at its midnight.
    public let firstDay: LocalDay
    /// Where the simulation is: every reading in it is of this instant.
    public private(set) var state: HomeState

    /// The integration step: a kettle is on for minutes, a thermostat for tens of seconds.
    static let stepSeconds = 1.0

    private let solar: SolarArray
    private let load: HouseLoad
    private let noise: SeededNoise
    private var clock: LocalClock
    private var plan: (date: CivilDate, runs: [HouseLoad.Run])

    /// The home at local midnight starting `date` in `zone`. Its battery starts the day with a
    /// charge of 25 to 60 %; its inverters' daily counter still holds the day before's yield.
    public init(seed: UInt64, date: CivilDate, zone: any LocalTimeZone, profile: HomeProfile = .demo) {
        self.profile = profile
        self.seed = seed
        noise = SeededNoise(seed: seed)
        solar = SolarArray(profile: profile, noise: noise)
        load = HouseLoad(noise: noise)
        clock = LocalClock(zone: zone)
        firstDay = clock.day(date)
        plan = (date, load.plan(for: date))
        let day = date.daysSinceEpoch
        let noise = noise
        let phases = (0..<3).map { phase in
            PhaseReading(
                powerW: 0, voltageV: 230, powerFactor: 1, apparentPowerVA: 0, currentA: 0,
                importedWh: noise.uniform(.counters, 1 + phase, in: 1_200_000...2_500_000),
                exportedWh: noise.uniform(.counters, 4 + phase, in: 300_000...900_000))
        }
        state = HomeState(
            at: firstDay.start, solarW: 0, loadW: 0, batteryW: 0, gridW: 0, phases: phases,
            batteryEnergyWh: profile.batteryCapacityWh * noise.uniform(.initialCharge, day, in: 0.25...0.60), socPercent: 0,
            chargedWh: 0, dischargedWh: 0, solarEnergyWh: 0, loadEnergyWh: 0, inverterAwake: false,
            yieldTodayWh: 0, yieldTotalWh: noise.uniform(.counters, 0, in: 4_000_000...9_000_000))
        state.yieldTodayWh = yieldOfDay(before: date)
        refresh(resettingDailyCounter: false)
    }

    /// Runs the home forward to `instant` (earlier instants change nothing).
    public mutating func advance(to instant: Date) {
        while state.at < instant {
            let seconds = min(Self.stepSeconds, instant.timeIntervalSince(state.at))
            integrate(seconds: seconds)
            state.at = state.at.addingTimeInterval(seconds)
            refresh(resettingDailyCounter: true)
        }
    }

    /// The counters take the powers of the step's start for the step's length.
    private mutating func integrate(seconds: Double) {
        let hours = seconds / 3600
        state.batteryEnergyWh += state.batteryW * hours
        state.chargedWh += max(0, state.batteryW) * hours
        state.dischargedWh += max(0, -state.batteryW) * hours
        state.solarEnergyWh += state.solarW * hours
        state.loadEnergyWh += state.loadW * hours
        state.yieldTodayWh += state.solarW * hours
        state.yieldTotalWh += state.solarW * hours
        for phase in state.phases.indices {
            state.phases[phase].importedWh += max(0, state.phases[phase].powerW) * hours
            state.phases[phase].exportedWh += max(0, -state.phases[phase].powerW) * hours
        }
    }

    /// Computes the powers at `state.at`. The inverters' daily counter restarts when they wake.
    private mutating func refresh(resettingDailyCounter: Bool) {
        let moment = clock.moment(at: state.at)
        if moment.date != plan.date { plan = (moment.date, load.plan(for: moment.date)) }
        let seconds = state.at.timeIntervalSince1970
        let sun = solar.output(at: moment, seconds: seconds)
        if resettingDailyCounter, sun.awake, !state.inverterAwake { state.yieldTodayWh = 0 }
        state.inverterAwake = sun.awake
        let household = load.phasesW(at: moment, seconds: seconds, plan: plan.runs)
        let loadW = household.0 + household.1 + household.2
        let batteryW = batteryPowerW(surplusW: sun.powerW - loadW, seconds: seconds)
        state.solarW = sun.powerW
        state.loadW = loadW
        state.batteryW = batteryW
        state.gridW = loadW + batteryW - sun.powerW
        state.socPercent = state.batteryEnergyWh / profile.batteryCapacityWh * 100
        // Three micro-inverters, one per phase; a three-phase battery inverter.
        let shared = (batteryW - sun.powerW) / 3
        for (phase, household) in [household.0, household.1, household.2].enumerated() {
            updateMeter(phase: phase, powerW: household + shared, seconds: seconds)
        }
    }

    /// The battery takes the surplus and covers the deficit, like a controller that aims at a few
    /// watts of import and is never quite exact; within its power limits, tapering in the last
    /// 10 % before full, never below the reserve, never beyond full.
    private func batteryPowerW(surplusW: Double, seconds: Double) -> Double {
        let capacity = profile.batteryCapacityWh
        let target = surplusW - 10 + 40 * (noise.smooth(.gridJitter, at: seconds, periodSeconds: 20) - 0.5)
        let soc = state.batteryEnergyWh / capacity * 100
        if target > 0 {
            let taper = min(1, max(0.1, (100 - soc) / 10))
            let room = max(0, capacity - state.batteryEnergyWh) * 3600 / Self.stepSeconds
            return min(target, profile.batteryMaxChargeW * taper, room)
        }
        let available = max(0, state.batteryEnergyWh - capacity * profile.batteryReservePercent / 100) * 3600 / Self.stepSeconds
        return max(target, -profile.batteryMaxDischargeW, -available)
    }

    /// What the grid meter measures on one phase besides the power: the voltage (rising a little
    /// while the phase exports), the power factor and the apparent power and current from it.
    private mutating func updateMeter(phase: Int, powerW: Double, seconds: Double) {
        let offset = Double(phase) * 10_000_000
        let voltage = 228 + 6 * noise.smooth(.voltage, at: seconds + offset, periodSeconds: 60) - 0.002 * powerW
        let factor = 0.82 + 0.17 * noise.smooth(.powerFactor, at: seconds + offset, periodSeconds: 90)
        let apparent = max(abs(powerW) / factor, 8)
        state.phases[phase].powerW = powerW
        state.phases[phase].voltageV = voltage
        state.phases[phase].powerFactor = (phase == 0 ? 1 : -1) * abs(powerW) / apparent
        state.phases[phase].apparentPowerVA = apparent
        state.phases[phase].currentA = apparent / voltage
    }

    /// The yield of the local day before `date`: what the inverters' daily counter still shows
    /// at midnight, asleep since dusk.
    private func yieldOfDay(before date: CivilDate) -> Double {
        var clock = clock
        let day = clock.day(CivilDate(daysSinceEpoch: date.daysSinceEpoch - 1))
        let step = 10.0
        var energyWh = 0.0
        var at = day.start
        while at < day.end {
            energyWh += solar.output(at: clock.moment(at: at), seconds: at.timeIntervalSince1970).powerW * step / 3600
            at = at.addingTimeInterval(step)
        }
        return energyWh
    }
}
