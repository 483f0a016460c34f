import Commands
import Configuration
import FlowCore
import FoundationEssentials
import Testing

/// A home priced by a tariff, and traces of it, for the tests of the day's money through
/// `replay`: a suite that conforms builds its configs and traces with these.
public protocol TariffHome {}

extension TariffHome {
    /// A home with a grid meter (`grid`, + importing) and what `inputs` adds: the output is the
    /// balance, so consumption is the inputs plus the import minus the export. `subtitle` and
    /// `widgets` are lines of the flow widget and further widgets, as written under `widgets:`.
    public static func config(
        tariff: String, sources extra: String = "", timezone: String = "UTC", exchange: String = "{name: Grid, rate: grid, total: import}",
        inputs: String? = nil, subtitle: String? = nil, widgets more: String = ""
    ) -> String {
        """
        timezone: \(timezone)
        sources:
          grid: {topic: home/grid, max_gap: 10m}
        \(extra)
        widgets:
          home:
            template: flow
        \(subtitle.map { "    subtitle: \($0)" } ?? "")
            flow:
        \(inputs.map { "      inputs: \($0)" } ?? "")
              output: {name: Home, rate: balance, total: integrate}
              exchange: \(exchange)
            policy: {min_interval: 0s, settle: 0s}
        \(more)
        tariff:
        \(tariff)
        """
    }

    /// `topic` at `watts(t)` once a minute (or every `seconds`) from `start` to `end` (both
    /// included), as messages.
    public static func minutes(
        from start: Date, to end: Date, every seconds: Double = 60, topic: String = "home/grid", _ watts: (Date) -> Double
    ) -> [(Date, String, String)] {
        stride(from: start.timeIntervalSince1970, through: end.timeIntervalSince1970, by: seconds).map { t in
            let at = Date(timeIntervalSince1970: t)
            return (at, topic, JSONValue.format(watts(at)))
        }
    }

    /// The messages as trace lines, in time order.
    public static func lines(_ messages: [(Date, String, String)]) -> [String] {
        messages.sorted { $0.0 < $1.0 }.map { TraceMessage(at: $0.0, topic: $0.1, payload: Array($0.2.utf8)).line }
    }

    public static func time(_ text: String) -> Date { RFC3339.parse(text)! }

    /// The money of widget `home` at the end of the replay, and the log.
    public static func money(_ config: String, _ messages: [(Date, String, String)]) throws -> (report: MoneyReport, log: [String]) {
        let run = try replayWithLog(config: config, trace: lines(messages), final: false)
        let report = try #require(run.engine.money(ofWidget: "home"))
        return (report, run.log.map(\.diagnostic.message))
    }
}
