@testable import Commands
import Foundation
@testable import Platform
import TestSupport
import Testing

/// The command line: each command takes the options it declares and refuses every other, with its
/// own usage; `help` and `--help` explain one command or list them all. Broker-free: the parser
/// is called directly, and the binary run where what it prints and its exit status are the point.
@Suite struct CommandLineTests {
    /// A command by the word that names it.
    static func command(_ name: String) throws -> any Command.Type {
        try #require(Commands.command(named: name), "no command \(name)")
    }

    /// The commands that take `--config`.
    static var readingAConfig: [String] {
        var names: [String] = []
        for command in Commands.all where command.options.contains(where: { $0.spec == SharedOptions.config.spec }) { names.append(command.name) }
        return names
    }

    static func parse(_ words: [String], for name: String) throws -> Arguments {
        try Arguments(parsing: words[...], for: command(name))
    }

    /// What parsing `words` for the command refuses them with; nil when it accepts them.
    static func refusal(_ words: [String], for name: String) throws -> UsageError? {
        let command = try command(name)
        do {
            _ = try command.init(parsing: Arguments(parsing: words[...], for: command))
            return nil
        } catch {
            return error
        }
    }

    /// A value each placeholder accepts.
    static func sample(_ spec: OptionSpec) -> [String] {
        guard case .value(let placeholder) = spec.kind else { return [spec.name] }
        let values = [
            "FILE": "/tmp/x", "DIR": "/tmp/d", "FILE.svg|DIR": "/tmp/d", "DURATION": "2m", "LEVEL": "debug", "HOST[:PORT]": "127.0.0.1:1883",
            "HOST:PORT": "127.0.0.1:1883", "N": "2", "YYYY-MM-DD": "2026-06-21", "NAME": "u", "VAR": "HOME",
        ]
        return [spec.name, values[placeholder] ?? "value"]
    }

    /// The issue's own example: run refuses --svg, names it, and shows run's usage, not all.
    @Test func runRefusesSVGWithItsOwnUsage() throws {
        let run = try runFlowbridge(["run", "--svg", "x"])
        #expect(run.status == 64)
        #expect(run.err.hasPrefix("flowbridge: run does not take --svg\nusage: flowbridge run "), "\(run.err)")
        #expect(run.err == "flowbridge: run does not take --svg\n\(RunCommand.usage)\n")
        #expect(!run.err.contains("flowbridge replay"), "the whole usage: \(run.err)")
        #expect(run.out.isEmpty)
    }

    /// Each command, given an option another command takes, is a usage error naming that option,
    /// with that command's usage (through the binary: the status and the text as a user sees them).
    @Test(arguments: [
        ("run", ["--svg", "x"]), ("check", ["--final"]), ("discover", ["--config", "c.yaml"]), ("replay", ["--dry-run", "t.ndjson"]),
        ("render", ["--listen", "60s", "--out", "x.svg"]), ("simulate", ["--trace", "-", "--state", "s.json"]), ("help", ["--config", "c.yaml"]),
        ("--version", ["--out", "x"]),
    ])
    func anOptionACommandDoesNotTakeIsAUsageError(name: String, words: [String]) throws {
        let command = try Self.command(name)
        let option = try #require(words.first { $0.hasPrefix("--") && !command.options.map(\.spec.name).contains($0) })
        let run = try runFlowbridge([name] + words)
        #expect(run.status == ExitStatus.usage.rawValue)
        #expect(run.err == "flowbridge: \(name) does not take \(option)\n\(command.usage)\n", "\(run.err)")
        #expect(run.out.isEmpty)
    }

    /// Every option any command declares, given to a command that does not declare it: refused
    /// by the parser, named.
    @Test(arguments: Commands.all.map { $0.name })
    func everyOptionOfAnotherCommandIsRefused(name: String) throws {
        let command = try Self.command(name)
        let own = Set(command.options.flatMap { [$0.spec.name] + [$0.spec.alias].compactMap { $0 } })
        let others = Commands.all.flatMap { $0.options.map(\.spec) }.filter { !own.contains($0.name) }
        #expect(!others.isEmpty)
        for spec in others {
            #expect(throws: UsageError("\(name) does not take \(spec.name)")) { try Self.parse(Self.sample(spec), for: name) }
        }
    }

    /// Every option a command declares is accepted, by its name and its short name, with a value
    /// it can read.
    @Test(arguments: Commands.all.map { $0.name })
    func everyDeclaredOptionIsAccepted(name: String) throws {
        let command = try Self.command(name)
        for spec in command.options.map(\.spec) {
            for word in [spec.name] + [spec.alias].compactMap({ $0 }) {
                let words = [word] + Self.sample(spec).dropFirst()
                let arguments = try Self.parse(words + Self.required(of: command, besides: spec), for: name)
                #expect(!arguments.helpRequested)
            }
        }
    }

    /// What a command needs given besides `spec` (its required options, its operand) to parse.
    static func required(of command: any Command.Type, besides spec: OptionSpec) -> [String] {
        let options = command.options.map(\.spec).filter { $0.isRequired && $0 != spec }.flatMap(sample)
        return options + (command.name == ReplayCommand.name ? ["t.ndjson"] : [])
    }

