import Configuration
import Delivery
import FlowCore
import Mosquitto
import Persistence
import Platform
import Rendering

/// The sinks `run` hands its pushes to, as the config says: each widget's `push:` (the widget
/// HTTP API) and `output:` (standard output, MQTT). `--dry-run` prints to standard output and
/// delivers and publishes nothing. Each sink has its own thread and queue, so one that fails never
/// stops another. `summary` (`run --summary`) has standard output say each push in words too
/// (`PushSummary`).
enum SinkSelection {
    /// Makes the sinks and says in the log where pushes go (the tokens were read with the config).
    /// The MQTT sink publishes through `client`, the daemon's one broker connection. Throws when
    /// libcurl or a sink's thread does not start.
    static func make(
        config: DaemonConfig, dryRun: Bool, summary: Bool = false, zone: any LocalTimeZone, client: MQTTClient, log: Logger
    ) throws -> [any Sink] {
        let describe: (@Sendable (OutgoingPush) -> String)? =
            summary ? { @Sendable (push: OutgoingPush) in PushSummary.line(widget: push.widget, document: push.document, held: push.held, at: push.at, zone: zone) } : nil
        func stdout() throws -> StdoutSink { try StdoutSink(zone: zone, summary: describe, log: { [log] in log.log($0) }) }
        if dryRun {
            let skipped = config.pushes.map { "push:\($0.widget)" } + (config.output.mqtt == nil ? [] : ["output.mqtt"])
            log.log(.info, "dry run: pushes go to standard output" + (skipped.isEmpty ? "" : "; \(skipped.joined(separator: ", ")) gets nothing"))
            return [try stdout()]
        }
        var sinks: [any Sink] = config.output.stdout ? [try stdout()] : []
        if let settings = config.output.mqtt {
            sinks.append(try MQTTSink(settings: settings, flow: config.flow, software: Flowbridge.version, connection: client, log: { [log] in log.log($0) }))
        }
        if summary, !config.output.stdout {
            log.log(.warning, "--summary: pushes go to no standard output to say them on (--dry-run, or output: {stdout: true})")
        }
        for push in config.pushes {
            sinks.append(try WidgetAPISink(widget: push.widget, settings: push.api, token: push.token?.value, log: { [log] in log.log($0) }))
        }
        if sinks.isEmpty {
            log.log(.warning, "no sink configured: \(DaemonConfig.noSinkWarning)")
        } else {
            log.log(.info, "pushes go to \(sinks.map(\.destination).joined(separator: ", "))")
        }
        return sinks
    }
}

/// The daemon's connection is the MQTT sink's: one client subscribes, publishes the status and its
/// last will, and carries the widgets' topics.
extension MQTTClient: MQTTPublishing {}
