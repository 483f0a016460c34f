import Configuration
import Delivery
import FlowCore
import FoundationEssentials
import Glibc
import Mosquitto
import Persistence
import Platform
import Window

/// `flowbridge run`: the daemon. It subscribes to every source's topic, feeds the engine with the
/// wall clock, ticks it every second (staleness, trailing pushes, midnight, state saves), and
/// shuts down gracefully on SIGTERM/SIGINT: sinks flushed, state written, `offline` published,
/// exit 0. A second signal exits at once (one within a second of the first is the same stop). SIGHUP reloads the config; a broken one is reported and
/// the old one runs on. Its parts run as a `ServiceGroup` (see `services` for their order).
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
    /// The wall clock, or the simulated home's (`--speed`, `--origin`).
    var time = DaemonTime.wall

    package init(configPath: String, dryRun: Bool, summary: Bool = false, stateOverride: String?, log: Logger, time: DaemonTime = .wall) {
        self.configPath = configPath
        self.dryRun = dryRun
        self.summary = summary
        self.stateOverride = stateOverride
        self.log = log
        self.time = time
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
        let store = StateStore(path: context.statePath(configured: config.stateFile))
        // One owner per state, for as long as this process runs; a dry run only reads it.
        var lock: StateLock?
        defer { withExtendedLifetime(lock) {} }
        do {
            if !dryRun { lock = try own(store) }
            let group = ServiceGroup(log: log)
            try await group.run(try services(config: config, store: store, context: context, signals: signals, group: group))
        } catch {
            let failure = error as? RunFailure ?? RunFailure(status: .failure, message: "\(error)")
            log.log(.error, failure.message)
            return failure.status
        }
        if dryRun {
            log.log(.info, "stopped (dry run: nothing delivered, no state written)")
        } else {
            log.log(.info, "stopped; state written to \(store.path)")
        }
        return .success
    }

    /// Takes the state for this process: nil when it cannot be locked (said: the state cannot be
    /// written either); throws when another flowbridge has it.
    private func own(_ store: StateStore) throws(RunFailure) -> StateLock? {
        store.prepareFolder(log: log)
        do { return try StateLock(statePath: store.path) } catch {
            if case .held = error { throw RunFailure(status: .stateInUse, message: "\(error)") }
            log.log(.warning, "\(error); the state cannot be written either")
            return nil
        }
    }

    /// Makes the parts and puts them in their start order. Each stops once the one after it has
    /// stopped, so the stop runs from the bottom of the list to its top.
    private func services(
        config: DaemonConfig, store: StateStore, context: ConfigContext, signals: SignalEvents, group: ServiceGroup
    ) throws(RunFailure) -> [any Service] {
        let zone = config.zone
        let address = "\(config.mqtt.host):\(config.mqtt.port)"
        // The one broker connection: the sources' topics, flowbridge's status, the MQTT sink.
        let client: MQTTClient
        do {
            client = try MQTTClient(options: config.mqtt.options(dryRun: dryRun), subscriptions: Self.subscriptions(of: config), qos: .atLeastOnce)
        } catch { throw .mqttClient(error) }
        let sinks: [any Sink]
        do {
            sinks = try SinkSelection.make(config: config, dryRun: dryRun, summary: summary, zone: zone, client: client, log: log)
        } catch { throw RunFailure(status: .config, message: "cannot start delivering: \(error)") }
        let bridge: Bridge
        do {
            var restored = try Bridge.engine(
                for: config, zone: zone, store: store, access: dryRun ? .readOnly : .owner, configPath: configPath, sinks: sinks, log: log)
            BookTotals.seed(
                &restored.engine, lifetime: &restored.lifetime, bookPath: context.bookPath(configured: config.bookFile, statePath: store.path),
                queue: restored.book, zone: zone, now: Date())
            bridge = Bridge(
                engine: restored.engine, lifetime: restored.lifetime, config: config, zone: zone, sinks: sinks, store: dryRun ? nil : store,
                book: restored.book, log: log, time: time)
        } catch { throw RunFailure(status: .config, message: "\(error)") }
        let status = StatusReporter(ServiceStatus(address: address, sourceCount: config.flow.sources.count), notifier: SystemdNotifier())
        let clock: Heartbeat
        do { clock = try Heartbeat() } catch { throw RunFailure(status: .failure, message: "cannot make the clock's alarm: \(error)") }
        let connection: BrokerConnection
        do {
            connection = try BrokerConnection(
                client: client, address: address, bridge: bridge, sinks: sinks, statusTopic: dryRun ? nil : config.mqtt.statusTopic,
                status: status, clock: clock, log: log)
        } catch { throw .mqttClient(error) }
        let reload = ConfigReload(configPath: configPath, context: context, bridge: bridge, connection: connection, log: log)
        if dryRun {
            log.log(.info, "dry run: nothing is delivered or published, and \(store.path) is only read")
        }
        if time.speed != 1 {
            log.log(.info, "the clock runs at \(JSONValue.format(time.speed))x from \(RFC3339.format(time.origin)): a simulated home's, not the wall clock")
        }
        log.log(.info, "flowbridge \(Flowbridge.version) started: \(config.flow.sources.count) sources, broker \(address), day in \(zone.identifier), state \(store.path), day book \(context.bookPath(configured: config.bookFile, statePath: store.path))")
        // Started from the top, stopped from the bottom:
        // - the signals first, so that a second signal is heard until the very end;
        // - the clock: one thread whose beat each second is the engine's clock's, the day book's and
        //   the window's, each from its part's start to its stop (taken by the readings while they
        //   come: the connection's batches);
        // - the systemd status: ready (configured, the state loaded) before the connection's
        //   events update it, whether or not the broker answers;
        // - the connection: connects and subscribes; stopped last, with `offline` as its final message;
        // - the state: written at the stop, with what the sinks keep once they are done and what
        //   still waits for the day book;
        // - the day book: writes closed slots and days as they come; at the stop, the last ones;
        // - each sink: delivers what it still holds within 300 ms, in the order they were made;
        // - the engine's clock: a tick on each beat; at the stop a last one, whose pushes the sinks take;
        // - the intake: stopped first, so that no message is taken while the others stop;
        // - the window, when asked for: started once everything it shows runs, stopped before it.
        let sinkServices = sinks.reversed().map { sink in
            StartStopService(name: sink.name, stop: { [log] in
                if !sink.stop(timeout: .milliseconds(300)) { log.log(.warning, "sink \(sink.name) did not take its last pushes in time") }
            })
        }
        let bookPath = context.bookPath(configured: config.bookFile, statePath: store.path)
        let bookServices: [any Service] = dryRun ? [] : [BookWriter(path: bookPath, clock: clock, bridge: bridge, log: log)]
        return [
            SignalHandling(
                signals: signals, reload: reload.reload, stop: group.stop, status: status, statePath: dryRun ? nil : store.path, log: log),
            clock,
            StartStopService(name: "systemd status", start: status.ready),
            connection,
            StartStopService(name: "state", stop: {
                guard bridge.flush(at: bridge.time.now()) else {
                    throw RunFailure(
                        status: .cannotCreate,
                        message: "stopped; the state could not be written to \(store.path) (see above): the day since the last save is lost")
                }
            }),
        ] + bookServices + sinkServices + [
            EngineClock(clock: clock, bridge: bridge, status: status, messages: connection.messages),
            StartStopService(name: "message intake", stop: connection.stopTakingMessages),
        ] + (config.window.map { settings in
            // The page's days and months: the first flow widget's, from the book.
            let periods = config.flow.widgets.first.map { BookPeriods(path: bookPath, widget: $0.name) }
            let window = Window(settings: settings, periods: periods, log: log) { [status] in bridge.windowSnapshot(at: bridge.time.now(), status: status.status) }
            return [WindowService(clock: clock, window: window, log: log)]
        } ?? [])
    }

    /// Every source's topic filter, once.
    package static func subscriptions(of config: DaemonConfig) -> [String] {
        var seen: Set<String> = []
        return config.flow.sources.map(\.topic.description).filter { seen.insert($0).inserted }
    }
}

/// Why `run` ends with a failure: the exit status, and what the log says.
struct RunFailure: Error {
    var status: ExitStatus
    var message: String

    /// The client refused its options or topics, or its thread did not start.
    static func mqttClient(_ error: any Error) -> RunFailure {
        RunFailure(status: .config, message: "cannot start the MQTT client: \(error)")
    }
}
