import Configuration
import Delivery
import Platform
import FoundationEssentials

/// SIGHUP: a new config takes over the engine (the day carries over), the topics and the Victron
/// keepalives, and the sinks learn its widgets; a broken one changes nothing. The broker
/// connection, the state file, the time zone, `push:` and `output:` stay as started: the log names
/// those that changed.
struct ConfigReload: Sendable {
    let configPath: String
    let context: ConfigContext
    let bridge: Bridge
    let connection: BrokerConnection
    let log: Logger

    func reload() {
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
            for diagnostic in try bridge.replaceEngine(config: fresh, at: bridge.time.now()) { log.log(diagnostic.level, "reload: \(diagnostic.message)") }
        } catch {
            log.log(.error, "reload: cannot carry the day over (\(error)); the running config stays")
            return
        }
        // The MQTT sink's widgets and nodes are the sensors Home Assistant has.
        for sink in connection.sinks { sink.reconfigure(fresh.flow) }
        connection.resubscribe(for: fresh)
        log.log(.info, "reload: \(configPath) loaded")
    }
}
