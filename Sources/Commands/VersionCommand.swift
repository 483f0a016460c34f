import Platform

/// `flowbridge --version`.
struct VersionCommand: Command {
    static let name = "--version"
    static let aliases = ["version"]
    static let abstract = "Prints flowbridge's version."
    static var options: [any OptionDeclaration] { [] }

    init(parsing arguments: Arguments) {}

    func run() -> ExitStatus {
        print("flowbridge \(Flowbridge.version)")
        return .success
    }
}
