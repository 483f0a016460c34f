import Glibc
import Mosquitto

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
    /// MQTT 5 unless `protocol: 3.1.1`: only MQTT 5 can tell the broker the largest message we
    /// take (so a huge retained message never reaches us), and say why it refused a publish. Every
    /// broker of the last years speaks it (mosquitto since 1.6); for one that does not,
    /// `fallsBackToV311` (the default, off when `protocol: 5` is written) connects with 3.1.1.
    public var protocolVersion = ProtocolVersion.v5
    public var fallsBackToV311 = true
    /// The largest payload the connection takes (the sources' largest `max_payload`); nil: no limit.
    public var maximumPayloadBytes: Int?
    public var tls: TLSSettings?
    /// flowbridge publishes `<prefix>/status` = online / offline (its last will).
    public var topicPrefix = "flowbridge"

    /// The defaults, as a config without `mqtt:` has them.
    public init() {}

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
            protocolVersion: protocolVersion, fallsBackToV311: fallsBackToV311, maximumPayloadBytes: maximumPayloadBytes,
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

/// Victron Venus OS publishes only while a client keeps asking: `R/<portal id>/keepalive`.
public struct KeepaliveSettings: Sendable, Equatable {
    public var topic: String
    public var intervalSeconds: Double

    public init(topic: String, intervalSeconds: Double) {
        self.topic = topic
        self.intervalSeconds = intervalSeconds
    }
}
