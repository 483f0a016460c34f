import Dispatch
import FlowCore
import Synchronization
import Threads

/// The broker connection the MQTT sink publishes through: the daemon's own (`MQTTClient`), the
/// one it subscribes with and whose last will is its status.
public protocol MQTTPublishing: Sendable {
    /// Hands a message to the connection without waiting for the network; throws while
    /// disconnected (nothing is queued for later).
    func publish(topic: String, payload: [UInt8], qos: QoS, retain: Bool) throws
    var isConnected: Bool { get }
}

/// Publishes every widget's pushes on the broker (`output.mqtt`): the whole content on
/// `<prefix>/<widget>/content` (retained), each patch on `<prefix>/<widget>/patch`, and with
/// `home_assistant` the discovery configs and values of the sensors (`HomeAssistantDiscovery`).
///
/// Publishing only hands a message to the connection, but `take` does not even do that: pushes
/// go through an `Outbox` to a thread of the sink's own, and the connection's events (connected,
/// Home Assistant online, a reload) to a serial queue of its own, so the engine never waits on the
/// sink. One lock orders everything the sink publishes, so a content published at a reconnect is
/// never overtaken by an older one. While the broker is away nothing is published and nothing
/// queues up; `connected()` publishes the current truth.
public final class MQTTSink: Sink {
    public let name = "mqtt"
    public let settings: MQTTOutputSettings
    private let core: Core
    private let outbox: Outbox

    /// Home Assistant's `online`, which anyone on the broker may publish: at most one re-announce
    /// waits, and they go out at most once a second, so a flood of `online` costs neither memory
    /// nor a publish storm. When the last went out, and whether the next one waits already.
    fileprivate struct Reannounce {
        static let interval = Duration.seconds(1)
        var last: ContinuousClock.Instant?
        var waiting = false
        /// `online`s taken as the waiting re-announce.
        var coalesced = 0
        /// Those the last re-announce answered besides its own.
        var answered = 0

        /// How long until a re-announce asked for `now` may go out; nil when one waits already.
        mutating func ask(at now: ContinuousClock.Instant) -> Duration? {
            guard !waiting else {
                coalesced += 1
                return nil
            }
            waiting = true
            return last.map { max(.zero, $0 + Self.interval - now) } ?? .zero
        }

        /// The waiting re-announce goes out.
        mutating func go(at now: ContinuousClock.Instant) {
            answered = coalesced
            coalesced = 0
            waiting = false
            last = now
        }
    }

    /// - Parameters:
    ///   - flow: the widgets and their nodes (the sensors Home Assistant gets).
    ///   - software: flowbridge's version, on Home Assistant's device.
    ///   - connection: the daemon's broker connection.
    ///   - capacity: pushes that may wait before they coalesce.
    ///   - log: where removals, announcements and failed publishes are said.
    public init(
        settings: MQTTOutputSettings, flow: FlowConfig, software: String, connection: any MQTTPublishing, capacity: Int = 256,
        log: @escaping @Sendable (Diagnostic) -> Void
    ) throws(NamedThread.StartError) {
        self.settings = settings
        let core = Core(publication: MQTTPublication(settings: settings, flow: flow, software: software), connection: connection, log: log)
        self.core = core
        outbox = try Outbox(
            label: "mqtt", capacity: capacity,
            deliver: { pushes in core.run { publication in pushes.flatMap { publication.push($0) } } },
            onCoalesce: {
                log(Diagnostic(.warning, "mqtt: the broker connection is not keeping up: pushes are coalesced (each patch then carries what changed since the last one published)"))
            })
    }

    public var destination: String {
        "mqtt (\(settings.prefix)/<widget>/content\(settings.homeAssistant == nil ? "" : ", Home Assistant discovery"))"
    }

    /// Home Assistant's status, with `home_assistant`.
    public var subscriptions: [String] { settings.subscriptions }

    public func take(_ push: WidgetPush) { outbox.offer(push) }

    /// Each message published, or refused by the connection.
    public var health: DeliveryHealth? { core.record.current }

    /// With Home Assistant's discovery, the widgets' energy and money sensors.
    public var takesAccounts: Bool { settings.homeAssistant != nil }

    /// A flow widget's accounts and money: published in the widget's sensors topic, on the sink's
    /// queue.
    public func take(accounts: WidgetAccounts) {
        guard takesAccounts else { return }
        core.later { $0.accounts(accounts) }
    }

    /// The broker connection is (again) up: stale retained topics go, the discovery configs and
    /// every widget's current content are published.
    public func connected() {
        core.later { $0.connected() } report: { messages, log in
            let removed = messages.filter(\.isRemoval).map(\.topic)
            if !removed.isEmpty {
                log(Diagnostic(.info, "mqtt: removed \(removed.count) retained topic\(removed.count == 1 ? "" : "s") the config no longer publishes: \(removed.joined(separator: ", "))"))
            }
        }
    }

