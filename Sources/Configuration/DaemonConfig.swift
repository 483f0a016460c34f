import Delivery
import FlowCore
import FoundationEssentials
import Glibc
import Mosquitto
import Persistence
import Platform

/// How flowbridge reaches the broker (`mqtt:` in the config). Secrets are never inline-only: the
/// password comes from a file (a systemd credential) or an environment variable.
public struct MQTTSettings: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 1883
    /// Unique per machine by default: two daemons with one ID would take each other's session
    /// over on every reconnect, and each takeover fires the will ("offline").
    public var clientID = "flowbridge-\(MQTTSettings.hostname)"
    public var keepaliveSeconds = 60
    public var username: String?
    public var passwordFile: String?
    public var passwordEnv: String?
    /// The password read from `passwordFile` or `passwordEnv`; set only when the config was loaded
    /// for `check` or `run` (a `ConfigContext`), so a changed password counts as a changed setting.
    public var password: Secret?
    /// MQTT 5 when true, else 3.1.1.
    public var mqtt5 = false
    public var tls: TLSSettings?
    /// flowbridge publishes `<prefix>/status` = online / offline (its last will).
    public var topicPrefix = "flowbridge"

    static var hostname: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "host" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Libmosquitto's limits for the keepalive: 5 s to about 18 hours.
    public static let keepaliveRange = 5...65_535

    /// The client's options. A dry run gets a client ID of its own (the service's would take over
    /// the service's session) and no last will: it announces nothing on the broker.
    package func options(dryRun: Bool = false) -> MQTTOptions {
        MQTTOptions(
            host: host, port: port, clientID: dryRun ? "\(clientID)-dry-run-\(getpid())" : clientID,
            keepaliveSeconds: keepaliveSeconds, username: username, password: password?.value,
            tls: tls.map { TLSOptions(caFile: $0.caFile, certFile: $0.certFile, keyFile: $0.keyFile, insecure: $0.insecure) },
            protocolVersion: mqtt5 ? .v5 : .v311,
            will: dryRun ? nil : Will(topic: statusTopic, payload: Array("offline".utf8), qos: .atLeastOnce, retain: true))
    }

    /// `<prefix>/status`: `online` while running, `offline` after (the last will).
    public var statusTopic: String { "\(topicPrefix)/status" }

    public struct TLSSettings: Sendable, Equatable {
        /// nil: the system's certificate store.
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        /// Certificate verification is on unless the user says `insecure: true`.
        public var insecure = false
    }
}

/// A password or token: compared like any setting, never printed (`description` and `dump` redact it).
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// What `check` and `run` look at beyond the config text: the broker password (a file, a systemd
/// credential, an environment variable), the TLS files and the state file. Both load the config
/// through it, so `check` finds every problem `run` would, with its line; replay and tests parse
/// the text alone.
public struct ConfigContext: Sendable {
    public var environment: [String: String]
    /// `--state FILE`: the state file to use instead of `state_file` or the default place.
    public var stateOverride: String?

    public init(environment: [String: String], stateOverride: String? = nil) {
        self.environment = environment
        self.stateOverride = stateOverride
    }

    /// This process's environment.
    public static func process(stateOverride: String? = nil) -> ConfigContext {
        ConfigContext(environment: ProcessInfo.processInfo.environment, stateOverride: stateOverride)
    }

    /// The state file a run uses: `--state`, else the config's `state_file`, else the default place.
    public func statePath(configured: String?) -> String {
        stateOverride ?? configured ?? StateStore.defaultPath(environment: environment)
    }

    /// Where a `password_file` is: a relative name is a systemd credential (`LoadCredential=`).
    func credentialPath(_ file: String) -> String? {
        if file.hasPrefix("/") { return file }
        return environment["CREDENTIALS_DIRECTORY"].map { "\($0)/\(file)" }
    }
}

/// Victron Venus OS publishes only while a client keeps asking: `R/<portal id>/keepalive`.
public struct KeepaliveSettings: Sendable, Equatable {
    public var topic: String
    public var intervalSeconds: Double

    public init(topic: String, intervalSeconds: Double) {
        self.topic = topic
        self.intervalSeconds = intervalSeconds
    }
}

