import FlowCore

/// What the household draws, per phase: a base load that follows the day (standby, a cycling
/// fridge, lights and screens in the evening, a little wander) and the big appliances of the
/// day's plan (the kettle a few times, the oven once) that make the spikes.
struct HouseLoad: Sendable {
    let noise: SeededNoise

    /// One appliance switched on for a while.
    struct Run: Sendable {
        var startSeconds: Double
        var durationSeconds: Double
        var powerW: Double
        /// The heating element's thermostat: on for `onSeconds` of every `cycleSeconds` after the
        /// first `preheatSeconds` (nil: on all the time).
        var thermostat: (preheatSeconds: Double, onSeconds: Double, cycleSeconds: Double)?
        /// How the appliance's power splits over the phases L1, L2, L3.
        var phaseShares: (Double, Double, Double)

        func powerW(atClockSeconds seconds: Double) -> Double {
            let into = seconds - startSeconds
            guard into >= 0, into < durationSeconds else { return 0 }
            guard let thermostat, into >= thermostat.preheatSeconds else { return powerW }
            let phase = (into - thermostat.preheatSeconds).truncatingRemainder(dividingBy: thermostat.cycleSeconds)
            return phase < thermostat.onSeconds ? powerW : 0
        }
    }

    /// The appliances of one day: the same every time for a seed and a date.
    func plan(for date: CivilDate) -> [Run] {
        let day = date.daysSinceEpoch
        func draw(_ stream: SeededNoise.Stream, _ slot: Int, in range: ClosedRange<Double>) -> Double {
            noise.uniform(stream, day &* 16 &+ slot, in: range)
        }
        var runs: [Run] = []
        // The kettle (L1): breakfast, the afternoon tea most days, sometimes late in the evening.
        let kettles: [(hour: Double, chance: Double)] = [(7.0, 1), (15.5, 0.75), (21.0, 0.5)]
        for (slot, kettle) in kettles.enumerated() where draw(.kettle, slot * 4, in: 0...1) < kettle.chance {
            runs.append(Run(
                startSeconds: (kettle.hour + draw(.kettle, slot * 4 + 1, in: -0.6...0.6)) * 3600,
                durationSeconds: draw(.kettle, slot * 4 + 2, in: 150...240), powerW: draw(.kettle, slot * 4 + 3, in: 1950...2200),
                thermostat: nil, phaseShares: (1, 0, 0)))
        }
        // The oven (L2 + L3): lunch at the weekend, dinner on weekdays. Full power to preheat,
        // then the thermostat keeps it hot.
        let weekday = (day % 7 + 7 + 4) % 7  // 1970-01-01 was a Thursday; 0 is Sunday
        let mealHour = weekday == 0 || weekday == 6 ? 11.75 : 18.0
        runs.append(Run(
            startSeconds: (mealHour + draw(.oven, 0, in: -0.6...0.6)) * 3600, durationSeconds: draw(.oven, 1, in: 2400...3300),
            powerW: draw(.oven, 2, in: 2600...3000), thermostat: (preheatSeconds: 600, onSeconds: 45, cycleSeconds: 100),
            phaseShares: (0, 0.5, 0.5)))
        return runs
    }

    /// The household's draw per phase at `moment`, with `plan` the appliances of its date.
    func phasesW(at moment: LocalMoment, seconds: Double, plan: [Run]) -> (Double, Double, Double) {
        let hour = moment.clockSeconds / 3600
        // Standby, the routers, the heating pump: always there.
        let standby = 160.0
        // People at home: a small morning, a quiet day, a long evening.
        let activity = Self.interpolate(hour, [(0, 40), (6, 40), (6.5, 260), (8.5, 260), (9, 110), (17, 110), (18, 420), (22, 420), (23, 70), (24, 40)])
        let wander = 80 * (noise.smooth(.baseLoad, at: seconds, periodSeconds: 300) - 0.5)
        // The fridge compressor (L3): about a third of the time, in cycles of 20 to 40 minutes.
        let fridge = noise.smooth(.fridge, at: seconds, periodSeconds: 1500) > 0.62 ? 95.0 : 0
        let base = standby + activity + wander
        var phases = (0.4 * base, 0.3 * base, 0.3 * base + fridge)
        for run in plan {
            let power = run.powerW(atClockSeconds: moment.clockSeconds)
            guard power > 0 else { continue }
            phases.0 += power * run.phaseShares.0
            phases.1 += power * run.phaseShares.1
            phases.2 += power * run.phaseShares.2
        }
        return phases
    }

    /// Piecewise linear through `points` (sorted by x).
    static func interpolate(_ x: Double, _ points: [(Double, Double)]) -> Double {
        guard let first = points.first, x > first.0 else { return points.first?.1 ?? 0 }
        for (a, b) in zip(points, points.dropFirst()) where x <= b.0 {
            return a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
        }
        return points.last!.1
    }
}
