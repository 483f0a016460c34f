import Platform

/// `flowbridge help [COMMAND]` (or `--help`): every command in one line, or one command's usage.
struct HelpCommand: Command {
    static let name = "help"
    static let aliases = ["--help", "-h"]
    static let abstract = "Prints every command with its options in one line, or what one command does and each of its options."
    static let operand: Operand? = Operand(synopsis: "[COMMAND]", help: "the command to explain (version for --version)")
    static var options: [any OptionDeclaration] { [] }

    /// nil: the overview.
    let topic: (any Command.Type)?

    init(parsing arguments: Arguments) throws(UsageError) {
        guard arguments.operands.count <= 1 else { throw UsageError("help explains one COMMAND") }
        topic = try arguments.operands.first.map { name throws(UsageError) in
            guard let command = Commands.command(named: name) else { throw UsageError("unknown command '\(name)'", showsOverview: true) }
            return command
        }
    }

    func run() -> ExitStatus {
        print(topic?.usage ?? Commands.overview)
        return .success
    }
}