/// The whole config file.
public struct DaemonConfig: Sendable, Equatable {
    /// An IANA zone name; nil: the system's zone.
    public var timezone: String?
    public var mqtt: MQTTSettings
    public var keepalives: [KeepaliveSettings]
    public var flow: FlowConfig
    /// Where the day's state is kept; nil: `$STATE_DIRECTORY/state.json` or the default.
    public var stateFile: String?
    /// Where pushes go (see SinkConfig.swift): per widget to the widget API, and to `output:`.
    public var pushes: [PushSettings] = []
    public var output = OutputSettings()

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

/// Turns the YAML tree into a `DaemonConfig`, checking names, units, slots and references, and,
/// with a context, what the config refers to outside itself.
struct ConfigLoader {
    let reader: ConfigReader
    var context: ConfigContext?
    /// The config file's path (a state file must not be it).
    var file: String

    func load(_ root: YAMLNode) -> DaemonConfig? {
        guard var top = reader.mapping(root, "") else { return nil }
        let timezone = top.text("timezone")
        if let timezone, SystemTimeZone(identifier: timezone) == nil {
            reader.report("timezone", top.value("timezone"), "unknown time zone '\(timezone)' (an IANA name such as Europe/Berlin)")
        }
        var mqtt = top.value("mqtt").map { loadMQTT($0, "mqtt") } ?? MQTTSettings()
        let keepalives = top.value("keepalive").map { loadKeepalives($0, "keepalive") } ?? []
        let stateFile = top.text("state_file")
        if let context { checkStateFile(stateFile, at: top.value("state_file"), context: context) }
        var sources: [SourceConfig] = []
        if let node = top.required("sources"), let mapping = reader.mapping(node, "sources") {
            for (key, value) in mapping.pairs {
                guard let name = key.scalarValue else { continue }
                if name == "balance" { reader.report("sources.balance", key, "'balance' is reserved for the derived output") }
                if let source = loadSource(name, value, "sources.\(name)") { sources.append(source) }
            }
            if mapping.pairs.isEmpty { reader.report("sources", node, "needs at least one source") }
        }
        let flow = top.required("widgets").map { loadWidgets($0, sources: sources) } ?? FlowConfig(sources: sources, widgets: [])
        let sinks = loadSinks(&top, mqtt: &mqtt, flow: flow)
        top.finish()
        return DaemonConfig(
            timezone: timezone, mqtt: mqtt, keepalives: keepalives, flow: flow, stateFile: stateFile, pushes: sinks.pushes,
            output: sinks.output)
    }

    /// The state file a run would use must be a flowbridge state or nothing yet: a directory, the
    /// config itself or another program's file is refused here, before anything is renamed.
    func checkStateFile(_ configured: String?, at node: YAMLNode?, context: ConfigContext) {
        let path = context.statePath(configured: configured)
        guard case .unusable(let problem) = StateStore(path: path).inspect(configPath: file) else { return }
        if context.stateOverride != nil {
            reader.report("", nil, "--state: \(problem)")
        } else if configured != nil {
            reader.report("state_file", node, "\(problem.path) \(problem.reason)")
        } else {
            reader.report("", nil, "\(problem) (the default place; set state_file or --state to use another)")
        }
    }

    // MARK: mqtt

