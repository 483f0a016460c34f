/// One option as the parser and the usage see it: how it is spelled, whether a value follows it,
/// and what the help says. A command lists the ones it takes (`Command.options`); the parser
/// refuses every other.
struct OptionSpec: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case flag
        /// A value follows; `placeholder` names it in the usage (`FILE`).
        case value(placeholder: String)
    }

    let name: String
    /// A short spelling (`-c`).
    let alias: String?
    let kind: Kind
    var help: String
    /// The default as the help shows it; nil: none worth showing.
    let shownDefault: String?
    /// The parser refuses a command line without it (`render --out`).
    var isRequired = false

    /// `--config FILE`, `--dry-run`.
    var word: String {
        switch kind {
        case .flag: name
        case .value(let placeholder): "\(name) \(placeholder)"
        }
    }

    /// As the synopsis shows it: `[--config FILE]`, or `--out FILE.svg|DIR` when required.
    var synopsis: String { isRequired ? word : "[\(word)]" }

    /// As the option table shows it: `-c, --config FILE`.
    var label: String { alias.map { "\($0), \(word)" } ?? word }

    /// The help with its default.
    var fullHelp: String { shownDefault.map { "\(help) (default: \($0))" } ?? help }
}

/// What a command declares its options as: `Command.options` lists them, of whatever kind.
protocol OptionDeclaration: Sendable {
    var spec: OptionSpec { get }
}

/// An option followed by a value, read into `Value` by `read` (which says what is wrong with a
/// value it refuses), or `defaultValue` when the command line does not give it.
struct Option<Value: Sendable>: OptionDeclaration {
    private(set) var spec: OptionSpec
    let defaultValue: Value
    let read: @Sendable (String) throws(UsageError) -> Value

    init(
        _ name: String, alias: String? = nil, placeholder: String, help: String, default defaultValue: Value, shownDefault: String? = nil,
        read: @escaping @Sendable (String) throws(UsageError) -> Value
    ) {
        spec = OptionSpec(name: name, alias: alias, kind: .value(placeholder: placeholder), help: help, shownDefault: shownDefault)
        self.defaultValue = defaultValue
        self.read = read
    }

    /// The same option with the help a command gives it (`replay --state` means more than
    /// `run --state`): one spelling and one reading, told for each command.
    func help(_ text: String) -> Option {
        var option = self
        option.spec.help = text
        return option
    }
}

extension Option where Value == String? {
    /// A text taken as it is, nil when not given.
    init(_ name: String, alias: String? = nil, placeholder: String, help: String) {
        self.init(name, alias: alias, placeholder: placeholder, help: help, default: nil) { $0 }
    }
}

extension Option where Value == String {
    /// A text the command line must give: the parser refuses it missing (`render --out`), so the
    /// default is never used.
    static func required(_ name: String, alias: String? = nil, placeholder: String, help: String) -> Option {
        var option = Option(name, alias: alias, placeholder: placeholder, help: help, default: "") { $0 }
        option.spec.isRequired = true
        return option
    }
}

/// An option without a value: given or not.
struct Flag: OptionDeclaration {
    let spec: OptionSpec

    init(_ name: String, help: String) {
        spec = OptionSpec(name: name, alias: nil, kind: .flag, help: help, shownDefault: nil)
    }
}

/// What a command takes besides its options (`replay TRACE`, `help [COMMAND]`); a command
/// without one takes no other words.
struct Operand: Sendable {
    /// As the synopsis shows it: `TRACE`, `[COMMAND]`.
    let synopsis: String
    let help: String
}
