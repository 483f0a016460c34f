import FlowCore
import FoundationEssentials
import Platform

/// The log's lines about sources that go quiet and come back: without them a gray node is the
/// only sign, and under a container or the add-on nobody sees the widget. At most one silence line
/// per source every ten minutes (a meter that flaps must not fill the log), and a return is said
/// only when its silence was.
struct SilenceLog {
    static let intervalSeconds = 600.0

    private var throttle = LogThrottle(intervalSeconds: intervalSeconds)
    private var said: Set<String> = []

    /// The line for a source's silence or return; nil for any other output, or one held back.
    mutating func line(for output: FlowEngine.Output, zone: any LocalTimeZone) -> Diagnostic? {
        switch output {
        case .sourceSilent(let silence):
            guard throttle.allows(silence.source, at: silence.at) else { return nil }
            said.insert(silence.source)
            return Diagnostic(
                .warning,
                "source '\(silence.source)' (topic \(silence.topic)) went silent: no value since \(zone.clockText(at: silence.lastValueAt, today: silence.at)); the widget shows it as stale until it reports again"
            )
        case .sourceBack(let silence):
            guard said.remove(silence.source) != nil else { return nil }
            return Diagnostic(
                .info, "source '\(silence.source)' (topic \(silence.topic)) reports again after \(durationText(seconds: silence.silentSeconds)) of silence")
        default:
            return nil
        }
    }
}
