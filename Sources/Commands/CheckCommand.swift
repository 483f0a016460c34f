import Configuration
import Platform

/// `flowbridge check`: the config checked as `run` would, in this environment, and what it
/// resolves to; with `--listen`, then the broker watched and the signs checked (`ListenCheck`).
struct CheckCommand: Command {
    static let name = "check"
    static let abstract = "Checks the config as run would, in this environment (every problem at once, each with its key path and line), and prints what it resolves to: which topic feeds which slot, with which sign, unit and total."

    static let listen = Option<Double?>(
        "--listen", placeholder: "DURATION",
        help: "then watch every source this long (60s, 2m; 1s to 24h) with the daemon's own connection, and report what came and whether the signs look right (exit 1: a source never reported; 2: a sign looks wrong)",
        default: nil
    ) { text throws(UsageError) in try SharedOptions.listenSeconds(text) }
    static var options: [any OptionDeclaration] { [SharedOptions.config, SharedOptions.state, listen, SharedOptions.logLevel] }

    let shared: SharedOptions
    /// `--listen`: seconds.
    let listenSeconds: Double?

    init(parsing arguments: Arguments) throws(UsageError) {
        shared = try SharedOptions(parsing: arguments)
        listenSeconds = try arguments.value(Self.listen)
    }

    func run() async -> ExitStatus {
        if let listenSeconds {
            return await ListenCheck(configPath: shared.configPath, stateOverride: shared.stateOverride, seconds: listenSeconds, log: shared.log).run()
        }
        let context = ConfigContext.process(stateOverride: shared.stateOverride)
        guard let config = DaemonConfig.loadReporting(shared.configPath, context: context) else { return .config }
        let statePath = context.statePath(configured: config.stateFile)
        let summary = ConfigSummary(
            config: config, zone: config.zone, statePath: statePath, bookPath: context.bookPath(configured: config.bookFile, statePath: statePath))
        print(summary.text, terminator: "")
        return .success
    }
}
