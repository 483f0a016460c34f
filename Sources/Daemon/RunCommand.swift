import Delivery
import Dispatch
import FlowCore
import FoundationEssentials
import Glibc
import Mosquitto

/// `flowbridge run`: the daemon. It subscribes to every source's topic, feeds the engine with the
/// wall clock, ticks it every second (staleness, trailing pushes, midnight, state saves), and
/// shuts down gracefully on SIGTERM/SIGINT: state flushed, `offline` published, exit 0. A second
/// signal exits at once. SIGHUP reloads the config; a broken one is reported and the old one runs on.
struct RunCommand {
    let configPath: String
    /// Print the patches on standard output instead of delivering them.
    let dryRun: Bool
    let log: Logger

    func run() async -> Int32 {
        // A reader of standard output that goes away is reported (StdoutSink), not a reason to die.
        signal(SIGPIPE, SIG_IGN)
        guard var config = Commands.loadConfig(configPath) else { return Commands.configError }
        let zone = Commands.zone(of: config)
        let store = StateStore(path: config.stateFile ?? StateStore.defaultPath())
        let sinks: [any Sink]
        do {
            sinks = try SinkSelection.make(config: config, configFile: configPath, dryRun: dryRun, zone: zone, log: log)
        } catch {
            log.log(.error, "cannot start delivering: \(error)")
            return Commands.configError
        }
        let bridge = Bridge(
            engine: Bridge.engine(for: config, zone: zone, store: store, sinks: sinks, log: log), zone: zone, sinks: sinks,
            store: store, log: log)
        let client: MQTTClient
        do {
            client = try MQTTClient(options: try mqttOptions(config.mqtt), subscriptions: subscriptions(of: config), qos: 1)
            try client.start()
        } catch {
            log.log(.error, "cannot start the MQTT client: \(error)")
            return Commands.configError
        }
        let status = "\(config.mqtt.topicPrefix)/status"
        let notifier = SystemdNotifier()
        let signals = SignalEvents([SIGTERM, SIGINT, SIGHUP])
        log.log(.info, "flowbridge started: \(config.flow.sources.count) sources, broker \(config.mqtt.host):\(config.mqtt.port), day in \(zone.identifier)")

        let started = config  // what the tasks read; a reload only swaps the engine
        await withTaskGroup(of: Void.self) { group in
            // MQTT events, in order; awaiting each keeps the client's bounded buffer meaningful.
            group.addTask {
                var ready = false
                var events = client.events.makeAsyncIterator()
                while let event = await events.next() {
                    switch event {
                    case .message(let message):
                        bridge.receive(message, at: Date())
                    case .connected:
                        log.log(.info, "connected to \(started.mqtt.host):\(started.mqtt.port), subscribed to \(client.subscriptions.count) topics")
                        try? client.publish(topic: status, payload: Array("online".utf8), qos: 1, retain: true)
                        // Venus OS publishes nothing until asked: ask at once, not after an interval.
                        for keepalive in started.keepalives { try? client.publish(topic: keepalive.topic, payload: []) }
                        if !ready {
                            notifier.notify("READY=1\nSTATUS=connected")
                            ready = true
                        }
                    case .disconnected(let reason):
                        log.log(.warning, "broker connection: \(reason); reconnecting")
                    }
                }
            }
            // The clock: deadlines, state saves, the watchdog, Victron keepalives.
            group.addTask {
                var second = 0
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    bridge.tick(at: Date())
                    second += 1
                    if notifier.watchdogInterval != nil { notifier.notify("WATCHDOG=1") }
                    for keepalive in started.keepalives where second % max(1, Int(keepalive.intervalSeconds)) == 0 {
                        try? client.publish(topic: keepalive.topic, payload: [])
                    }
                }
            }
            // Signals: the first TERM/INT stops gracefully, a second one at once; HUP reloads.
            var stopping = false
            for await signal in signals.stream {
                if signal == SIGHUP {
                    reload(into: bridge, current: &config)
                    continue
                }
                if stopping {
                    log.log(.warning, "second signal \(signal): exiting at once")
                    exit(1)
                }
                stopping = true
                log.log(.info, "signal \(signal): stopping")
                notifier.notify("STOPPING=1")
                // Stop in the background so that a second signal is still heard meanwhile.
                group.addTask {
                    bridge.flush(at: Date())
                    client.stop(finalMessage: (topic: status, payload: Array("offline".utf8), retain: true))
                    for sink in sinks where !sink.stop(timeout: .milliseconds(300)) {
                        log.log(.warning, "sink \(sink.name) did not take its last pushes in time")
                    }
                    signals.finish()
                }
            }
            group.cancelAll()
        }
        if bridge.flush(at: Date()) {
            log.log(.info, "stopped; state written to \(store.path)")
        } else {
            log.log(.error, "stopped; the state could not be written to \(store.path) (see above)")
        }
        return 0
    }

    /// Every source's topic filter, once.
    func subscriptions(of config: DaemonConfig) -> [String] {
        var seen: Set<String> = []
        return config.flow.sources.map(\.topic.description).filter { seen.insert($0).inserted }
    }

    func mqttOptions(_ settings: MQTTSettings) throws -> MQTTOptions {
        MQTTOptions(
            host: settings.host, port: settings.port, clientID: settings.clientID, keepaliveSeconds: settings.keepaliveSeconds,
            username: settings.username, password: try password(settings),
            tls: settings.tls.map { TLSOptions(caFile: $0.caFile, certFile: $0.certFile, keyFile: $0.keyFile, insecure: $0.insecure) },
            protocolVersion: settings.mqtt5 ? .v5 : .v311,
            will: Will(topic: "\(settings.topicPrefix)/status", payload: Array("offline".utf8), qos: 1, retain: true))
    }

    /// The broker password from its file (a systemd credential) or environment variable.
    func password(_ settings: MQTTSettings) throws -> String? {
        try Credential.read(file: settings.passwordFile, variable: settings.passwordEnv, key: "mqtt.password", configFile: configPath)
    }

    /// SIGHUP: a new config takes over the engine (the day carries over); a broken one changes nothing.
    func reload(into bridge: Bridge, current config: inout DaemonConfig) {
        guard let fresh = Commands.loadConfig(configPath) else {
            log.log(.error, "reload: \(configPath) is broken (see above); the running config stays")
            return
        }
        // What the running daemon was started with stays until a restart: say which of it changed.
        let pending = [
            ("broker settings", fresh.mqtt != config.mqtt), ("topics", subscriptions(of: fresh) != subscriptions(of: config)),
            ("keepalive", fresh.keepalives != config.keepalives), ("state_file", fresh.stateFile != config.stateFile),
            ("timezone", fresh.timezone != config.timezone), ("push", fresh.pushes != config.pushes),
            ("output", fresh.output != config.output),
        ].filter(\.1).map(\.0)
        if !pending.isEmpty {
            log.log(.warning, "reload: \(pending.joined(separator: ", ")) changed; that takes effect at the next restart")
        }
        do {
            try bridge.replaceEngine(config: fresh, zone: Commands.zone(of: config))
            config = fresh
            log.log(.info, "reload: \(configPath) loaded")
        } catch {
            log.log(.error, "reload: cannot carry the day over (\(error)); the running config stays")
        }
    }
}

/// Unix signals as an async sequence (Dispatch sources; the default actions are switched off).
final class SignalEvents: @unchecked Sendable {
    let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation
    /// Kept alive for as long as signals are wanted; set once in init, never mutated (hence unchecked).
    private let sources: [DispatchSourceSignal]

    /// Ends the sequence (the daemon has stopped).
    func finish() { continuation.finish() }

    init(_ numbers: [Int32]) {
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
