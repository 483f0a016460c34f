import Configuration
import Platform

/// The config, state and log options, declared once and read once (as swift-argument-parser's
/// `@OptionGroup`): a command that reads a config lists the ones it takes in its `options` and
/// holds one `SharedOptions`, so each reads the same way wherever it is given.
struct SharedOptions {
    static let config = Option<String>(
        "--config", alias: "-c", placeholder: "FILE", help: "the config", default: "/etc/flowbridge/config.yaml",
        shownDefault: "/etc/flowbridge/config.yaml"
    ) { $0 }

    static let state = Option<String?>(
        "--state", placeholder: "FILE",
        help: "the state file to use instead of state_file or the default place ($STATE_DIRECTORY, /var/lib/flowbridge, or ~/.local/state/flowbridge)")

    static let logLevel = Option<Logger.Level>(
        "--log-level", placeholder: "LEVEL", help: "what goes to the log: debug, info, warning or error", default: .info, shownDefault: "info"
    ) { text throws(UsageError) in
        guard let level = Logger.Level(word: text) else { throw UsageError("unknown log level '\(text)'") }
        return level
    }

    /// `--listen DURATION` (`check` and `discover`): from 1 s to 24 h, as `60s` or `2m`.
    static func listenSeconds(_ text: String) throws(UsageError) -> Double {
        guard let seconds = ConfigReader.seconds(text), seconds >= 1, seconds <= 86_400 else {
            throw UsageError("--listen needs a duration from 1s to 24h, such as 60s or 2m, found '\(text)'")
        }
        return seconds
    }

    /// `--config`: the file to read.
    let configPath: String
    /// `--state`: the state file to use instead of the configured one; nil when not given, or
    /// when the command does not take it.
    let stateOverride: String?
    /// The log at the `--log-level` given.
    let log: Logger

    /// `state`: the command's own wording of `--state`, where it means something of its own
    /// (`replay` reads and writes it; a run only moves where the state is).
    init(parsing arguments: Arguments, state: Option<String?> = Self.state) throws(UsageError) {
        configPath = try arguments.value(Self.config)
        stateOverride = arguments.declares(state) ? try arguments.value(state) : nil
        log = try arguments.log()
    }
}

extension Arguments {
    /// The log at the `--log-level` given.
    func log() throws(UsageError) -> Logger { Logger(threshold: try value(SharedOptions.logLevel)) }
}
