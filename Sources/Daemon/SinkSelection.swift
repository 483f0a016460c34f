import Delivery
import FlowCore

/// The sinks `run` hands its pushes to, as the config says: each widget's `push:` (the widget
/// HTTP API) and `output:` (standard output). `--dry-run` prints to standard output and delivers
/// nothing. Each sink has its own thread and queue, so one that fails never stops another.
enum SinkSelection {
    /// Makes the sinks and says in the log where pushes go (the tokens were read with the config).
    /// Throws when libcurl does not start.
    static func make(config: DaemonConfig, dryRun: Bool, zone: any LocalTimeZone, log: Logger) throws -> [any Sink] {
        func stdout() -> StdoutSink { StdoutSink(zone: zone, log: { [log] in log.log($0) }) }
        if dryRun {
            let skipped = config.pushes.map { "push:\($0.widget)" }
            log.log(.info, "dry run: pushes go to standard output" + (skipped.isEmpty ? "" : "; \(skipped.joined(separator: ", ")) gets nothing"))
            return [stdout()]
        }
        var sinks: [any Sink] = config.output.stdout ? [stdout()] : []
        for push in config.pushes {
            sinks.append(try WidgetAPISink(widget: push.widget, settings: push.api, token: push.token?.value, log: { [log] in log.log($0) }))
        }
        if sinks.isEmpty {
            log.log(.warning, "no sink configured: pushes are computed but go nowhere (add push: to a widget, or output: {stdout: true})")
        } else {
            let names = sinks.map { sink in (sink as? WidgetAPISink).map { "\($0.name) (\($0.settings.displayURL))" } ?? sink.name }
            log.log(.info, "pushes go to \(names.joined(separator: ", "))")
        }
        return sinks
    }
}
