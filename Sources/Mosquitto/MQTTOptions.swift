import CMosquitto
import FlowCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The MQTT protocol version spoken to the broker.
public enum ProtocolVersion: Sendable, Equatable {
    /// MQTT 3.1.1: what every broker speaks; the client's default.
    case v311
    /// MQTT 5: adds reason codes on refusal (CONNACK, SUBACK, PUBACK), message properties such as
    /// message expiry, and CONNECT's Maximum Packet Size.
    case v5
}

/// A last-will message: the broker publishes it when the connection dies without a DISCONNECT
/// (crash, kill, network cut). flowbridge uses `<prefix>/status` = `offline`, retained.
public struct Will: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: QoS
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: QoS = .atLeastOnce, retain: Bool = true) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }
}

/// TLS to the broker. Verification is on unless the user explicitly asks otherwise.
public struct TLSOptions: Sendable, Equatable {
    /// The CA certificate (PEM) that signed the broker's certificate. `nil` trusts the system store
    /// (`systemCAPath`), which is right for brokers with a public certificate.
    public var caFile: String?
    /// Client certificate and its key (PEM, unencrypted), for brokers that require one. Both or neither.
    public var certFile: String?
    public var keyFile: String?
    /// Skips certificate AND hostname verification. Only for a user who explicitly says so:
    /// it makes the connection open to anyone on the path.
    public var insecure: Bool

    /// What `check` and `run`'s start say of `insecure`: it is a choice to be reminded of, since
    /// nothing else shows it once the connection works.
    public static let insecureWarning =
        "TLS to the broker without certificate or host name verification (mqtt.tls.insecure: true): anyone on the path can read and change the readings"

    /// Where Debian keeps the system's trusted CA certificates, hashed for OpenSSL's `capath`.
    public static let systemCAPath = "/etc/ssl/certs"

    public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.insecure = insecure
    }
}

/// How to reach and authenticate to the broker. Checked as a whole by `validate()` before any
/// network I/O, so a typo in the config fails at start with a message naming the field.
public struct MQTTOptions: Sendable {
    public var host: String
    /// 1883 for plain TCP; 8883 is the usual TLS port, but only when the user configures it.
    public var port: Int
    /// Must be unique on the broker: a second client with the same ID takes the session over and
    /// the two kick each other out. Empty lets libmosquitto generate a random one.
    public var clientID: String
    /// 0 disables keepalive; otherwise 5...65535 (libmosquitto's limits).
    public var keepaliveSeconds: Int
    public var username: String?
    /// Read by the caller from a file or the environment. Never logged: `description` redacts it.
    public var password: String?
    /// `nil` is plain TCP.
    public var tls: TLSOptions?
    public var protocolVersion: ProtocolVersion
    /// Under MQTT 5: when the broker answers that it does not speak it (a 3.1.1-only broker), the
    /// next connect speaks 3.1.1, for as long as the client runs.
    public var fallsBackToV311: Bool
    /// The largest payload taken: under MQTT 5 the broker is told the largest packet it may send
    /// (`maximumPacketBytes`) and drops a larger message for us; under 3.1.1 a larger message is
    /// reported as `.oversizedMessage` before any copy of ours. `nil`: no limit.
    public var maximumPayloadBytes: Int?
    public var will: Will?
    /// Reconnect backoff in seconds: the first retry waits `min`, each failed one doubles it, up to
    /// `max`; the loss of a connection that lasted `max` seconds starts over from `min` (one lost
    /// sooner is a failure too). Each wait is jittered down to half its value, so clients that lost
    /// one broker do not all come back in the same second. The default `max` of 15 s means a
    /// broker back from a long outage is reached within 15 s.
    public var reconnectDelay: (min: Int, max: Int)

    public init(
        host: String = "127.0.0.1",
        port: Int = 1883,
        clientID: String = "",
        keepaliveSeconds: Int = 60,
        username: String? = nil,
        password: String? = nil,
        tls: TLSOptions? = nil,
        protocolVersion: ProtocolVersion = .v311,
        fallsBackToV311: Bool = false,
        maximumPayloadBytes: Int? = nil,
        will: Will? = nil,
        reconnectDelay: (min: Int, max: Int) = (min: 1, max: 15)
    ) {
        self.host = host
        self.port = port
        self.clientID = clientID
        self.keepaliveSeconds = keepaliveSeconds
        self.username = username
        self.password = password
        self.tls = tls
        self.protocolVersion = protocolVersion
        self.fallsBackToV311 = fallsBackToV311
        self.maximumPayloadBytes = maximumPayloadBytes
        self.will = will
        self.reconnectDelay = reconnectDelay
    }

    /// Throws `MQTTError.invalidOptions` naming the first field that cannot work.
    public func validate() throws(MQTTError) {
        func fail(_ message: String) -> MQTTError { .invalidOptions(message) }
        if host.isEmpty { throw fail("host is empty") }
        if !(1...65535).contains(port) { throw fail("port \(port) is not in 1...65535") }
        if clientID.utf8.count > 65535 || clientID.utf8.contains(0) {
            throw fail("clientID must be at most 65535 bytes without NUL")
        }
        if keepaliveSeconds != 0 && !(5...65535).contains(keepaliveSeconds) {
            throw fail("keepaliveSeconds \(keepaliveSeconds) must be 0 (off) or 5...65535")
        }
        if password != nil && username == nil { throw fail("a password needs a username") }
        if reconnectDelay.min < 1 || reconnectDelay.max < reconnectDelay.min || reconnectDelay.max > 86_400 {
            throw fail("reconnectDelay must satisfy 1 <= min <= max <= 86400 s (got \(reconnectDelay.min)...\(reconnectDelay.max))")
        }
        if let bytes = maximumPayloadBytes, !(1...Self.largestPayloadBytes).contains(bytes) {
            throw fail("maximumPayloadBytes \(bytes) must be 1...\(Self.largestPayloadBytes)")
        }
        if let will { try Topic.validatePublish(will.topic, what: "will topic") }
        if let tls {
            if let ca = tls.caFile { try Self.requireReadable(ca, what: "tls caFile") }
            switch (tls.certFile, tls.keyFile) {
            case (nil, nil): break
            case (let cert?, let key?):
                try Self.requireReadable(cert, what: "tls certFile")
                try Self.requireReadable(key, what: "tls keyFile")
            default: throw fail("tls certFile and keyFile must be given together")
            }
        }
    }

