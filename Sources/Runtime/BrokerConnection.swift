import Configuration
import Delivery
import FlowCore
import FoundationEssentials
import Mosquitto
import Platform
import Synchronization
import Threads

/// The daemon's one broker connection, as a part: it subscribes to the sources' topics and to the
/// ones the sinks listen to, gives each message to the sink that listens to its topic or else to
/// the engine, and on every connect tells the log, the systemd status, the broker (`online`), the
/// sinks, Venus OS (its keepalives) and the engine. Its stop publishes `offline` as the client's
/// final message (a dry run publishes neither).
///
/// Events come in order on the client's network thread: the bridge never waits (sinks only
/// queue), so each message is taken where it arrives, with no hop to another thread. The widgets
/// a message moves are offered at the client's `caughtUp`: at once for a lone message, once for a
/// backlog read in one go (`FlowEngine.endBatch`).
final class BrokerConnection: Service {
    let name = "mqtt connection"
    let client: MQTTClient
    /// `HOST:PORT`, for the log.
    let address: String
    let bridge: Bridge
    let sinks: [any Sink]
    /// Where `online` and `offline` go; nil in a dry run.
    let statusTopic: String?
    let status: StatusReporter
    let messages: OwnMessages
    let log: Logger
    /// The daemon's clock, whose beat the readings take while they come.
    private let clock: Heartbeat
    /// The topics the sinks listen to: their messages are the sink's, never a reading.
    private let listeners: [(filter: TopicFilter, sink: any Sink)]
    /// Cleared by `stopTakingMessages`: the first step of the stop.
    private let taking = Atomic(true)
    /// Whether the pages read only to start were given back (`StartupPages`): once, at the first
    /// connection, when the config is read, the sinks made (libcurl loaded) and the broker reached.
    private let startupPagesReleased = Atomic(false)

    /// Takes over `client` (made before the sinks, which publish through it) and subscribes it to
    /// the sinks' topics too. Throws for a topic filter of a sink that is not one.
    init(
        client: MQTTClient, address: String, bridge: Bridge, sinks: [any Sink], statusTopic: String?, status: StatusReporter, clock: Heartbeat,
        log: Logger
    ) throws {
        self.clock = clock
        self.client = client
        self.address = address
        self.bridge = bridge
        self.sinks = sinks
        self.statusTopic = statusTopic
        self.status = status
        messages = OwnMessages(client: client, log: log)
        self.log = log
        listeners = try sinks.flatMap { sink in try sink.subscriptions.map { (try TopicFilter($0), sink) } }
        try client.updateSubscriptions(topics(for: bridge.config))
    }

    /// What the connection subscribes to for `config`: every source's topic, then the sinks' own.
    func topics(for config: DaemonConfig) -> [String] {
        let sources = Daemon.subscriptions(of: config)
        return sources + sinks.flatMap(\.subscriptions).filter { !sources.contains($0) }
    }

    /// Starts the client, whose events come to `handle` from now on; at the stop, `offline`. An
    /// insecure TLS connection is said once, here.
    func run() async throws {
        if client.options.tls?.insecure == true { log.log(.warning, TLSOptions.insecureWarning) }
        do { try client.start { [self] event in handle(event) } } catch { throw RunFailure.mqttClient(error) }
        try await gracefulShutdown()
        client.stop(finalMessage: statusTopic.map { (topic: $0, payload: Array("offline".utf8), retain: true) })
    }

    /// The first step of the stop: messages that arrive after it are left alone, so the state
    /// written at the stop is the one the sinks were given.
    func stopTakingMessages() {
        taking.store(false, ordering: .relaxed)
        bridge.endBatch()
    }

    private func handle(_ event: MQTTEvent) {
        switch event {
        case .message(let message):
            guard taking.load(ordering: .relaxed) else { return }
            if let listener = listeners.first(where: { $0.filter.matches(message.topic) }) {
                listener.sink.receive(topic: message.topic, payload: message.payload, retained: message.retained)
            } else {
                let time = bridge.time.read()
                bridge.receive(message, at: time.now, monotonic: time.monotonic, inBatch: true)
            }
        case .caughtUp:
            // Also after the stop began: a message taken just before it waits for this.
            bridge.endBatch()
            // While readings come, they take the clock's beat (see `Heartbeat`).
            clock.beatIfDue()
        case .connected:
            // Subscribing: the broker's SUBACK says later whether it took every topic.
            log.log(.info, "connected to \(address), subscribing to \(client.subscriptions.count) topics")
            status.update {
                $0.broker = .connected
                $0.refusedTopics = []
                $0.connectedSince = bridge.time.now()
                $0.connections += 1
            }
            if let statusTopic { messages.publish(topic: statusTopic, payload: "online", qos: .atLeastOnce, retain: true) }
            // What the broker may have lost meanwhile: the widgets' content, the discovery.
            for sink in sinks { sink.connected() }
            // Venus OS publishes nothing until asked: ask at once, not after an interval.
            messages.sendKeepalives(bridge.config.keepalives)
            // From the first subscription on, a source that never reports is said.
            bridge.subscribed(at: bridge.time.now())
            if !startupPagesReleased.exchange(true, ordering: .relaxed) {
                // Off this thread: libmosquitto sends the SUBSCRIBE once this callback returns, and
                // a message published before the broker has it is not delivered. On a thread of
                // its own, which ends with it: a task on the shared pool would start libdispatch's
                // pool, and its monitor's wake-up every second (`ThreadExecutor`).
                _ = try? NamedThread.start("pages", detached: true) { [log] in
                    if let released = StartupPages.release() { log.log(.info, released.text(after: "running")) }
                }
            }
        case .disconnected(let reason):
            log.log(.warning, "broker connection: \(reason); reconnecting")
            status.update {
                $0.broker = .waiting(cause: client.lastError?.cause ?? reason)
                $0.connectedSince = nil
            }
        case .subscribed(let taken):
            log.log(.info, Self.subscribedText(taken))
        case .subscriptionRefused(let filter, let reason):
            log.log(.error, Self.refusalText(filter: filter, reason: reason))
            status.update { if !$0.refusedTopics.contains(filter) { $0.refusedTopics.append(filter) } }
        case .publishRefused(let topic, let reason):
            messages.refused(topic: topic, reason: reason)
        case .oversizedMessage(let topic, let bytes):
            messages.oversized(topic: topic, bytes: bytes, limit: client.options.maximumPayloadBytes ?? 0)
        }
    }

    /// What the log says when the broker answered a subscription: from here on its messages come
    /// (what a test waits for before it publishes).
    package static func subscribedText(_ taken: [String]) -> String {
        "subscribed to \(taken.count) topic\(taken.count == 1 ? "" : "s")"
    }

    /// What the log says of a subscription the broker refused: what `check --listen` says too.
    package static func refusalText(filter: String, reason: String) -> String {
        "the broker refused the subscription to '\(filter)': \(reason); nothing of it will come (is the broker's ACL for this user right?)"
    }

    /// A reloaded config's topics: what went is unsubscribed, what came is subscribed, and the
    /// log says which.
    func resubscribe(for config: DaemonConfig) {
        let old = client.subscriptions
        let wanted = topics(for: config)
        guard wanted != old else { return }
        let change = [
            wanted.filter { !old.contains($0) }.map { "+ \($0)" }, old.filter { !wanted.contains($0) }.map { "- \($0)" },
        ].joined().joined(separator: ", ")
        do {
            try client.updateSubscriptions(wanted)
            log.log(.info, "reload: topics \(change)")
        } catch {
            log.log(.warning, "reload: topics \(change): \(error)")
        }
    }
}
