import Commands
import Configuration
import FlowCore
import Foundation
import Platform

/// A trace line.
public func traceLine(_ time: String, _ topic: String, _ payload: String) -> String {
    TraceMessage(at: RFC3339.parse(time)!, topic: topic, payload: Array(payload.utf8)).line
}

/// Replays a trace in-process and returns the NDJSON lines it prints.
public func replay(config text: String, trace lines: [String], final: Bool = true) throws -> (lines: [JSONValue], engine: FlowEngine) {
    let run = try replayWithLog(config: text, trace: lines, final: final)
    return (run.lines, run.engine)
}

/// Replays a trace in-process: the NDJSON lines it prints, and its log lines, each with the time
/// of the trace line that was being fed (or of the last, for what comes after it).
public func replayWithLog(
    config text: String, trace lines: [String], final: Bool = true
) throws -> (lines: [JSONValue], log: [(at: Date, diagnostic: Diagnostic)], engine: FlowEngine) {
    let config = try DaemonConfig.parse(text, file: "test.yaml")
    let zone = config.timezone.flatMap(SystemTimeZone.init(identifier:)) ?? SystemTimeZone(identifier: "UTC")!
    var replay = Replay(config: config.flow, zone: zone)
    var output: [String] = []
    var log: [(Date, Diagnostic)] = []
    func emit(_ items: [FlowEngine.Output], at time: Date) {
        for item in items {
            switch item {
            case .push(let widget, let at, let push): output.append(replay.pushLine(widget: widget, at: at, patch: push.patch))
            case .diagnostic(let diagnostic): log.append((time, diagnostic))
            case .accounts, .closedDay, .closedSlot, .refused, .sourceSilent, .sourceBack: break
            }
        }
    }
    var last = Date(timeIntervalSince1970: 0)
    for line in lines {
        let message = try TraceMessage(line: Array(line.utf8))
        last = message.at
        emit(replay.feed(message), at: last)
    }
    emit(replay.finish(), at: last)
    if final { output += replay.finalLines() }
    return (try output.map { try JSONValue(parsing: $0) }, log, replay.engine)
}

/// A day in Berlin of a solar array and a grid meter, one reading a minute each: the day the
/// tests of replays, the state file and clock steps run through.
public enum BerlinDay {
    public static let config = """
        timezone: Europe/Berlin
        sources:
          pv: {topic: pv/power}
          grid: {topic: grid/power}
        widgets:
          home:
            template: flow
            flow:
              inputs: [{name: Solar, rate: pv, total: integrate}]
              exchange: {name: Grid, rate: grid, total: import}
              output: {name: Home, rate: balance, total: integrate}
        """

    /// A day in Berlin, one reading a minute per source.
    public static func trace(date: String = "2026-06-01") -> [String] {
        let midnight = RFC3339.parse("\(date)T00:00:00+02:00")!
        var lines: [String] = []
        for minute in stride(from: 1, to: 1440, by: 1) {
            let at = midnight.addingTimeInterval(Double(minute) * 60)
            let sun = max(0, sin((Double(minute) / 1440 - 0.25) * 2 * .pi)) * 3000
            lines.append(TraceMessage(at: at, topic: "pv/power", payload: Array(JSONValue.format(sun.rounded()).utf8)).line)
            lines.append(TraceMessage(at: at, topic: "grid/power", payload: Array(JSONValue.format((500 - sun).rounded()).utf8)).line)
        }
        return lines
    }
}
