import FoundationEssentials
import Persistence

/// What `check` and `run` look at beyond the config text: the broker password (a file, a systemd
/// credential, an environment variable), the TLS files and the state file. Both load the config
/// through it, so `check` finds every problem `run` would, with its line; replay and tests parse
/// the text alone.
public struct ConfigContext: Sendable {
    public var environment: [String: String]
    /// `--state FILE`: the state file to use instead of `state_file` or the default place.
    public var stateOverride: String?
    /// Whether the widgets' push tokens are read, and one that cannot be is an error: `run` and
    /// `check` need them; `record` and `check --listen`, which never push, do not ask for them.
    public var readsPushTokens: Bool

    public init(environment: [String: String], stateOverride: String? = nil, readsPushTokens: Bool = true) {
        self.environment = environment
        self.stateOverride = stateOverride
        self.readsPushTokens = readsPushTokens
    }

    /// This process's environment.
    public static func process(stateOverride: String? = nil, readsPushTokens: Bool = true) -> ConfigContext {
        ConfigContext(environment: ProcessInfo.processInfo.environment, stateOverride: stateOverride, readsPushTokens: readsPushTokens)
    }

    /// The state file a run uses: `--state`, else the config's `state_file`, else the default place.
    public func statePath(configured: String?) -> String {
        stateOverride ?? configured ?? StateStore.defaultPath(environment: environment)
    }

    /// The day book a run writes: the config's `book_file`, else beside the state file
    /// (`state.json` → `book.sqlite`; another state's name `home.json` → `home.book.sqlite`, so
    /// two homes that keep their states in one folder keep two books).
    public func bookPath(configured: String?, statePath: String) -> String {
        if let configured { return configured }
        let slash = statePath.lastIndex(of: "/").map { statePath.index(after: $0) } ?? statePath.startIndex
        let folder = statePath[..<slash]
        var name = String(statePath[slash...])
        if name.hasSuffix(".json") { name.removeLast(5) }
        return name == "state" ? "\(folder)book.sqlite" : "\(folder)\(name).book.sqlite"
    }

    /// Where a `password_file` is: a relative name is a systemd credential (`LoadCredential=`).
    func credentialPath(_ file: String) -> String? {
        if file.hasPrefix("/") { return file }
        return environment["CREDENTIALS_DIRECTORY"].map { "\($0)/\(file)" }
    }
}