    func loadMQTT(_ node: YAMLNode, _ path: String) -> MQTTSettings {
        var settings = MQTTSettings()
        guard var map = reader.mapping(node, path) else { return settings }
        let problemsBefore = reader.problems.count
        if let host = map.text("host") {
            if host.isEmpty || host.contains(where: \.isWhitespace) {
                reader.report(map.childPath("host"), map.value("host"), "must be a host name or address, found '\(host)'")
            } else {
                settings.host = host
            }
        }
        if let port = map.number("port") {
            if port == port.rounded(), (1...65_535).contains(port) { settings.port = Int(port) } else {
                reader.report(map.childPath("port"), map.value("port"), "must be a port number 1…65535")
            }
        }
        if let id = map.text("client_id") {
            if id.isEmpty || id.utf8.count > 65_535 || id.utf8.contains(0) {
                reader.report(map.childPath("client_id"), map.value("client_id"), "must be 1 to 65535 bytes, without NUL")
            } else {
                settings.clientID = id
            }
        }
        if let keepalive = map.duration("keepalive") {
            if keepalive == keepalive.rounded(), MQTTSettings.keepaliveRange.contains(Int(exactly: keepalive) ?? 0) {
                settings.keepaliveSeconds = Int(keepalive)
            } else {
                reader.report(map.childPath("keepalive"), map.value("keepalive"), "must be whole seconds from 5s to 65535s (the broker's ping interval)")
            }
        }
        settings.username = map.text("username")
        if map.value("password") != nil {
            reader.report(map.childPath("password"), map.value("password"), "write the password to a file (password_file) or an environment variable (password_env), never into the config")
        }
        settings.passwordFile = map.text("password_file")
        settings.passwordEnv = map.text("password_env")
        if settings.passwordFile != nil, settings.passwordEnv != nil {
            reader.report(map.childPath("password_env"), map.value("password_env"), "give password_file or password_env, not both")
        } else if settings.passwordFile != nil || settings.passwordEnv != nil, settings.username == nil {
            let key = settings.passwordFile != nil ? "password_file" : "password_env"
            reader.report(map.childPath(key), map.value(key), "a password needs a username (mqtt.username)")
        } else if let context {
            settings.password = loadSecret(&map, "password", file: settings.passwordFile, variable: settings.passwordEnv, context: context)
        }
        if let version = map.value("protocol") {
            switch version.scalarValue {
            case "5", "5.0": settings.mqtt5 = true
            case "3.1.1", "311", "4": settings.mqtt5 = false
            default: reader.report(map.childPath("protocol"), version, "must be 3.1.1 or 5")
            }
        }
        if let prefix = map.text("topic_prefix") {
            if prefix.isEmpty || prefix.contains("+") || prefix.contains("#") {
                reader.report(map.childPath("topic_prefix"), map.value("topic_prefix"), "must be a topic without wildcards")
            } else {
                settings.topicPrefix = prefix
            }
        }
        if let tlsNode = map.value("tls") {
            var tls = MQTTSettings.TLSSettings()
            if var tlsMap = reader.mapping(tlsNode, map.childPath("tls")) {
                func file(_ key: String) -> String? {
                    guard let path = tlsMap.text(key) else { return nil }
                    if context != nil, access(path, R_OK) != 0 {
                        reader.report(tlsMap.childPath(key), tlsMap.value(key), "cannot read \(FileError(path))")
                    }
                    return path
                }
                tls.caFile = file("ca_file")
                tls.certFile = file("cert_file")
                tls.keyFile = file("key_file")
                tls.insecure = tlsMap.flag("insecure") ?? false
                if (tls.certFile == nil) != (tls.keyFile == nil) {
                    reader.report(tlsMap.childPath("cert_file"), tlsNode, "a client certificate needs both cert_file and key_file")
                }
                tlsMap.finish()
            }
            settings.tls = tls
        }
        map.finish()
        // What the client checks once more at start; said here, so `run` never finds more than `check`.
        if context != nil, reader.problems.count == problemsBefore {
            do { try settings.options().validate() } catch {
                reader.report(path, node, error.description)
            }
        }
        return settings
    }

    /// A secret (the broker password, a widget API token) from `<key>_file` (a systemd credential
    /// when relative) or `<key>_env`, never from the config itself. Trailing line breaks are not
    /// part of it (an editor's last newline); an empty file is a problem, since a `LoadCredential=`
    /// file that is missing arrives as the unit's empty default. Problems name the key and line,
    /// never the secret.
    func loadSecret(_ map: inout MappingReader, _ key: String, file: String?, variable: String?, context: ConfigContext) -> Secret? {
        let fileKey = "\(key)_file"
        if let file {
            guard let path = context.credentialPath(file) else {
                reader.report(map.childPath(fileKey), map.value(fileKey), "'\(file)' is a credential name, and $CREDENTIALS_DIRECTORY is unset (systemd sets it for LoadCredential=); outside systemd, give the file's full path, or set CREDENTIALS_DIRECTORY to the folder that holds it")
                return nil
            }
            do {
                var text = String(decoding: try FileIO.read(path, limit: 65_536), as: UTF8.self)
                while text.last == "\n" || text.last == "\r" { text.removeLast() }
                if text.isEmpty {
                    reader.report(map.childPath(fileKey), map.value(fileKey), "\(path) is empty (a LoadCredential= file that is missing arrives as the unit's empty default)")
                    return nil
                }
                return Secret(text)
            } catch {
                reader.report(map.childPath(fileKey), map.value(fileKey), "cannot read \(error)")
                return nil
            }
        }
        if let variable {
            let envKey = "\(key)_env"
            guard let value = context.environment[variable] else {
                reader.report(map.childPath(envKey), map.value(envKey), "the environment variable \(variable) is not set")
                return nil
            }
            return Secret(value)
        }
        return nil
    }