    /// The config, state and log options read the same in every command that takes them: one
    /// `SharedOptions` reads them, `--state` only where the command declares it.
    @Test(arguments: Self.readingAConfig)
    func theSharedOptionsReadAlikeEverywhere(name: String) throws {
        let command = try Self.command(name)
        let takesState = command.options.contains { $0.spec.name == "--state" }
        let words = ["--config", "c.yaml", "--log-level", "error"] + (takesState ? ["--state", "s.json"] : []) + Self.required(of: command, besides: SharedOptions.config.spec)
        let arguments = try Self.parse(words, for: name)
        let state = command.options.compactMap { $0 as? Option<String?> }.first { $0.spec.name == "--state" }
        let shared = try SharedOptions(parsing: arguments, state: state ?? SharedOptions.state)
        #expect(shared.configPath == "c.yaml" && shared.log.threshold == .error)
        #expect(shared.stateOverride == (takesState ? "s.json" : nil))
    }

    /// Every option given at once reaches the command as its value; the defaults where none is.
    @Test func theOptionsReachTheCommands() throws {
        let run = try RunCommand(parsing: Self.parse(
            ["-c", "c.yaml", "--dry-run", "--summary", "--state", "s.json", "--log-level", "debug"], for: "run"))
        #expect(run.shared.configPath == "c.yaml" && run.dryRun && run.summary && run.shared.stateOverride == "s.json" && run.shared.log.threshold == .debug)
        let plain = try RunCommand(parsing: Self.parse([], for: "run"))
        #expect(plain.shared.configPath == "/etc/flowbridge/config.yaml" && !plain.dryRun && !plain.summary && plain.shared.stateOverride == nil)
        #expect(plain.shared.log.threshold == .info)

        let check = try CheckCommand(parsing: Self.parse(["--config", "c.yaml", "--state", "s.json", "--listen", "2m", "--log-level", "warning"], for: "check"))
        #expect(check.shared.configPath == "c.yaml" && check.shared.stateOverride == "s.json" && check.listenSeconds == 120 && check.shared.log.threshold == .warning)
        #expect(try CheckCommand(parsing: Self.parse([], for: "check")).listenSeconds == nil)

        let discover = try DiscoverCommand(parsing: Self.parse(
            ["--broker", "[::1]:1884", "--username", "u", "--password-env", "HOME", "--listen", "5s", "-o", "found.yaml"], for: "discover"))
        #expect(discover.broker.host == "::1" && discover.broker.port == 1884 && discover.broker.username == "u")
        #expect(discover.broker.passwordEnv == "HOME" && discover.password == ProcessInfo.processInfo.environment["HOME"])
        #expect(discover.seconds == 5 && discover.out == "found.yaml")
        let listening = try DiscoverCommand(parsing: Self.parse(["--broker", "h"], for: "discover"))
        #expect(listening.seconds == 60 && listening.out == nil && listening.password == nil && listening.broker.port == 1883)

        let replay = try ReplayCommand(parsing: Self.parse(["--config", "c.yaml", "--final", "--state", "s.json", "--svg", "pictures", "-"], for: "replay"))
        #expect(replay.shared.configPath == "c.yaml" && replay.final && replay.shared.stateOverride == "s.json" && replay.svg == "pictures" && replay.trace == "-")

        let render = try RenderCommand(parsing: Self.parse(["--config", "c.yaml", "--state", "s.json", "-o", "w.svg"], for: "render"))
        #expect(render.shared.configPath == "c.yaml" && render.shared.stateOverride == "s.json" && render.out == "w.svg")

        let simulate = try SimulateCommand(parsing: Self.parse(["--trace", "-", "--speed", "60", "--date", "2026-06-21", "--seed", "7"], for: "simulate"))
        guard case .trace("-") = simulate.options.output else { Issue.record("\(simulate.options.output)"); return }
        #expect(simulate.options.speed == 60 && simulate.options.date?.description == "2026-06-21" && simulate.options.seed == 7)
        let live = try SimulateCommand(parsing: Self.parse(["--broker", "127.0.0.1:1884"], for: "simulate"))
        guard case .broker("127.0.0.1", 1884) = live.options.output else { Issue.record("\(live.options.output)"); return }
        #expect(live.options.speed == 1 && live.options.date == nil && live.options.seed == 1)
    }

