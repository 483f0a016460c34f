import Delivery
import FlowCore
import Mosquitto

/// The sinks `run` hands its pushes to, as the config says: each widget's `push:` (the widget
/// HTTP API) and `output:` (standard output, MQTT). `--dry-run` prints to standard output and
/// delivers and publishes nothing. Each sink has its own thread and queue, so one that fails never
/// stops another.
enum SinkSelection {
    /// Makes the sinks and says in the log where pushes go (the tokens were read with the config).
    /// The MQTT sink publishes through `client`, the daemon's one broker connection. Throws when
    /// libcurl does not start.
    static func make(config: DaemonConfig, dryRun: Bool, zone: any LocalTimeZone, client: MQTTClient, log: Logger) throws -> [any Sink] {
        func stdout() -> StdoutSink { StdoutSink(zone: zone, log: { [log] in log.log($0) }) }
        if dryRun {
            let skipped = config.pushes.map { "push:\($0.widget)" } + (config.output.mqtt == nil ? [] : ["output.mqtt"])
            log.log(.info, "dry run: pushes go to standard output" + (skipped.isEmpty ? "" : "; \(skipped.joined(separator: ", ")) gets nothing"))
            return [stdout()]
        }
        var sinks: [any Sink] = config.output.stdout ? [stdout()] : []
        if let settings = config.output.mqtt {
            sinks.append(MQTTSink(settings: settings, flow: config.flow, software: Commands.version, connection: client, log: { [log] in log.log($0) }))
        }
        for push in config.pushes {
            sinks.append(try WidgetAPISink(widget: push.widget, settings: push.api, token: push.token?.value, log: { [log] in log.log($0) }))
        }
        if sinks.isEmpty {
            log.log(.warning, "no sink configured: pushes are computed but go nowhere (add push: to a widget, or output: {stdout: true} or {mqtt: true})")
        } else {
            let names = sinks.map { sink in
                switch sink {
                case let api as WidgetAPISink: "\(api.name) (\(api.settings.displayURL))"
                case let mqtt as MQTTSink: "mqtt (\(mqtt.settings.prefix)/<widget>/content\(mqtt.settings.homeAssistant == nil ? "" : ", Home Assistant discovery"))"
                default: sink.name
                }
            }
            log.log(.info, "pushes go to \(names.joined(separator: ", "))")
        }
        return sinks
    }
}

/// The daemon's connection is the MQTT sink's: one client subscribes, publishes the status and its
/// last will, and carries the widgets' topics.
extension MQTTClient: MQTTPublishing {}
