import Configuration
import Delivery
import Dispatch
import FlowCore
import FoundationEssentials
import Glibc
import Mosquitto
import Persistence
import Platform
import Synchronization

/// `flowbridge run`: the daemon. It subscribes to every source's topic, feeds the engine with the
/// wall clock, ticks it every second (staleness, trailing pushes, midnight, state saves), and
/// shuts down gracefully on SIGTERM/SIGINT: state flushed, `offline` published, exit 0. A second
/// signal exits at once. SIGHUP reloads the config; a broken one is reported and the old one runs on.
package struct Daemon {
    let configPath: String
    /// Read the config and the state, connect and compute, print the pushes; deliver nothing,
    /// publish nothing, write no state: safe beside the running service.
    let dryRun: Bool
    /// `--summary`: standard output says each push in words too, under its NDJSON line.
    var summary = false
    /// `--state FILE`: the state file instead of `state_file` or the default place.
    let stateOverride: String?
    let log: Logger

    package init(configPath: String, dryRun: Bool, summary: Bool = false, stateOverride: String?, log: Logger) {
        self.configPath = configPath
        self.dryRun = dryRun
        self.summary = summary
        self.stateOverride = stateOverride
        self.log = log
    }

    package func run() async -> ExitStatus {
        // A reader of standard output that goes away is reported (StdoutSink), not a reason to die.
        signal(SIGPIPE, SIG_IGN)
        // Taken over first: a stop asked for while the daemon starts (a slow machine, a broker that
        // is down) waits in the stream and is a graceful stop once the daemon runs, never the
        // default action's kill.
        let signals = SignalEvents([SIGTERM, SIGINT, SIGHUP])
        let context = ConfigContext.process(stateOverride: stateOverride)
        guard let config = DaemonConfig.loadReporting(configPath, context: context) else { return .config }
        let zone = config.zone
        let store = StateStore(path: context.statePath(configured: config.stateFile))
        // One owner per state, for as long as this process runs; a dry run only reads it.
        var lock: StateLock?
        defer { withExtendedLifetime(lock) {} }
        if !dryRun {
            store.prepareFolder(log: log)
            do { lock = try StateLock(statePath: store.path) } catch {
                if case .held = error {
                    log.log(.error, "\(error)")
                    return .stateInUse
                }
                log.log(.warning, "\(error); the state cannot be written either")
            }
        }
        // The one broker connection: the sources' topics, flowbridge's status, the MQTT sink.
        let client: MQTTClient
        do {
            client = try MQTTClient(options: config.mqtt.options(dryRun: dryRun), subscriptions: topics(of: config), qos: .atLeastOnce)
        } catch {
            log.log(.error, "cannot start the MQTT client: \(error)")
            return .config
        }
        let sinks: [any Sink]
        do {
            sinks = try SinkSelection.make(config: config, dryRun: dryRun, summary: summary, zone: zone, client: client, log: log)
        } catch {
            log.log(.error, "cannot start delivering: \(error)")
            return .config
        }
        let mqttSink = sinks.lazy.compactMap { $0 as? MQTTSink }.first
        let engine: FlowEngine
        do {
            engine = try Bridge.engine(
                for: config, zone: zone, store: store, access: dryRun ? .readOnly : .owner, configPath: configPath, sinks: sinks,
                log: log)
        } catch {
            log.log(.error, "\(error)")
            return .config
        }
        let bridge = Bridge(engine: engine, config: config, zone: zone, sinks: sinks, store: dryRun ? nil : store, log: log)
        let broker = "\(config.mqtt.host):\(config.mqtt.port)"
        let messages = OwnMessages(client: client, log: log)
        let notifier = SystemdNotifier()
        let status = StatusReporter(ServiceStatus(address: broker, sourceCount: config.flow.sources.count), notifier: notifier)
        if dryRun {
            log.log(.info, "dry run: nothing is delivered or published, and \(store.path) is only read")
        }
        log.log(.info, "flowbridge \(Flowbridge.version) started: \(config.flow.sources.count) sources, broker \(broker), day in \(zone.identifier), state \(store.path)")
        // Configured and state loaded: ready, whether or not the broker answers yet. Said before
        // the client starts, whose events update the status from its own thread.
        status.ready()
        // MQTT events, in order, on the client's network thread: the bridge never waits (sinks only
        // queue), so each message is taken where it arrives, with no hop to another thread.
        do {
            try client.start { event in
                switch event {
                case .message(let message):
                    // Home Assistant's status is the MQTT sink's, never a reading.
                    if let mqttSink, mqttSink.receive(topic: message.topic, payload: message.payload, retained: message.retained) { return }
                    bridge.receive(message, at: Date())
                case .connected:
                    log.log(.info, "connected to \(broker), subscribed to \(client.subscriptions.count) topics")
                    status.update { $0.broker = .connected }
                    if !dryRun { messages.publish(topic: config.mqtt.statusTopic, payload: "online", qos: .atLeastOnce, retain: true) }
                    // What the broker may have lost meanwhile: the widgets' content, the discovery.
                    mqttSink?.connected()
                    // Venus OS publishes nothing until asked: ask at once, not after an interval.
                    for keepalive in bridge.config.keepalives { messages.publish(topic: keepalive.topic) }
                    // From the first subscription on, a source that never reports is said.
                    bridge.subscribed(at: Date())
                case .disconnected(let reason):
                    log.log(.warning, "broker connection: \(reason); reconnecting")
                    status.update { $0.broker = .waiting(cause: client.lastError?.cause ?? reason) }
                }
            }
        } catch {
            log.log(.error, "cannot start the MQTT client: \(error)")
            return .config
        }

        await withTaskGroup(of: Void.self) { group in
            // The clock: deadlines, state saves, the watchdog, Victron keepalives, the status line.
            group.addTask {
                var second = 0
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    bridge.tick(at: Date())
                    second += 1
                    if notifier.watchdogInterval != nil { notifier.notify("WATCHDOG=1") }
                    for keepalive in bridge.config.keepalives where second % max(1, Int(keepalive.intervalSeconds)) == 0 {
                        messages.publish(topic: keepalive.topic)
                    }
                    let silent = bridge.silentSources
                    status.update { $0.silentSources = silent }
                }
            }
            // Signals: the first TERM/INT stops gracefully, a second one at once; HUP reloads.
            var stopping = false
            for await signal in signals.stream {
                if signal == SIGHUP {
                    reload(bridge, client: client, mqttSink: mqttSink, context: context)
                    continue
                }
                if stopping {
                    log.log(.warning, "second signal \(signal): exiting at once")
                    exit(ExitStatus.failure.rawValue)
                }
                stopping = true
                log.log(.info, "signal \(signal): stopping")
                notifier.notify("STOPPING=1")
                // Stop in the background so that a second signal is still heard meanwhile.
                group.addTask {
                    bridge.flush(at: Date())
                    // The sinks first: the MQTT sink publishes its last pushes through the client.
                    for sink in sinks where !sink.stop(timeout: .milliseconds(300)) {
                        log.log(.warning, "sink \(sink.name) did not take its last pushes in time")
                    }
                    client.stop(finalMessage: dryRun ? nil : (topic: config.mqtt.statusTopic, payload: Array("offline".utf8), retain: true))
                    signals.finish()
                }
            }
            group.cancelAll()
        }
        if dryRun {
            log.log(.info, "stopped (dry run: nothing delivered, no state written)")
            return .success
        }
        guard bridge.flush(at: Date()) else {
            log.log(.error, "stopped; the state could not be written to \(store.path) (see above): the day since the last save is lost")
            return .cannotCreate
        }
        log.log(.info, "stopped; state written to \(store.path)")
        return .success
    }

    /// Every source's topic filter, once.
    package static func subscriptions(of config: DaemonConfig) -> [String] {
        var seen: Set<String> = []
        return config.flow.sources.map(\.topic.description).filter { seen.insert($0).inserted }
    }

    /// What `run` subscribes to: the sources' topics, and Home Assistant's status for the MQTT
    /// sink (not in a dry run, which has none).
    func topics(of config: DaemonConfig) -> [String] {
        let sources = Self.subscriptions(of: config)
        let sink = dryRun ? [] : config.output.mqtt?.subscriptions ?? []
        return sources + sink.filter { !sources.contains($0) }
    }

    /// SIGHUP: a new config takes over the engine (the day carries over), the topics and the
    /// Victron keepalives; a broken one changes nothing. The broker connection, the state file
    /// and the time zone stay as started: the log names those that changed.
    func reload(_ bridge: Bridge, client: MQTTClient, mqttSink: MQTTSink?, context: ConfigContext) {
        guard var fresh = DaemonConfig.loadReporting(configPath, context: context) else {
            log.log(.error, "reload: \(configPath) is broken (see above); the running config stays")
            return
        }
        let running = bridge.config
        let pending = [
            ("broker settings", fresh.mqtt != running.mqtt), ("state_file", fresh.stateFile != running.stateFile),
            ("timezone", fresh.timezone != running.timezone), ("push", fresh.pushes != running.pushes),
            ("output", fresh.output != running.output),
        ].filter(\.1).map(\.0)
        if !pending.isEmpty {
            log.log(.warning, "reload: \(pending.joined(separator: ", ")) changed; that takes effect at the next restart")
        }
        // What waits for a restart stays as it runs, so the next reload compares with what runs.
        fresh.mqtt = running.mqtt
        fresh.stateFile = running.stateFile
        fresh.timezone = running.timezone
        fresh.pushes = running.pushes
        fresh.output = running.output
        do {
            for diagnostic in try bridge.replaceEngine(config: fresh) { log.log(diagnostic.level, "reload: \(diagnostic.message)") }
        } catch {
            log.log(.error, "reload: cannot carry the day over (\(error)); the running config stays")
            return
        }
        // Its widgets and nodes are the sensors Home Assistant has.
        mqttSink?.reconfigure(fresh.flow)
        let old = client.subscriptions
        let wanted = topics(of: fresh)
        if wanted != old {
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
        log.log(.info, "reload: \(configPath) loaded")
    }
}

/// flowbridge's own messages on the broker (its status, Victron keepalives). A publish that fails
/// is logged, once a minute per topic, never swallowed.
package final class OwnMessages: Sendable {
    let client: MQTTClient
    let log: Logger
    private let throttle = Mutex(LogThrottle())

    package init(client: MQTTClient, log: Logger) {
        self.client = client
        self.log = log
    }

    func publish(topic: String, payload: String = "", qos: QoS = .atMostOnce, retain: Bool = false) {
        do {
            try client.publish(topic: topic, payload: Array(payload.utf8), qos: qos, retain: retain)
            throttle.withLock { $0.clear(topic) }
        } catch {
            if throttle.withLock({ $0.allows(topic, at: Date()) }) { log.log(.warning, "\(error)") }
        }
    }
}

/// Unix signals as an async sequence (Dispatch sources; the default actions are switched off).
package final class SignalEvents: @unchecked Sendable {
    package let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation
    /// Kept alive for as long as signals are wanted; set once in init, never mutated (hence unchecked).
    private let sources: [DispatchSourceSignal]

    /// Ends the sequence (the daemon has stopped).
    package func finish() { continuation.finish() }

    package init(_ numbers: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        self.continuation = continuation
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }
}