    /// What each command refuses in what its options mean together, or in a value; the parser's
    /// own refusals (a value missing, an operand too many, a required option missing).
    @Test(arguments: [
        ("run", ["-c"], "-c needs a value"),
        ("run", ["extra"], "run takes no other arguments"),
        ("run", ["--log-level", "loud"], "unknown log level 'loud'"),
        ("run", ["--config=c.yaml"], "--config takes its value as the next word: --config c.yaml"),
        ("check", ["--listen", "25h"], "--listen needs a duration from 1s to 24h, such as 60s or 2m, found '25h'"),
        ("discover", [], "discover needs --broker HOST[:PORT]"),
        ("discover", ["--broker", "h", "--listen", "0s"], "--listen needs a duration from 1s to 24h, such as 60s or 2m, found '0s'"),
        ("discover", ["--broker", "h", "--password-env", "HOME"], "--password-env needs --username"),
        ("replay", [], "replay needs one TRACE (a file, or - for standard input)"),
        ("replay", ["a", "b"], "replay needs one TRACE (a file, or - for standard input)"),
        ("render", [], "render needs --out FILE.svg|DIR"),
        ("render", ["--out", "d", "extra"], "render takes no other arguments"),
        ("simulate", [], "simulate needs --broker HOST:PORT, or --trace FILE (- for standard output)"),
        ("help", ["run", "check"], "help explains one COMMAND"),
        ("--version", ["1"], "--version takes no other arguments"),
    ])
    func commandsRefuseWhatTheirOptionsCannotMean(name: String, words: [String], message: String) throws {
        #expect(try Self.refusal(words, for: name) == UsageError(message))
    }

    /// `help` with a command it does not know answers with the overview, as an unknown command does.
    @Test(arguments: [["help", "bogus"], ["bogus"], ["--bogus"], []])
    func anUnknownCommandGetsTheOverview(words: [String]) throws {
        let run = try runFlowbridge(words)
        #expect(run.status == 64)
        let problem = words.last.map { "unknown command '\($0)'" } ?? "no command"
        #expect(run.err == "flowbridge: \(problem)\n\(Commands.overview)\n", "\(run.err)")
    }

    /// `flowbridge help COMMAND` and `flowbridge COMMAND --help` (or `-h`, wherever it stands)
    /// print that command's usage and nothing else, and exit 0.
    @Test(arguments: Commands.all.map { $0.name })
    func helpPrintsOneCommandsUsage(name: String) throws {
        let command = try Self.command(name)
        // An option's spelling is never an operand: `--version` is `version` after `help`.
        let topic = ([name] + command.aliases).first { !$0.hasPrefix("-") } ?? name
        for words in [["help", topic], [name, "--help"], [name, "-h"], [name, "--bogus", "--help"]] {
            let run = try runFlowbridge(words)
            #expect(run.status == 0, "\(words): \(run.err)")
            #expect(run.out == command.usage + "\n", "\(words)")
            #expect(run.err.isEmpty, "\(words): \(run.err)")
        }
        #expect(command.usage.hasPrefix("usage: flowbridge \(name)"))
    }

    /// `help replay` as a user reads it: the synopsis, what replay does, every option with its help.
    @Test func helpReplayExplainsReplay() throws {
        let run = try runFlowbridge(["help", "replay"])
        #expect(run.status == 0)
        let lines = run.out.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "usage: flowbridge replay [--config FILE] [--final] [--state FILE] [--svg DIR] [--book FILE] [--log-level LEVEL] TRACE")
        for label in ["TRACE", "-c, --config FILE", "--final", "--state FILE", "--svg DIR", "--book FILE", "--log-level LEVEL", "-h, --help"] {
            #expect(lines.contains { $0.hasPrefix("  \(label) ") }, "\(label) is not explained: \(run.out)")
        }
        #expect(run.out.contains("(default: /etc/flowbridge/config.yaml)"))
        #expect(!run.out.contains("--dry-run"), "another command's option: \(run.out)")
    }

    /// `flowbridge help` (or `--help`, `-h`): every command, one line each, with its options.
    @Test(arguments: [["help"], ["--help"], ["-h"]])
    func theOverviewListsEveryCommandInALine(words: [String]) throws {
        let run = try runFlowbridge(words)
        #expect(run.status == 0)
        #expect(run.out == Commands.overview + "\n")
        for command in Commands.all {
            let line = try #require(run.out.split(separator: "\n").first { $0.contains("flowbridge \(command.name) ") || $0.hasSuffix("flowbridge \(command.name)") })
            for spec in command.options.map(\.spec) { #expect(line.contains(spec.word), "\(command.name): \(spec.word) missing in \(line)") }
        }
    }

    /// The declarations are sound: no spelling twice in a command, every option in its synopsis
    /// (some commands write their own), and the usage explains each.
    @Test(arguments: Commands.all.map { $0.name })
    func eachCommandDeclaresItsOptionsOnce(name: String) throws {
        let command = try Self.command(name)
        let words = command.options.flatMap { [$0.spec.name] + [$0.spec.alias].compactMap { $0 } }
        #expect(Set(words).count == words.count, "\(words)")
        #expect(!words.contains { Arguments.helpWords.contains($0) })
        for spec in command.options.map(\.spec) {
            #expect(command.synopsis.contains(spec.word), "\(spec.word) is not in \(command.synopsis)")
            #expect(command.usage.contains("  \(spec.label) "), "\(spec.label) is not explained")
        }
        let names = Commands.all.flatMap { [$0.name] + $0.aliases }
        #expect(Set(names).count == names.count, "two commands answer to one word: \(names)")
    }
}
