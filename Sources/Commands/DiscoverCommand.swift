import Configuration
import Discovery
import FlowCore
import FoundationEssentials
import Glibc
import Mosquitto
import Persistence
import Platform
import Runtime
import Synchronization

/// `flowbridge discover --broker HOST[:PORT] [--listen 60s] [--out FILE]`: listens to everything
/// on the broker (`#`), recognizes the devices it knows, and writes a config with their topics,
/// paths, units and signs, each explained, and what it could not place listed. A Victron portal
/// is asked to publish (`R/<portal>/keepalive`) as soon as one of its topics shows it.
struct DiscoverCommand: Command {
    static let name = "discover"
    static let abstract = "Listens to everything on a broker, recognizes the devices it knows, and writes a config for them: their topics, paths, units and signs, each explained, and what it could not place listed."

    static let broker = Option<String>.required("--broker", placeholder: "HOST[:PORT]", help: "the broker to listen to (port 1883 unless given)")
    static let username = Option<String?>("--username", placeholder: "NAME", help: "the broker login's user name")
    static let passwordEnv = Option<String?>(
        "--password-env", placeholder: "VAR",
        help: "with --username: the broker login's password is read from the environment variable VAR, and the config written refers to it")
    static let listen = Option<Double>(
        "--listen", placeholder: "DURATION", help: "how long to listen (1s to 24h)", default: 60, shownDefault: "60s"
    ) { text throws(UsageError) in try SharedOptions.listenSeconds(text) }
    static let out = Option<String?>("--out", alias: "-o", placeholder: "FILE", help: "the config to write, a new file (default: standard output)")
    static var options: [any OptionDeclaration] { [broker, username, passwordEnv, listen, out, SharedOptions.logLevel] }

    /// Where to listen, and what the config written says of it.
    let broker: BrokerSettings
    /// From `--password-env`; the config refers to the variable, never holds the password.
    let password: String?
    let seconds: Double
    /// The config file to write; nil: standard output.
    let out: String?
    let log: Logger

    init(parsing arguments: Arguments) throws(UsageError) {
        let text = try arguments.value(Self.broker)
        guard let address = BrokerAddress(text) else { throw UsageError("--broker: '\(text)' is not HOST or HOST:PORT") }
        let username = try arguments.value(Self.username)
        let passwordEnv = try arguments.value(Self.passwordEnv)
        if passwordEnv != nil, username == nil { throw UsageError("--password-env needs --username") }
        if let passwordEnv {
            guard let value = ProcessInfo.processInfo.environment[passwordEnv] else {
                throw UsageError("--password-env: the environment variable \(passwordEnv) is not set")
            }
            password = value
        } else {
            password = nil
        }
        broker = BrokerSettings(host: address.host, port: address.port, username: username, passwordEnv: passwordEnv)
        seconds = try arguments.value(Self.listen)
        out = try arguments.value(Self.out)
        log = try arguments.log()
    }