    /// MQTT's largest packet (its remaining length's limit, plus the fixed header's 5 bytes).
    static let largestPacketBytes = 268_435_460
    /// The most a PUBLISH holds besides its payload: fixed header (5), topic (2 + up to 65,535),
    /// packet ID (2), properties (a broker adds little; 1 KiB is ample).
    static let publishOverheadBytes = 5 + 2 + 65_535 + 2 + 1_024
    /// The largest payload an MQTT message can carry: no `max_payload` may be larger.
    public static let largestPayloadBytes = largestPacketBytes - publishOverheadBytes

    /// CONNECT's Maximum Packet Size for `maximumPayloadBytes`: the payload and the most a PUBLISH
    /// adds to it, so no message within the limit is refused for its topic.
    var maximumPacketBytes: Int? { maximumPayloadBytes.map { $0 + Self.publishOverheadBytes } }

    /// The wait before the next connect attempt after `failures` failed ones: `min` doubled per
    /// failure, capped at `max`, then a random point in its upper half (never more than `max`).
    func reconnectDelayMilliseconds(afterFailures failures: Int) -> Int {
        var delay = reconnectDelay.min
        for _ in 0..<failures where delay < reconnectDelay.max { delay *= 2 }
        let ceiling = min(delay, reconnectDelay.max) * 1000
        return Int.random(in: (ceiling / 2)...ceiling)
    }

    /// A connection the broker kept at least this long (the longest backoff) was a working one, and
    /// its loss starts the backoff over. One lost sooner counts as a failed attempt: most often
    /// another client with the same client ID, whose reconnect takes the session over and whose
    /// next loss makes it ours again. Started over after every takeover, the two would take turns
    /// every second, forever, each turn firing the other's will; backing off, they take turns at
    /// most every `max` seconds.
    var establishedConnectionSeconds: Double { Double(reconnectDelay.max) }

    private static func requireReadable(_ path: String, what: String) throws(MQTTError) {
        if access(path, R_OK) != 0 {
            let reason = String(cString: strerror(errno))
            throw .invalidOptions("\(what) '\(path)' is not readable: \(reason)")
        }
    }
}

extension MQTTOptions: CustomStringConvertible, CustomReflectable {
    /// Everything useful for a log line, with the password redacted.
    public var description: String {
        var parts = ["\(tls == nil ? "mqtt" : "mqtts")://\(host):\(port)", "clientID=\(clientID.isEmpty ? "(random)" : clientID)"]
        if let username { parts.append("username=\(username)") }
        if password != nil { parts.append("password=<redacted>") }
        if let tls {
            parts.append("ca=\(tls.caFile ?? TLSOptions.systemCAPath)")
            if let cert = tls.certFile { parts.append("cert=\(cert)") }
            if tls.insecure { parts.append("INSECURE (no certificate verification)") }
        }
        parts.append(protocolVersion == .v5 ? (fallsBackToV311 ? "MQTT 5 (or 3.1.1)" : "MQTT 5") : "MQTT 3.1.1")
        return parts.joined(separator: " ")
    }

    /// Keeps `dump(options)` and debugger output from showing the password.
    public var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .struct)
    }
}

/// Topic checks shared by the options, the client and its subscriptions: libmosquitto's own rules,
/// so a topic we accept is one libmosquitto will send.
enum Topic {
    static func validatePublish(_ topic: String, what: String) throws(MQTTError) {
        let ok = !topic.isEmpty && !topic.utf8.contains(0) && topic.withCString { mosquitto_pub_topic_check2($0, topic.utf8.count) } == MOSQ_ERR_SUCCESS.rawValue
        if !ok { throw .invalidOptions("\(what) '\(topic)' is not a valid topic to publish to (no wildcards, not empty)") }
    }

    static func validateFilter(_ filter: String) throws(MQTTError) {
        let ok = !filter.isEmpty && !filter.utf8.contains(0) && filter.withCString { mosquitto_sub_topic_check2($0, filter.utf8.count) } == MOSQ_ERR_SUCCESS.rawValue
        if !ok {
            throw .invalidOptions("subscription '\(filter)' is not a valid topic filter ('+' and '#' only as whole levels, '#' last)")
        }
    }
}

/// The network thread's reconnect schedule: the wait after each connect attempt, from how the
/// attempt ended (a state machine of its own, so the rule is tested without a clock).
struct ReconnectBackoff {
    let options: MQTTOptions
    /// Attempts that failed, or connections lost too soon, since the last working connection.
    private(set) var failures = 0

    init(_ options: MQTTOptions) { self.options = options }

    /// The wait in milliseconds before the next attempt. `connectedForSeconds`: how long the broker
    /// kept the connection it accepted, or `nil` when it accepted none (refused, unreachable).
    mutating func attemptEnded(connectedForSeconds: Double?) -> Int {
        if let seconds = connectedForSeconds, seconds >= options.establishedConnectionSeconds { failures = 0 }
        defer { failures += 1 }
        return options.reconnectDelayMilliseconds(afterFailures: failures)
    }
}
