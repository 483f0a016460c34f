import FlowCore
import FoundationEssentials
import Runtime
import Simulator

/// The simulated home's clock, shared by `simulate`, which runs its home on it, and by `run`, which
/// can run the daemon on it (the demo, tests of whole days): given the same `--speed` and
/// `--origin`, both read the same time, so what the home's counters count and what the daemon
/// integrates from its power readings cover the same hours.
enum SimulatedClock {
    static let origin = Option<Date?>(
        "--origin", placeholder: "EPOCH",
        help: "the instant (Unix seconds) from which the clock runs at --speed, to share one clock between simulate and run (default: now)",
        default: nil
    ) { text throws(UsageError) in
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds < 1e11 else {
            throw UsageError("--origin must be an instant in Unix seconds, not '\(text)'")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    /// `--speed N`: simulated seconds per real second, within what the simulation runs at.
    static func speed(help: String, default value: Double) -> Option<Double> {
        Option<Double>("--speed", placeholder: "N", help: help, default: value, shownDefault: JSONValue.format(value)) { text throws(UsageError) in
            guard let speed = Double(text), speed > 0, speed <= Simulation.maximumSpeed else {
                throw UsageError("--speed must be simulated seconds per real second, more than 0 and at most \(Int(Simulation.maximumSpeed)), not '\(text)'")
            }
            return speed
        }
    }
}