    func loadKeepalives(_ node: YAMLNode, _ path: String) -> [KeepaliveSettings] {
        guard let items = node.items else {
            reader.report(path, node, "expected a list of {topic, interval}, found \(node.describedKind)")
            return []
        }
        return items.enumerated().compactMap { index, item in
            guard var map = reader.mapping(item, "\(path)[\(index)]") else { return nil }
            defer { map.finish() }
            var topic = map.required("topic").flatMap { reader.text($0, map.childPath("topic")) }
            if let text = topic, text.isEmpty || text.contains("+") || text.contains("#") || text.utf8.contains(0) {
                reader.report(map.childPath("topic"), map.value("topic"), "'\(text)' is not a topic to publish to (not empty, no wildcards)")
                topic = nil
            }
            let interval = map.duration("interval") ?? 30
            if interval < 1 { reader.report(map.childPath("interval"), map.value("interval"), "must be at least 1s") }
            return topic.map { KeepaliveSettings(topic: $0, intervalSeconds: max(1, interval)) }
        }
    }

    // MARK: sources

    func loadSource(_ name: String, _ node: YAMLNode, _ path: String) -> SourceConfig? {
        if name.isEmpty || name.hasPrefix("-") || name.contains(where: \.isWhitespace) {
            reader.report(path, node, "a source name must not be empty, start with '-' or hold spaces")
        }
        guard var map = reader.mapping(node, path) else { return nil }
        defer { map.finish() }
        var topic: TopicFilter?
        if let text = map.required("topic").flatMap({ reader.text($0, map.childPath("topic")) }) {
            do { topic = try TopicFilter(text) } catch { reader.report(map.childPath("topic"), map.value("topic"), error.description) }
        }
        var path: JSONPath?
        if let node = map.value("json"), node.items != nil {
            reader.report(map.childPath("json"), node, "expected a text, found a list; \(ConfigHint.quoteJSONPath)")
        } else if let text = map.text("json") {
            do { path = try JSONPath(text) } catch { reader.report(map.childPath("json"), map.value("json"), error.description) }
        }
        let unit = map.value("unit").flatMap { reader.choice($0, map.childPath("unit"), as: SourceUnit.self) } ?? .watt
        let scale = map.number("scale") ?? 1
        if scale == 0 { reader.report(map.childPath("scale"), map.value("scale"), "must not be 0") }
        // `never`: a meter that publishes only on change.
        var staleAfter: Double? = SourceConfig.defaultStaleAfterSeconds
        if let node = map.value("stale_after") {
            if node.scalarValue == "never" {
                staleAfter = nil
            } else if let seconds = reader.duration(node, map.childPath("stale_after")) {
                if seconds <= 0 { reader.report(map.childPath("stale_after"), node, "must be longer than 0s (or never)") }
                staleAfter = seconds
            }
        }
        let maxGap = map.duration("max_gap") ?? SourceConfig.defaultMaxGapSeconds
        let maxPower = map.number("max_power") ?? SourceConfig.defaultMaxPowerW
        if maxPower <= 0 || maxPower > SourceConfig.largestMaxPowerW {
            reader.report(map.childPath("max_power"), map.value("max_power"), "must be more than 0 W and at most 1e9 W")
        }
        let combine = map.value("combine").flatMap { reader.choice($0, map.childPath("combine"), as: SourceCombine.self) } ?? .latest
        if combine == .sum, let topic, topic.isExact {
            reader.report(map.childPath("combine"), map.value("combine"), "sum adds the topics a wildcard matches; '\(topic)' is one topic (use + or #, or leave combine out)")
        }
        let maxPayload = map.value("max_payload").flatMap { byteSize($0, map.childPath("max_payload")) } ?? SourceConfig.defaultMaxPayloadBytes
        guard let topic else { return nil }
        return SourceConfig(
            name: name, topic: topic, decoder: PayloadDecoder(path: path, decimalComma: map.flag("decimal_comma") ?? false),
            unit: unit, scale: scale, invert: map.flag("invert") ?? false, staleAfterSeconds: staleAfter, maxGapSeconds: maxGap,
            maxPowerW: maxPower, combine: combine, maxPayloadBytes: maxPayload)
    }