    func run() async -> ExitStatus {
        if let out, FileIO.exists(out) {
            StandardError.print("flowbridge: \(out) exists; discover writes a new file (give another --out, or move it away)")
            return .cannotCreate
        }
        // The connection `run`, `record` and `check --listen` make: MQTT 5 (falling back to 3.1.1),
        // the broker told the largest message taken, a source's default `max_payload`. A huge
        // retained message is dropped by the broker, or left unread and said, never taken whole.
        let defaults = MQTTSettings()
        let options = MQTTOptions(
            host: broker.host, port: broker.port, clientID: "flowbridge-discover-\(getpid())", username: broker.username, password: password,
            protocolVersion: defaults.protocolVersion, fallsBackToV311: defaults.fallsBackToV311,
            maximumPayloadBytes: SourceConfig.defaultMaxPayloadBytes)
        let client: MQTTClient
        do {
            client = try MQTTClient(options: options, subscriptions: ["#"], qos: .atMostOnce)
        } catch {
            StandardError.print("flowbridge: \(error)")
            return .usage
        }
        let address = "\(broker.host):\(broker.port)"
        log.log(.info, "listening \(JSONValue.format(seconds)) s to everything on \(address)")
        let discovery = Mutex(Discovery())
        let asked = Mutex([KeepaliveSettings]())
        let own = OwnMessages(client: client, log: log)
        let log = log
        let outcome = await TimedListen(client: client, seconds: seconds, log: log).run(
            connected: { own.sendKeepalives(asked.withLock { $0 }) },
            message: { message, _ in
                discovery.withLock { $0.hear(topic: message.topic, payload: message.payload, retained: message.retained) }
                // A Victron portal publishes only while asked: ask as soon as it shows itself.
                guard let topic = Discovery.keepalive(for: message.topic) else { return }
                let keepalive = KeepaliveSettings(topic: topic, intervalSeconds: Double(Discovery.keepaliveIntervalSeconds))
                let new = asked.withLock { asked in
                    if asked.contains(keepalive) { return false }
                    asked.append(keepalive)
                    return true
                }
                guard new else { return }
                log.log(.info, "Victron Venus OS found: asking it to publish (\(topic))")
                own.sendKeepalives([keepalive])
            },
            tick: { second, _ in own.sendKeepalives(asked.withLock { $0 }, atSecond: second) })
        let catalog = discovery.withLock { $0.catalog }
        guard outcome.connected else {
            StandardError.print("flowbridge: never connected to \(address)\(outcome.lastProblem.map { ": \($0)" } ?? "")")
            return .unavailable
        }
        let plan = discovery.withLock { $0.plan }
        let overflow = catalog.overflowTopics > 0
            ? "; \(catalog.overflowTopics) more topics came once \(TopicCatalog.maxBytes >> 20) MiB of topics and payloads were kept, and were not looked at"
            : ""
        let heard = "\(catalog.messages) messages on \(catalog.records.count) topics in \(JSONValue.format(seconds.rounded())) s\(overflow)"
        guard !plan.isEmpty else {
            var lines = plan.devices.isEmpty
                ? ["flowbridge: no device flowbridge knows was heard in \(heard); no config written."]
                : ["flowbridge: heard \(plan.devices.joined(separator: "; ")) in \(heard), and nothing to place without guessing; no config written."]
            for item in plan.leftOut.prefix(20) {
                lines.append("  \(item.topic): \(item.why)")
                if let suggestion = item.suggestion { lines.append("    \(suggestion.configLine)") }
            }
            if !plan.unplaced.isEmpty {
                lines.append("Topics that may be readings (see Config/examples for how to read them):")
                lines += plan.unplaced.prefix(20).map { "  \($0)" }
            }
            // What the broker named reaches the terminal escaped too: no control sequence of a
            // stranger's topic is played on the user's terminal.
            StandardError.print(lines.map(YAMLScalar.comment).joined(separator: "\n"))
            return .failure
        }
        let text = plan.configText(broker: broker, heard: Heard(messages: catalog.messages, topics: catalog.records.count, seconds: seconds))
        let summary = [
            "recognized: " + plan.devices.joined(separator: "; "),
            "placed: " + placed(plan),
            plan.leftOut.isEmpty ? nil : "left out: \(plan.leftOut.count) (each with why, at the end of the config)",
            plan.unplaced.isEmpty ? nil : "not placed: \(counted(plan.unplaced.count, "topic")) that may be readings (listed at the end of the config)",
        ].compactMap { $0 }
        guard let out else {
            print(text, terminator: "")
            summary.map(YAMLScalar.comment).forEach { log.log(.info, $0) }
            return .success
        }
        do { try FileIO.writeAtomically(Array(text.utf8), to: out, permissions: 0o644) } catch {
            StandardError.print("flowbridge: cannot write \(out): \(error)")
            return .cannotCreate
        }
        print((["wrote \(out) from \(heard)"] + summary.map(YAMLScalar.comment) + ["next: flowbridge check --config \(out) --listen 60s"]).joined(separator: "\n"))
        return .success
    }

    /// `Solar ← solar/ac/power; Grid ← …`.
    func placed(_ plan: SetupPlan) -> String {
        let nodes = plan.production + [plan.battery, plan.grid].compactMap { $0 }
        return nodes.map { node in "\(node.name) ← \(node.terms.map(\.source.topic).joined(separator: " + "))" }.joined(separator: "; ")
    }
}
