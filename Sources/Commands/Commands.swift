import Configuration
import Delivery
import Discovery
import FlowCore
import FoundationEssentials
import Glibc
import Persistence
import Platform
import Runtime

/// The command line (DESIGN §4). `main.swift` only calls `Commands.main`.
public enum Commands {
    static let usage = """
        usage: flowbridge run    [--config FILE] [--dry-run] [--summary] [--state FILE] [--log-level debug|info|warning|error]
               flowbridge check  [--config FILE] [--state FILE] [--listen DURATION]
               flowbridge discover --broker HOST[:PORT] [--username NAME --password-env VAR] [--listen DURATION] [--out FILE]
               flowbridge replay [--config FILE] [--final] [--state FILE] [--svg DIR] TRACE   (TRACE - for standard input)
               flowbridge render [--config FILE] [--state FILE] --out FILE.svg|DIR
               flowbridge simulate --broker HOST:PORT | --trace FILE|-  [--speed N] [--date YYYY-MM-DD] [--seed N]
               flowbridge --version
          --config FILE  the config (default: /etc/flowbridge/config.yaml)
          --dry-run      read the config and the state, connect and compute, print what would be sent;
                         deliver nothing, publish nothing, write no state (safe beside the service)
          --summary      run: under each push's NDJSON line on standard output, the widget in one line
                         (12:41:07 power: Solar 3.2 kW → Home 1.0 kW, Battery +800 W 76%, …)
          --state FILE   the state file to use instead of state_file or the default place
                         ($STATE_DIRECTORY, /var/lib/flowbridge, or ~/.local/state/flowbridge)
          --svg DIR      replay: also draw each widget and its day chart into DIR
          --out FILE|DIR render: where the pictures go; discover: the config to write (new file)
          --listen DURATION  check: watch every source this long (60s, 2m) and report what came and
                         whether the signs look right; discover: how long to listen (default 60s)
          --broker HOST[:PORT]  discover: the broker to listen to (port 1883 unless given)
          --username NAME, --password-env VAR  discover: the broker login; the password is read
                         from the environment variable VAR, and the config written refers to it
        """

    struct Arguments {
        var command = ""
        var config = "/etc/flowbridge/config.yaml"
        var final = false
        var dryRun = false
        var summary = false
        var state: String?
        var out: String?
        var svg: String?
        /// `--listen`: seconds.
        var listen: Double?
        var broker: String?
        var username: String?
        var passwordEnv: String?
        var logLevel = Logger.Level.info
        var positional: [String] = []
        /// `simulate`'s options by flag, checked by `SimulateCommand.Options`.
        var simulation: [String: String] = [:]
    }

    struct UsageError: Error { var message: String }

    static func parse(_ words: [String]) throws(UsageError) -> Arguments {
        var arguments = Arguments()
        var rest = words[...]
        guard let command = rest.popFirst() else { throw UsageError(message: "no command") }
        arguments.command = command
        func value(_ flag: String) throws(UsageError) -> String {
            guard let value = rest.popFirst() else { throw UsageError(message: "\(flag) needs a value") }
            return value
        }
        while let word = rest.popFirst() {
            switch word {
            case "--config", "-c": arguments.config = try value(word)
            case "--final": arguments.final = true
            case "--dry-run": arguments.dryRun = true
            case "--summary": arguments.summary = true
            case "--state": arguments.state = try value(word)
            case "--out", "-o": arguments.out = try value(word)
            case "--svg": arguments.svg = try value(word)
            case "--trace", "--speed", "--date", "--seed": arguments.simulation[word] = try value(word)
            case "--listen":
                let text = try value(word)
                guard let seconds = ConfigReader.seconds(text), seconds >= 1, seconds <= 86_400 else {
                    throw UsageError(message: "--listen needs a duration from 1s to 24h, such as 60s or 2m, found '\(text)'")
                }
                arguments.listen = seconds
            case "--broker": arguments.broker = try value(word)
            case "--username": arguments.username = try value(word)
            case "--password-env": arguments.passwordEnv = try value(word)
            case "--log-level":
                let text = try value(word)
                guard let level = Logger.Level(word: text) else { throw UsageError(message: "unknown log level '\(text)'") }
                arguments.logLevel = level
            // `flowbridge check --help` is how most people ask: the usage, whatever the command.
            case "--help", "-h": arguments.command = "help"
            case "-": arguments.positional.append(word)
            default:
                if word.hasPrefix("-") { throw UsageError(message: "unknown option \(word)") }
                arguments.positional.append(word)
            }
        }
        return arguments
    }

