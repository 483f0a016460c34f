/// One command's words, parsed against the options it declares: every option it takes once (the
/// last one given wins), its operands in order. Anything the command does not declare is refused
/// here, before the command sees its arguments.
struct Arguments {
    let command: any Command.Type
    /// `--help` or `-h` came: the command's usage is wanted, whatever else the line says.
    let helpRequested: Bool
    let operands: [String]
    /// By option name; a flag's value is "".
    private let given: [String: String]

    static let helpWords: Set = ["--help", "-h"]

    init(parsing words: ArraySlice<String>, for command: any Command.Type) throws(UsageError) {
        self.command = command
        let specs = command.options.map(\.spec)
        var given: [String: String] = [:]
        var operands: [String] = []
        var helpRequested = false
        // The first mistake is the one reported, but only once every word was looked at: a
        // `--help` after it is a question, and is answered.
        var mistake: UsageError?
        var rest = words
        while let word = rest.popFirst() {
            if Self.helpWords.contains(word) {
                helpRequested = true
            } else if word == "-" || !word.hasPrefix("-") {
                operands.append(word)
            } else if let spec = specs.first(where: { $0.name == word || $0.alias == word }) {
                switch spec.kind {
                case .flag:
                    given[spec.name] = ""
                case .value:
                    guard let value = rest.popFirst() else {
                        mistake = mistake ?? UsageError("\(word) needs a value")
                        break
                    }
                    given[spec.name] = value
                }
            } else if let equals = word.firstIndex(of: "="), specs.contains(where: { $0.name == word[..<equals] }) {
                mistake = mistake ?? UsageError("\(word[..<equals]) takes its value as the next word: \(word[..<equals]) \(word[word.index(after: equals)...])")
            } else {
                mistake = mistake ?? UsageError("\(command.name) does not take \(word)")
            }
        }
        self.helpRequested = helpRequested
        self.operands = operands
        self.given = given
        guard !helpRequested else { return }
        if let mistake { throw mistake }
        if command.operand == nil, !operands.isEmpty { throw UsageError("\(command.name) takes no other arguments") }
        if let missing = specs.first(where: { $0.isRequired && given[$0.name] == nil }) {
            throw UsageError("\(command.name) needs \(missing.word)")
        }
    }

    /// The option's value as given, read by the option, or its default.
    func value<Value>(_ option: Option<Value>) throws(UsageError) -> Value {
        precondition(declares(option), "\(command.name) reads \(option.spec.name) but does not declare it")
        guard let text = given[option.spec.name] else { return option.defaultValue }
        return try option.read(text)
    }

    func isSet(_ flag: Flag) -> Bool {
        precondition(declares(flag), "\(command.name) reads \(flag.spec.name) but does not declare it")
        return given[flag.spec.name] != nil
    }

    /// Whether the command takes `option`: an option group reads only those its command takes.
    func declares(_ option: some OptionDeclaration) -> Bool {
        command.options.contains { $0.spec == option.spec }
    }
}