    /// A size in bytes: `65536`, `512B`, `64KiB`, `1MiB` (also `kB` and `MB`, powers of 1000).
    func byteSize(_ node: YAMLNode, _ path: String) -> Int? {
        let text = node.scalarValue ?? ""
        let units: [(String, Double)] = [("KiB", 1024), ("MiB", 1_048_576), ("kB", 1000), ("KB", 1000), ("MB", 1_000_000), ("B", 1)]
        var number = Substring(text).trimmingSpaces
        var factor = 1.0
        if let (suffix, value) = units.first(where: { text.hasSuffix($0.0) }) {
            number = Substring(text.dropLast(suffix.count)).trimmingSpaces
            factor = value
        }
        guard !node.isNull, let value = Double(number), value.isFinite, value >= 1, (value * factor).rounded() <= Double(Int32.max) else {
            reader.report(path, node, "'\(text)' is not a size in bytes (write e.g. 65536, 64KiB or 1MiB)")
            return nil
        }
        return Int((value * factor).rounded())
    }

    // MARK: widgets

    /// A widget as read, before the progress widgets' references to flow widgets are checked.
    enum LoadedWidget {
        case flow(FlowWidgetConfig)
        /// With its `progress:` mapping and the key path to it, for the problems found once every
        /// widget is read.
        case progress(ProgressWidgetConfig, node: YAMLNode, path: String)
    }

    /// The `widgets:` mapping: flow widgets, and progress widgets that read them (in any order).
    func loadWidgets(_ node: YAMLNode, sources: [SourceConfig]) -> FlowConfig {
        var config = FlowConfig(sources: sources, widgets: [])
        guard let mapping = reader.mapping(node, "widgets") else { return config }
        var progress: [(node: YAMLNode, path: String)] = []
        for (key, value) in mapping.pairs {
            guard let name = key.scalarValue else { continue }
            switch loadWidget(name, value, "widgets.\(name)", sources: sources) {
            case .flow(let widget)?:
                config.widgets.append(widget)
            case .progress(let widget, let node, let path)?:
                config.progressWidgets.append(widget)
                progress.append((node, path))
            case nil:
                break
            }
        }
        if mapping.pairs.isEmpty { reader.report("widgets", node, "needs at least one widget") }
        for (widget, place) in zip(config.progressWidgets, progress) {
            checkReferences(of: widget, in: config, node: place.node, path: place.path)
        }
        return config
    }

