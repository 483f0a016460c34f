import FlowCore
import Glibc
import Platform
import Window

/// The whole config file.
public struct DaemonConfig: Sendable, Equatable {
    /// An IANA zone name; nil: the system's zone.
    public var timezone: String?
    public var mqtt: MQTTSettings
    public var keepalives: [KeepaliveSettings]
    public var flow: FlowConfig
    /// Where the day's state is kept; nil: `$STATE_DIRECTORY/state.json` or the default.
    public var stateFile: String?
    /// Where pushes go (see SinkSettings.swift): per widget to the widget API, and to `output:`.
    public var pushes: [PushSettings] = []
    public var output = OutputSettings()
    /// `http:`: the window (status page, /metrics, JSON API); nil: no listener.
    public var window: WindowSettings?
    /// Where the day book is kept; nil: beside the state file (`ConfigContext.bookPath`).
    public var bookFile: String?
    /// The day of the month a billing month starts on (1–28).
    public var billingDay = 1

    /// Config files are a few kB; a larger one is a mistake (`--config /dev/zero`), said as such.
    public static let sizeLimit = 1 << 20

    /// Reads and checks a config text (YAML, or JSON, which is YAML too). `file` names it in errors.
    public static func parse(_ text: String, file: String, context: ConfigContext? = nil) throws(ConfigError) -> DaemonConfig {
        try parse(bytes: Array(text.utf8), file: file, context: context)
    }

    /// Reads and checks the raw bytes of a config file (invalid UTF-8 is reported with its line).
    /// With a `context`, also what the config refers to (password, TLS files, state file).
    public static func parse(bytes: [UInt8], file: String, context: ConfigContext? = nil) throws(ConfigError) -> DaemonConfig {
        let root: YAMLNode
        do {
            root = try YAMLDocument.parse(bytes: bytes)
        } catch {
            let line = error.mark?.line
            let hint = line.flatMap { ConfigHint.bracketsInJSONPath(onLine: $0, of: bytes) }.map { "; \($0)" } ?? ""
            throw ConfigError(file: file, problems: [ConfigProblem(path: "", line: line, message: error.message + hint)])
        }
        let reader = ConfigReader()
        let config = ConfigLoader(reader: reader, context: context, file: file).load(root)
        guard reader.problems.isEmpty, let config else {
            throw ConfigError(file: file, problems: reader.problems)
        }
        return config
    }
}

extension DaemonConfig {
    /// Reads a config file and checks it (with a context: and what it refers to).
    public static func load(path: String, context: ConfigContext? = nil) throws(ConfigError) -> DaemonConfig {
        let bytes: [UInt8]
        do { bytes = try FileIO.read(path, limit: sizeLimit) } catch {
            // A first start without a config: say where one comes from.
            let hint = error.code == ENOENT ? " (give one with --config FILE: Config/examples/ has one per common setup, and discover writes one)" : ""
            throw ConfigError(file: path, problems: [ConfigProblem(path: "", line: nil, message: "cannot read: \(error.reason)\(hint)")])
        }
        return try parse(bytes: bytes, file: path, context: context)
    }
}

extension DaemonConfig {
    /// Reads and checks the config file (with a context: and what it refers to); says on standard
    /// error what is wrong, every problem with its key and line, and returns nil.
    public static func loadReporting(_ path: String, context: ConfigContext? = nil) -> DaemonConfig? {
        do {
            return try load(path: path, context: context)
        } catch {
            StandardError.print(error.description)
            return nil
        }
    }

    /// The day's zone: the configured one, or the system's.
    public var zone: any LocalTimeZone {
        timezone.flatMap(SystemTimeZone.init(identifier:)) ?? SystemTimeZone.system
    }
}