    /// Runs the command line; returns the exit status.
    public static func main(_ words: [String]) async -> ExitStatus {
        let arguments: Arguments
        do {
            arguments = try parse(words)
        } catch {
            StandardError.print("flowbridge: \(error.message)\n\(usage)")
            return .usage
        }
        switch arguments.command {
        case "run":
            guard arguments.positional.isEmpty else { return usageFailure("run takes no other arguments") }
            return await Daemon(
                configPath: arguments.config, dryRun: arguments.dryRun, summary: arguments.summary, stateOverride: arguments.state,
                log: Logger(threshold: arguments.logLevel)
            ).run()
        case "check":
            guard arguments.positional.isEmpty else { return usageFailure("check takes no other arguments") }
            if let seconds = arguments.listen {
                return await ListenCommand(
                    configPath: arguments.config, stateOverride: arguments.state, seconds: seconds, log: Logger(threshold: arguments.logLevel)
                ).run()
            }
            return check(arguments)
        case "discover":
            guard arguments.positional.isEmpty, let broker = arguments.broker else {
                return usageFailure("discover needs --broker HOST[:PORT], and no other arguments")
            }
            guard let address = BrokerAddress(broker) else { return usageFailure("--broker: '\(broker)' is not HOST or HOST:PORT") }
            if arguments.passwordEnv != nil, arguments.username == nil { return usageFailure("--password-env needs --username") }
            var password: String?
            if let variable = arguments.passwordEnv {
                guard let value = ProcessInfo.processInfo.environment[variable] else {
                    return usageFailure("--password-env: the environment variable \(variable) is not set")
                }
                password = value
            }
            return await DiscoverCommand(
                broker: BrokerSettings(host: address.host, port: address.port, username: arguments.username, passwordEnv: arguments.passwordEnv),
                password: password, seconds: arguments.listen ?? DiscoverCommand.defaultSeconds, out: arguments.out,
                log: Logger(threshold: arguments.logLevel)
            ).run()
        case "replay":
            guard arguments.positional.count == 1 else { return usageFailure("replay needs one TRACE (a file, or - for standard input)") }
            return replay(arguments, trace: arguments.positional[0])
        case "render":
            guard arguments.positional.isEmpty, let out = arguments.out else { return usageFailure("render needs --out FILE.svg or DIR, and no other arguments") }
            guard let config = DaemonConfig.loadReporting(arguments.config) else { return .config }
            let state = ConfigContext.process(stateOverride: arguments.state).statePath(configured: config.stateFile)
            return RenderCommand(config: config, configPath: arguments.config, statePath: state, out: out, log: Logger(threshold: arguments.logLevel)).run()
        case "simulate":
            guard arguments.positional.isEmpty else { return usageFailure("simulate takes no other arguments") }
            do {
                var options = arguments.simulation
                options["--broker"] = arguments.broker
                return await SimulateCommand(options: try SimulateCommand.Options(options), log: Logger(threshold: arguments.logLevel)).run()
            } catch {
                return usageFailure(error.message)
            }
        case "help", "--help", "-h":
            print(usage)
            return .success
        case "version", "--version":
            print("flowbridge \(Flowbridge.version)")
            return .success
        default:
            return usageFailure("unknown command '\(arguments.command)'")
        }
    }

