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
    static var options: [any OptionDeclaration] { [SharedOptions.config, dryRun, summary, SharedOptions.state, SharedOptions.logLevel] }

    let shared: SharedOptions
    let dryRun: Bool
    let summary: Bool

    init(parsing arguments: Arguments) throws(UsageError) {
        shared = try SharedOptions(parsing: arguments)
        dryRun = arguments.isSet(Self.dryRun)
        summary = arguments.isSet(Self.summary)
    }

    func run() async -> ExitStatus {
        await Daemon(configPath: shared.configPath, dryRun: dryRun, summary: summary, stateOverride: shared.stateOverride, log: shared.log).run()
    }
}
