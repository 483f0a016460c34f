import Platform

/// The command line (DESIGN §4): the word after `flowbridge` picks the command, which parses the
/// rest itself (`Command`). `main.swift` only calls `Commands.main`.
public enum Commands {
    /// Every command, in the order the overview lists them.
    static var all: [any Command.Type] {
        [
            RunCommand.self, CheckCommand.self, DiscoverCommand.self, RecordCommand.self, ReplayCommand.self, RenderCommand.self,
            HistoryCommand.self, SimulateCommand.self, HelpCommand.self, VersionCommand.self,
        ]
    }

    static func command(named word: String) -> (any Command.Type)? {
        all.first { $0.name == word || $0.aliases.contains(word) }
    }

    /// What `flowbridge help` prints: every command's synopsis, one line each.
    static var overview: String {
        let width = all.filter { !$0.synopsis.isEmpty }.map { $0.name.count }.max() ?? 0
        let lines = all.enumerated().map { index, command in
            let synopsis = command.synopsis
            let line = synopsis.isEmpty ? "flowbridge \(command.name)" : "flowbridge \(command.name.padding(to: width)) \(synopsis)"
            return (index == 0 ? "usage: " : "       ") + line
        }
        return (lines + ["", "flowbridge help COMMAND, or flowbridge COMMAND --help: what the command does, and each of its options."])
            .joined(separator: "\n")
    }

    /// Runs the command line; returns the exit status.
    public static func main(_ words: [String]) async -> ExitStatus {
        guard let word = words.first else { return usageFailure("no command") }
        guard let command = command(named: word) else { return usageFailure("unknown command '\(word)'") }
        return await command.main(words.dropFirst())
    }

    /// A command line whose command is missing or unknown: said, with the overview.
    static func usageFailure(_ message: String) -> ExitStatus {
        StandardError.print("flowbridge: \(message)\n\(overview)")
        return .usage
    }
}