    /// Takes a message the daemon's connection received on one of `subscriptions` (Home
    /// Assistant's status); false for any other topic, which is the engine's. A retained `online`
    /// is the one the broker keeps, not a start: the connect has announced already.
    public func receive(topic: String, payload: [UInt8], retained: Bool) -> Bool {
        guard let homeAssistant = settings.homeAssistant, topic == homeAssistant.statusTopic else { return false }
        guard !retained, payload.elementsEqual("online".utf8) else { return true }
        let core = core
        guard let delay = core.reannounce.withLock({ $0.ask(at: .now) }) else { return true }
        core.later(after: delay) { publication in
            core.reannounce.withLock { $0.go(at: .now) }
            return publication.homeAssistantOnline()
        } report: { messages, log in
            let announced = messages.filter { $0.topic.hasSuffix("/config") }.count
            let more = core.reannounce.withLock { $0.answered }
            let also = more > 0 ? " (\(more) more `online` came meanwhile; one re-announce a second at most)" : ""
            log(Diagnostic(.info, "mqtt: Home Assistant is online: announced its \(announced) sensors again\(also)"))
        }
        return true
    }

    /// A reloaded config: sensors of removed or renamed nodes, and removed widgets, are removed.
    public func reconfigure(_ flow: FlowConfig) {
        core.later { $0.reconfigure(flow) } report: { messages, log in
            let removed = messages.filter(\.isRemoval).map(\.topic)
            if !removed.isEmpty {
                log(Diagnostic(.info, "mqtt: removed \(removed.count) retained topic\(removed.count == 1 ? "" : "s") the reloaded config no longer publishes: \(removed.joined(separator: ", "))"))
            }
        }
    }

    /// Publishes what is still queued, up to `timeout`; nothing is published after.
    @discardableResult
    public func stop(timeout: Duration) -> Bool {
        let delivered = outbox.stop(timeout: timeout)
        return core.stop(timeout: timeout) && delivered
    }

    public var savedState: JSONValue? { core.saved.withLock { $0 } }

    public func restore(_ saved: JSONValue) {
        core.run { publication in
            publication.restore(saved)
            return []
        }
    }
}

/// What the outbox's thread and the sink's queue share: the publication under one lock, the
/// connection and the log.
private final class Core: Sendable {
    let publication: Mutex<MQTTPublication>
    /// `publication.saved` as of the last change: the state file reads it without waiting for a
    /// publish in progress.
    let saved: Mutex<JSONValue?>
    let connection: any MQTTPublishing
    let log: @Sendable (Diagnostic) -> Void
    let record = DeliveryRecord()
    let queue = DispatchQueue(label: "flowbridge.sink.mqtt.events")
    let reannounce = Mutex(MQTTSink.Reannounce())
    private let stopped = Atomic(false)
    /// Failed publishes on a live connection are said once a minute.
    private let lastFailureReport = Mutex<ContinuousClock.Instant?>(nil)

    init(publication: MQTTPublication, connection: any MQTTPublishing, log: @escaping @Sendable (Diagnostic) -> Void) {
        self.publication = Mutex(publication)
        saved = Mutex(publication.retainedTopics.isEmpty ? nil : publication.saved)
        self.connection = connection
        self.log = log
    }

    /// Runs `step` on the sink's queue (`after` a delay), then `report` with the messages it made.
    func later(
        after delay: Duration = .zero,
        _ step: @escaping @Sendable (inout MQTTPublication) -> [MQTTPublication.Message],
        report: @escaping @Sendable ([MQTTPublication.Message], @Sendable (Diagnostic) -> Void) -> Void = { _, _ in }
    ) {
        let work: @Sendable () -> Void = {
            let messages = self.run(step)
            if !messages.isEmpty { report(messages, self.log) }
        }
        guard delay > .zero else { return queue.async(execute: work) }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay / .nanoseconds(1))), execute: work)
    }

    /// Makes the messages and publishes them in order, under the lock; returns the ones published.
    @discardableResult
    func run(_ step: (inout MQTTPublication) -> [MQTTPublication.Message]) -> [MQTTPublication.Message] {
        guard !stopped.load(ordering: .acquiring) else { return [] }
        return publication.withLock { publication in
            var published: [MQTTPublication.Message] = []
            for message in step(&publication) {
                do {
                    try connection.publish(topic: message.topic, payload: message.payload, qos: message.qos, retain: message.retain)
                    publication.published(message)
                    published.append(message)
                    record.record(.delivered)
                } catch {
                    record.record(.failed, detail: "\(error)")
                    failed(error)
                }
            }
            let state = publication.saved
            saved.withLock { $0 = publication.retainedTopics.isEmpty ? nil : state }
            return published
        }
    }

    /// A publish the connection refused. While it is down that is expected (the connect publishes
    /// the current truth); on a live connection it is said, once a minute.
    private func failed(_ error: any Error) {
        guard connection.isConnected else { return }
        let now = ContinuousClock.now
        let due = lastFailureReport.withLock { last in
            guard last.map({ now - $0 >= .seconds(60) }) ?? true else { return false }
            last = now
            return true
        }
        if due { log(Diagnostic(.warning, "mqtt: \(error)")) }
    }

    /// Lets the events queued before it run, up to `timeout`; nothing is published after.
    func stop(timeout: Duration) -> Bool {
        // On the monotonic clock (see `Wakeup`): a wall clock stepped back must not hold the stop.
        let done = Wakeup()
        queue.async {
            self.stopped.store(true, ordering: .releasing)
            done.signal()
        }
        let finished = done.wait(until: Wakeup.now() + Wakeup.nanoseconds(timeout))
        stopped.store(true, ordering: .releasing)
        return finished
    }
}
