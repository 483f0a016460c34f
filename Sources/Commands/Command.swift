import Platform

/// One flowbridge command: its name, what it is for, the options it takes, and how it reads them
/// (in the manner of swift-argument-parser's `ParsableCommand`, written by hand). The parser
/// (`Arguments`) refuses every option a command does not declare, so a command's `init(parsing:)`
/// only checks what its own options mean together.
protocol Command {
    /// The word after `flowbridge`.
    static var name: String { get }
    /// Other words for it (`--help` for `help`).
    static var aliases: [String] { get }
    /// One sentence: what it does, at the head of its usage.
    static var abstract: String { get }
    static var options: [any OptionDeclaration] { get }
    static var operand: Operand? { get }
    /// The command line after the name; made from the options and the operand unless a command
    /// says it better (options that exclude each other).
    static var synopsis: String { get }

    init(parsing arguments: Arguments) throws(UsageError)
    func run() async -> ExitStatus
}

extension Command {
    static var aliases: [String] { [] }
    static var operand: Operand? { nil }
    static var synopsis: String { (options.map(\.spec.synopsis) + [operand?.synopsis].compactMap { $0 }).joined(separator: " ") }

    /// `flowbridge NAME …`: the synopsis line.
    static var usageLine: String { ["flowbridge", name, synopsis].filter { !$0.isEmpty }.joined(separator: " ") }

    /// What `flowbridge help NAME` and `flowbridge NAME --help` print: the synopsis, what the
    /// command does, and every option with its help.
    static var usage: String {
        var rows = operand.map { [($0.synopsis, $0.help)] } ?? []
        rows += options.map { ($0.spec.label, $0.spec.fullHelp) }
        rows.append(("-h, --help", "this text"))
        return (["usage: \(usageLine)", ""] + TextColumns.wrap(abstract) + [""] + TextColumns.table(rows)).joined(separator: "\n")
    }

    /// Runs the command on its words (those after its name): the usage when asked, a usage error
    /// with this command's usage, or what the command returns.
    static func main(_ words: ArraySlice<String>) async -> ExitStatus {
        do {
            let arguments = try Arguments(parsing: words, for: self)
            guard !arguments.helpRequested else {
                print(usage)
                return .success
            }
            return try await Self(parsing: arguments).run()
        } catch {
            return error.showsOverview ? Commands.usageFailure(error.message) : usageFailure(error.message)
        }
    }

    /// A wrong command line found once the command began: said, with this command's usage.
    static func usageFailure(_ message: String) -> ExitStatus {
        StandardError.print("flowbridge: \(message)\n\(usage)")
        return .usage
    }
}