    func loadWidget(_ name: String, _ node: YAMLNode, _ path: String, sources: [SourceConfig]) -> LoadedWidget? {
        guard var map = reader.mapping(node, path) else { return nil }
        defer { map.finish() }
        let template = map.required("template").flatMap { reader.text($0, map.childPath("template")) }
        guard template == "flow" || template == "progress" else {
            if let template {
                reader.report(map.childPath("template"), map.value("template"), "'\(template)' is not a template flowbridge feeds (flow, progress)")
            }
            // Without a template its other keys mean nothing: one problem, not one per key.
            map.ignoreRest()
            return nil
        }
        _ = map.value("push")  // a sink's setting: loadSinks reads it
        // What every template shares: the content's own fields, the policy, the stale marker.
        let shared = SharedContent(
            label: map.text("label"), subtitle: map.text("subtitle"), icon: map.text("icon", limit: 128),
            accentColor: map.text("accent_color"), backgroundColor: map.text("background_color"),
            textColor: map.text("text_color"))
        let policy = map.value("policy").map { loadPolicy($0, map.childPath("policy")) } ?? PatchPolicyConfig()
        let staleMarker = map.flag("stale_marker") ?? true
        let known = Dictionary(sources.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        if template == "progress" {
            guard let progressNode = map.required("progress"), var progress = reader.mapping(progressNode, map.childPath("progress")) else {
                return nil
            }
            defer { progress.finish() }
            let flow = progress.text("flow")
            guard let measure = loadMeasure(&progress, sources: known) else { return nil }
            let widget = ProgressWidgetConfig(name: name, shared: shared, measure: measure, flow: flow, policy: policy, staleMarker: staleMarker)
            return .progress(widget, node: progressNode, path: progress.path)
        }
        var widget = FlowWidgetConfig(name: name, shared: shared, policy: policy, staleMarker: staleMarker)
        if let unit = map.text("unit", limit: 32) { widget.unit = unit }
        guard let flowNode = map.required("flow"), var flow = reader.mapping(flowNode, map.childPath("flow")) else {
            return nil
        }
        defer { flow.finish() }
        if let inputs = flow.value("inputs") {
            let inputsPath = flow.childPath("inputs")
            if let items = inputs.items {
                if items.count > 3 { reader.report(inputsPath, inputs, "the widget draws at most 3 inputs, found \(items.count)") }
                widget.inputs = items.enumerated().compactMap { index, item in
                    loadNode(item, "\(inputsPath)[\(index)]", slot: .inputs, sources: known)
                }
            } else if inputs.pairs != nil {
                // One input written as a mapping: accept it as a list of one.
                widget.inputs = [loadNode(inputs, "\(inputsPath)[0]", slot: .inputs, sources: known)].compactMap { $0 }
            } else {
                reader.report(inputsPath, inputs, "expected a list of nodes, found \(inputs.describedKind)")
            }
        }
        widget.output = flow.value("output").flatMap { loadNode($0, flow.childPath("output"), slot: .output, sources: known) }
        widget.storage = flow.value("storage").flatMap { loadNode($0, flow.childPath("storage"), slot: .storage, sources: known) }
        widget.exchange = flow.value("exchange").flatMap { loadNode($0, flow.childPath("exchange"), slot: .exchange, sources: known) }
        if widget.inputs.isEmpty, widget.output == nil, widget.storage == nil, widget.exchange == nil {
            reader.report(flow.path, flowNode, "needs at least one of inputs, output, storage, exchange")
        }
        if widget.output?.rate == .balance, widget.inputs.isEmpty, widget.storage == nil, widget.exchange == nil {
            reader.report(flow.childPath("output.rate"), flowNode, "balance needs inputs, storage or exchange to derive the output from")
        }
        return .flow(widget)
    }

    /// The words of `progress: {of: …}`.
    enum MeasureWord: String, CaseIterable {
        case battery, selfSufficiency = "self_sufficiency", productionGoal = "production_goal"
    }

    /// `of:` and what it takes: `rate:`, `level:` and `capacity_kwh:` for a battery, `goal_kwh:`
    /// for a production goal. A key another measure takes is reported as unknown here.
    func loadMeasure(_ map: inout MappingReader, sources: [String: SourceConfig]) -> ProgressMeasure? {
        guard let word = map.required("of").flatMap({ reader.choice($0, map.childPath("of"), as: MeasureWord.self) }) else {
            map.ignoreRest()
            return nil
        }
        func positive(_ key: String) -> Double? {
            guard let value = map.number(key) else { return nil }
            if value <= 0 { reader.report(map.childPath(key), map.value(key), "must be more than 0 kWh") }
            return value > 0 ? value : nil
        }
        switch word {
        case .battery:
            var gauge = BatteryGauge()
            gauge.rate = map.value("rate").flatMap { loadRate($0, map.childPath("rate"), slot: .storage, sources: sources) }
            if let levelNode = map.value("level"), let level = reader.text(levelNode, map.childPath("level")) {
                checkSource(level, map.childPath("level"), levelNode, quantity: .level, sources: sources)
                gauge.level = level
            }
            gauge.capacityKWh = positive("capacity_kwh")
            return .battery(gauge)
        case .selfSufficiency:
            return .selfSufficiency
        case .productionGoal:
            guard map.required("goal_kwh") != nil, let goal = positive("goal_kwh") else { return nil }
            return .productionGoal(goalKWh: goal)
        }
    }

    /// What a progress widget reads from a flow widget must be there: the flow widget its `flow:`
    /// names (or the only one), and in it the storage's rate and level, the import and output
    /// totals, or the inputs' totals.
    func checkReferences(of widget: ProgressWidgetConfig, in config: FlowConfig, node: YAMLNode, path: String) {
        let flowNames = config.widgets.map(\.name)
        let listed = flowNames.isEmpty ? "there is none" : "flow widgets: \(flowNames.joined(separator: ", "))"
        let flowKey = node.pairs?.first { $0.key.scalarValue == "flow" }?.value
        let flow = config.flowWidget(for: widget)
        if let name = widget.flow, flow == nil {
            reader.report("\(path).flow", flowKey, "'\(name)' is not a flow widget (\(listed))")
            return
        }
        let what = "of: \(widget.measure.word)"
        if case .battery(let gauge) = widget.measure {
            guard gauge.node(besides: flow) == nil else { return }
            if flow == nil, flowNames.count > 1 {
                reader.report(path, node, "\(what) reads the storage of a flow widget unless it has a rate and a level of its own; \(listed): say which with flow:")
                return
            }
            let missing = [("rate", "a power source (+ filling)", (gauge.rate ?? flow?.storage?.rate) == nil), ("level", "a % source", (gauge.level ?? flow?.storage?.level) == nil)]
            for (key, wanted, isMissing) in missing where isMissing {
                let elsewhere = flow.map { "flow widget '\($0.name)' has no storage \(key)" } ?? "the config has no flow widget"
                reader.report("\(path).\(key)", node, "\(what) needs a \(key): \(wanted) here, or the storage \(key) of a flow widget; \(elsewhere)")
            }
            return
        }
        guard let flow else {
            let fix = flowNames.isEmpty ? "add one" : "say which with flow:"
            reader.report(path, node, "\(what) reads the day's totals of a flow widget (\(listed)): \(fix)")
            return
        }
        switch widget.measure {
        case .selfSufficiency:
            if flow.output?.total == nil {
                reader.report(path, node, "\(what) reads today's output total of flow widget '\(flow.name)', and its output has none (total: integrate or a counter)")
            }
            switch flow.exchange?.total {
            case .imported?, .counter?, .daily?:
                break
            default:
                reader.report(path, node, "\(what) reads today's import of flow widget '\(flow.name)': its exchange needs total: import (or a counter of imported energy)")
            }
        case .productionGoal:
            if !flow.inputs.contains(where: { $0.total != nil }) {
                reader.report(path, node, "\(what) reads the inputs' totals of flow widget '\(flow.name)', and none of its inputs has a total (total: integrate or a counter)")
            }
        case .battery:
            break
        }
    }

    func loadPolicy(_ node: YAMLNode, _ path: String) -> PatchPolicyConfig {
        var policy = PatchPolicyConfig()
        guard var map = reader.mapping(node, path) else { return policy }
        defer { map.finish() }
        if let value = map.duration("min_interval") { policy.minIntervalSeconds = value }
        if let value = map.duration("settle") {
            // A moment's readings, not a minute's: longer would only make every push late.
            if value > 60 { reader.report(map.childPath("settle"), map.value("settle"), "must be at most 60s") }
            policy.settleSeconds = min(value, 60)
        }
        func nonNegative(_ key: String) -> Double? {
            guard let value = map.number(key) else { return nil }
            if value < 0 { reader.report(map.childPath(key), map.value(key), "must not be negative") }
            return max(0, value)
        }
        if let value = nonNegative("rate_step") { policy.rateStep = value }
        if let value = nonNegative("rate_deadband") { policy.rateDeadband = value }
        if let value = nonNegative("total_step") { policy.totalStep = value }
        if let value = nonNegative("level_step") { policy.levelStep = value }
        return policy
    }

    /// A source a node or a bar refers to must exist and read the right quantity.
    func checkSource(_ name: String, _ path: String, _ at: YAMLNode?, quantity: SourceUnit.Quantity, sources: [String: SourceConfig]) {
        guard let source = sources[name] else {
            let names = sources.keys.sorted().joined(separator: ", ")
            reader.report(path, at, "unknown source '\(name)' (sources: \(names))")
            return
        }
        if source.unit.quantity != quantity {
            let key = path.split(separator: ".").last.map(String.init) ?? path
            reader.report(path, at, "source '\(name)' is \(source.unit.quantity.rawValue) (\(source.unit.rawValue)); \(key) needs \(quantity.rawValue)")
        }
    }

    func loadNode(_ node: YAMLNode, _ path: String, slot: FlowSlot, sources: [String: SourceConfig]) -> NodeConfig? {
        guard var map = reader.mapping(node, path) else { return nil }
        defer { map.finish() }
        func source(_ name: String, _ key: String, _ at: YAMLNode?, quantity: SourceUnit.Quantity) {
            checkSource(name, map.childPath(key), at, quantity: quantity, sources: sources)
        }
        let name = map.text("name", limit: 32)
        let icon = map.text("icon", limit: 128)
        let color = map.text("color")
        if let color, !FlowNode.isColor(color) {
            reader.report(map.childPath("color"), map.value("color"), "'\(color)' is not a color the widget takes: a name (yellow, mint) or hex (#FFCC00)")
        }
        let whenStale = map.value("when_stale").flatMap { reader.choice($0, map.childPath("when_stale"), as: StaleBehavior.self) }
        var rate: RateSpec?
        if let rateNode = map.required("rate") {
            rate = loadRate(rateNode, map.childPath("rate"), slot: slot, sources: sources)
        }
        var level: String?
        if let levelNode = map.value("level") {
            if slot != .storage {
                reader.report(map.childPath("level"), levelNode, "only the storage slot has a level")
            } else if let name = reader.text(levelNode, map.childPath("level")) {
                source(name, "level", levelNode, quantity: .level)
                level = name
            }
        }
        var total: TotalSpec?
        if let totalNode = map.value("total") {
            total = loadTotal(totalNode, map.childPath("total"), slot: slot)
            if let counter = total?.counterSource { source(counter, "total", totalNode, quantity: .energy) }
        }
        guard let rate else { return nil }
        return NodeConfig(
            name: name, rate: rate, total: total, level: level, icon: icon, color: color,
            whenStale: whenStale ?? (slot == .inputs ? .zero : .hold))
    }

    /// `solar`, `[east, west]`, `[pconsume, -psupply]`, or `balance` on the output; each source
    /// named must be a power source.
    func loadRate(_ node: YAMLNode, _ path: String, slot: FlowSlot, sources: [String: SourceConfig]) -> RateSpec? {
        if node.scalarValue == "balance" {
            guard slot == .output else {
                reader.report(path, node, "balance derives the output; \(slot.rawValue) needs a source")
                return nil
            }
            return .balance
        }
        let texts: [(String, YAMLNode)]
        if let items = node.items {
            texts = items.enumerated().compactMap { index, item in reader.text(item, "\(path)[\(index)]").map { ($0, item) } }
            if items.isEmpty { reader.report(path, node, "an empty list adds up to nothing") }
        } else if let text = reader.text(node, path) {
            texts = [(text, node)]
        } else {
            return nil
        }
        let terms = texts.map { text, _ in
            text.hasPrefix("-") ? RateTerm(source: String(text.dropFirst()).trimmed, negated: true) : RateTerm(source: text.trimmed)
        }
        for term in terms { checkSource(term.source, path, node, quantity: .power, sources: sources) }
        return .sum(terms)
    }

    /// `integrate`, `import`, `export`, `charge`, `discharge`, `{counter: SOURCE}`, `{daily: SOURCE}`.
    func loadTotal(_ node: YAMLNode, _ path: String, slot: FlowSlot) -> TotalSpec? {
        if var map = node.pairs.map({ MappingReader(reader: reader, node: node, pairs: $0, path: path) }) {
            defer { map.finish() }
            let counter = map.text("counter")
            let daily = map.text("daily")
            switch (counter, daily) {
            case (let source?, nil): return .counter(source: source)
            case (nil, let source?): return .daily(source: source)
            default:
                reader.report(path, node, "write {counter: SOURCE} or {daily: SOURCE}")
                return nil
            }
        }
        guard let word = reader.text(node, path) else { return nil }
        let allowed: [FlowSlot: [String: TotalSpec]] = [
            .inputs: ["integrate": .integrate], .output: ["integrate": .integrate],
            .exchange: ["import": .imported, "export": .exported],
            .storage: ["charge": .charged, "discharge": .discharged],
        ]
        if let spec = allowed[slot]?[word] { return spec }
        let words = (allowed[slot]?.keys.sorted() ?? []) + ["{counter: SOURCE}", "{daily: SOURCE}"]
        reader.report(path, node, "'\(word)' is not a total of the \(slot.rawValue) slot (use \(words.joined(separator: ", ")))")
        return nil
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

/// Hints for mistakes YAML makes easy.
enum ConfigHint {
    static let quoteJSONPath = #"a JSON path with [ ] is read by YAML as a list: put it in quotes, e.g. json: '["em:0"].x'"#

    /// The hint for a YAML syntax error on a line that holds an unquoted `json:` path with
    /// brackets (`{topic: x, json: ENERGY.Power[1]}`): in a flow mapping `[` starts a list.
    static func bracketsInJSONPath(onLine line: Int, of bytes: [UInt8]) -> String? {
        let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        guard line >= 1, line <= lines.count else { return nil }
        let text = String(decoding: lines[line - 1], as: UTF8.self)
        guard let key = text.firstRange(of: "json:") else { return nil }
        let value = text[key.upperBound...].drop { $0 == " " }
        guard let first = value.first, first != "'", first != "\"", value.contains("[") else { return nil }
        return quoteJSONPath
    }
}

extension String {
    var trimmed: String { String(Substring(self).trimmingSpaces) }
}