    static func usageFailure(_ message: String) -> ExitStatus {
        StandardError.print("flowbridge: \(message)\n\(usage)")
        return .usage
    }

    /// Checks the config as `run` would, in this environment: every problem `run` finds in it.
    static func check(_ arguments: Arguments) -> ExitStatus {
        let context = ConfigContext.process(stateOverride: arguments.state)
        guard let config = DaemonConfig.loadReporting(arguments.config, context: context) else { return .config }
        let summary = ConfigSummary(config: config, zone: config.zone, statePath: context.statePath(configured: config.stateFile))
        print(summary.text, terminator: "")
        return .success
    }

    static func replay(_ arguments: Arguments, trace: String) -> ExitStatus {
        guard let config = DaemonConfig.loadReporting(arguments.config) else { return .config }
        let log = Logger(threshold: arguments.logLevel)
        let zone = config.zone
        var replay = Replay(config: config.flow, zone: zone)
        var pictures: ReplayPictures?
        if let svg = arguments.svg {
            do { pictures = ReplayPictures(folder: try PictureFolder(path: svg), zone: zone) } catch {
                StandardError.print("flowbridge: cannot create the picture folder: \(error)")
                return .cannotCreate
            }
        }
        let store = arguments.state.map(StateStore.init(path:))
        // The state has one owner at a time: a replay into the daemon's state waits for no one.
        var lock: StateLock?
        if let store {
            do {
                lock = try StateLock(statePath: store.path)
                try replay.restore(from: store, configPath: arguments.config, log: log)
            } catch let error as StateLock.Failure {
                StandardError.print("flowbridge: \(error)")
                if case .held = error { return .stateInUse }
                return .cannotCreate  // the state could not be written either
            } catch {
                StandardError.print("flowbridge: \(error)")
                return .config
            }
        }
        defer { withExtendedLifetime(lock) {} }
        let fd: Int32 = trace == "-" ? 0 : open(trace, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            StandardError.print("flowbridge: \(FileError(trace))")
            return .noInput
        }
        defer { if fd != 0 { close(fd) } }
        var output = OutputBuffer()
        func emit(_ items: [FlowEngine.Output]) {
            output.write(items, zone: zone, log: log)
            pictures?.take(items)
        }
        var number = 0
        for line in LineReader(fd: fd) {
            number += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            do {
                let outputs = replay.feed(try TraceMessage(line: line))
                emit(outputs)
            } catch {
                log.log(.warning, "\(trace == "-" ? "stdin" : trace) line \(number): \(error.reason); skipped")
            }
        }
        emit(replay.finish())
        if arguments.final { replay.finalLines().forEach { output.line($0) } }
        output.flush()
        if let store {
            do { try store.save(replay.engine.snapshot()) } catch {
                StandardError.print("flowbridge: cannot write the state: \(error)")
                return .cannotCreate
            }
        }
        do { _ = try pictures?.write(widgets: config.flow.widgetNames, through: replay.engine.clock) } catch {
            StandardError.print("flowbridge: cannot write the pictures: \(error)")
            return .cannotCreate
        }
        return .success
    }
}

/// Buffered standard output: replay writes many short lines.
struct OutputBuffer {
    var bytes: [UInt8] = []

    mutating func line(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        bytes.append(0x0A)
    }

    /// The engine's outputs: pushes as NDJSON lines (the stdout sink's bytes), diagnostics to the log.
    mutating func write(_ outputs: [FlowEngine.Output], zone: any LocalTimeZone, log: Logger) {
        for output in outputs {
            switch output {
            case .push(let widget, let at, let push):
                PushLine.write(widget: widget, at: at, patch: push.contentPatch, zone: zone, to: &bytes)
                bytes.append(0x0A)
                if bytes.count >= 65_536 { flush() }
            case .diagnostic(let diagnostic):
                log.log(diagnostic)
            }
        }
    }

    mutating func flush() {
        _ = FileDescriptor.writeAll(bytes, to: 1)
        bytes.removeAll(keepingCapacity: true)
    }
}
