import Configuration
import FlowCore
import FoundationEssentials
import Mosquitto
import Persistence
import Platform
import Runtime
import Synchronization

/// `flowbridge check --config FILE --listen 60s`: the config checked as `check` does, then the
/// broker watched for a while with the daemon's own connection (its MQTT settings, credentials and
/// Victron keepalives; a client ID of its own and no last will, so the service is not disturbed),
/// and a report of every source and of the signs.
struct ListenCheck {
    let configPath: String
    let stateOverride: String?
    let seconds: Double
    let log: Logger


    func run() async -> ExitStatus {
        let context = ConfigContext.process(stateOverride: stateOverride, readsPushTokens: false)
        guard let config = DaemonConfig.loadReporting(configPath, context: context) else { return .config }
        let zone = config.zone
        let broker = "\(config.mqtt.host):\(config.mqtt.port)"
        let client: MQTTClient
        do {
            client = try MQTTClient(options: config.mqtt.options(dryRun: true), subscriptions: Daemon.subscriptions(of: config), qos: .atLeastOnce)
        } catch {
            log.log(.error, "cannot start the MQTT client: \(error)")
            return .config
        }
        print("config OK: \(ConfigSummary.counts(config)); listening \(JSONValue.format(seconds)) s to \(broker)")
        let report = Mutex(ListenReport(config: config, zone: zone))
        let own = OwnMessages(client: client, log: log)
        let log = log
        let keepalives = config.keepalives
        let outcome = await TimedListen(client: client, seconds: seconds, log: log).run(
            connected: { own.sendKeepalives(keepalives) },
            message: { message, now in
                let diagnostics = report.withLock {
                    $0.receive(topic: message.topic, payload: message.payload, retained: message.retained && message.messageExpirySeconds == nil, at: now)
                }
                diagnostics.forEach(log.log)
            },
            tick: { second, now in
                report.withLock { $0.tick(at: now) }.forEach(log.log)
                own.sendKeepalives(keepalives, atSecond: second)
            })
        return report.withLock { report in
            // Topics, payloads and decoded strings are the broker's text: each line escaped.
            let lines = report.text(broker: broker, seconds: seconds, connection: outcome, at: Date()).split(separator: "\n", omittingEmptySubsequences: false)
            print(lines.map { PrintableText.escaped(String($0)) }.joined(separator: "\n"), terminator: "")
            if !outcome.connected || !report.silentSources.isEmpty { return .failure }
            return report.wrongSigns.isEmpty ? .success : .wrongSign
        }
    }
}
