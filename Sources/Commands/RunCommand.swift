import FoundationEssentials
import Platform
import Runtime

/// `flowbridge run`: the daemon (`Daemon` in Runtime), as the service starts it.
struct RunCommand: Command {
    static let name = "run"
    static let abstract = "The daemon: reads every source's topic on the broker, and sends each widget's pushes to the sinks the config names, until SIGTERM or SIGINT; SIGHUP reloads the config."

    static let dryRun = Flag(
        "--dry-run",
        help: "read the config and the state, connect and compute, print what would be sent; deliver nothing, publish nothing, write no state (safe beside the service)")
    static let summary = Flag(
        "--summary",
        help: "under each push's NDJSON line on standard output, the widget in one line (12:41:07 power: Solar 3.2 kW → Home 1.0 kW, Battery +800 W 76%, …)")
    static let speed = SimulatedClock.speed(
        help: "the daemon's clock runs N times as fast from --origin, as `simulate` runs its home: for the demo and tests of whole days, never for a real home", default: 1)
    static var options: [any OptionDeclaration] {
        [SharedOptions.config, dryRun, summary, SharedOptions.state, speed, SimulatedClock.origin, SharedOptions.logLevel]
    }

    let shared: SharedOptions
    let dryRun: Bool
    let summary: Bool
    let time: DaemonTime

    init(parsing arguments: Arguments) throws(UsageError) {
        shared = try SharedOptions(parsing: arguments)
        dryRun = arguments.isSet(Self.dryRun)
        summary = arguments.isSet(Self.summary)
        let speed = try arguments.value(Self.speed)
        let origin = try arguments.value(SimulatedClock.origin)
        if origin != nil, speed == 1 { throw UsageError("--origin goes with --speed: at 1x the daemon's clock is the wall clock") }
        time = speed == 1 ? .wall : DaemonTime(speed: speed, origin: origin ?? Date())
    }

    func run() async -> ExitStatus {
        await Daemon(
            configPath: shared.configPath, dryRun: dryRun, summary: summary, stateOverride: shared.stateOverride, log: shared.log, time: time
        ).run()
    }
}
