import Glibc
import FlowCore
import Mosquitto
import Platform

/// What `mqtt:` gave: the settings, and `topic_prefix` as it was written (if it was), which
/// `output.mqtt.prefix` must agree with.
struct BrokerSection {
    var settings = MQTTSettings()
    var topicPrefix: ConfigNode?
}

extension ConfigLoader {
    /// `mqtt:`: how flowbridge reaches the broker.
    func loadMQTT(_ mqtt: ConfigNode) -> BrokerSection {
        var section = BrokerSection()
        guard var map = mqtt.mapping() else { return section }
        let problemsBefore = reader.problems.count
        if let host = map.text("host") {
            if host.value.isEmpty || host.value.contains(where: \.isWhitespace) {
                host.report("must be a host name or address, found '\(host.value)'")
            } else {
                section.settings.host = host.value
            }
        }
        if let port = map.number("port") {
            if port.value == port.value.rounded(), (1...65_535).contains(port.value) { section.settings.port = Int(port.value) } else {
                port.report("must be a port number 1…65535")
            }
        }
        if let id = map.text("client_id") {
            if id.value.isEmpty || id.value.utf8.count > 65_535 || id.value.utf8.contains(0) {
                id.report("must be 1 to 65535 bytes, without NUL")
            } else {
                section.settings.clientID = id.value
            }
        }
        if let keepalive = map.duration("keepalive") {
            if keepalive.value == keepalive.value.rounded(), MQTTSettings.keepaliveRange.contains(Int(exactly: keepalive.value) ?? 0) {
                section.settings.keepaliveSeconds = Int(keepalive.value)
            } else {
                keepalive.report("must be whole seconds from 5s to 65535s (the broker's ping interval)")
            }
        }
        let username = map.text("username")
        section.settings.username = username?.value
        map.field("password")?.report("write the password to a file (password_file) or an environment variable (password_env), never into the config")
        let passwordFile = map.text("password_file")
        let passwordEnv = map.text("password_env")
        section.settings.passwordFile = passwordFile?.value
        section.settings.passwordEnv = passwordEnv?.value
        if passwordFile != nil, let passwordEnv {
            passwordEnv.report("give password_file or password_env, not both")
        } else if let given = passwordFile ?? passwordEnv, username == nil {
            given.report("a password needs a username (mqtt.username)")
        } else if let context {
            section.settings.password = loadSecret(file: passwordFile, variable: passwordEnv, context: context)
        }
        if let version = map.field("protocol") {
            switch version.node.scalarValue {
            case "5", "5.0": section.settings.fallsBackToV311 = false
            case "3.1.1", "311", "4": section.settings.protocolVersion = .v311
            default: version.report("must be 3.1.1 or 5")
            }
        }
        section.topicPrefix = map.field("topic_prefix")
        if let prefix = section.topicPrefix?.text() {
            if let problem = Self.topicProblem(prefix.value) {
                prefix.report(problem)
            } else {
                section.settings.topicPrefix = prefix.value
            }
        }
        section.settings.tls = map.field("tls").map(loadTLS)
        map.finish()
        // What the client checks once more at start; said here, so `run` never finds more than `check`.
        if context != nil, reader.problems.count == problemsBefore {
            do { try section.settings.options().validate() } catch {
                mqtt.report(error.description)
            }
        }
        return section
    }

    /// The largest payload the broker connection takes: the sources' largest `max_payload`, and
    /// never less than the default one, which the sinks' own topics (Home Assistant's status) fit.
    /// Anything larger is of no use to any source, and a 150 MB retained message must not reach
    /// the daemon's memory (libmosquitto's buffer, its copy, ours).
    static func maximumPayloadBytes(of sources: [SourceConfig]) -> Int {
        max(sources.map(\.maxPayloadBytes).max() ?? 0, SourceConfig.defaultMaxPayloadBytes)
    }

    /// `mqtt.tls:`; with a context, each file must be readable.
    func loadTLS(_ tlsNode: ConfigNode) -> MQTTSettings.TLSSettings {
        var tls = MQTTSettings.TLSSettings()
        guard var map = tlsNode.mapping() else { return tls }
        func file(_ path: ConfigValue<String>?) -> String? {
            if let path, context != nil, access(path.value, R_OK) != 0 {
                path.report("cannot read \(FileError(path.value))")
            }
            return path?.value
        }
        tls.caFile = file(map.text("ca_file"))
        tls.certFile = file(map.text("cert_file"))
        tls.keyFile = file(map.text("key_file"))
        tls.insecure = map.flag("insecure")?.value ?? false
        if (tls.certFile == nil) != (tls.keyFile == nil) {
            tlsNode.report(at: "cert_file", "a client certificate needs both cert_file and key_file")
        }
        map.finish()
        return tls
    }

    /// `keepalive:`: a list of `{topic, interval}`.
    func loadKeepalives(_ keepalive: ConfigNode) -> [KeepaliveSettings] {
        guard let items = keepalive.items else {
            keepalive.report("expected a list of {topic, interval}, found \(keepalive.node.describedKind)")
            return []
        }
        return items.compactMap { item in
            guard var map = item.mapping() else { return nil }
            defer { map.finish() }
            var topic = map.required("topic")?.text()
            if let text = topic?.value, let problem = Self.topicProblem(text) {
                topic?.report("'\(PrintableText.escaped(text))' is not a topic to publish to: it \(problem)")
                topic = nil
            }
            let interval = map.duration("interval")
            if let interval, interval.value < 1 { interval.report("must be at least 1s") }
            return topic.map { KeepaliveSettings(topic: $0.value, intervalSeconds: max(1, interval?.value ?? 30)) }
        }
    }
}
