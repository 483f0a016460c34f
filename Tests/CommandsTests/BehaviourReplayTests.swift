import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import TestSupport
import ReplaySupport
import Testing

/// A home in replays: OpenDTU solar, a Shelly grid meter, an evcc battery (+ = discharging).
private func homeConfig(policy: String = "", output: String = "", extra: String = "") -> String {
    """
    timezone: UTC
    sources:
      solar:   {topic: solar/ac/power\(extra)}
      grid:    {topic: "shellypro3em-abc/status/em:0", json: total_act_power\(extra)}
      battery: {topic: evcc/site/battery/power, invert: true\(extra)}
    widgets:
      home:
        template: flow
        subtitle: Solar · grid · home
        flow:
          inputs:   [{name: Solar, rate: solar}]
          storage:  {name: Battery, rate: battery}
          exchange: {name: Grid, rate: grid, color: cyan}
          output:   {name: Home, rate: balance, total: integrate\(output)}
        policy: {total_step: 0.001\(policy)}
    """
}

/// One reading of each meter, the way they publish: solar, then the grid, then the battery,
/// `apart` seconds after one another.
private func readings(at time: Date, solar: Double?, grid: Double?, battery: Double?, apart: Double = 0.4) -> [String] {
    var lines: [String] = []
    if let solar { lines.append(TraceMessage(at: time, topic: "solar/ac/power", payload: Array(JSONValue.format(solar).utf8)).line) }
    if let grid {
        lines.append(TraceMessage(
            at: time.addingTimeInterval(apart), topic: "shellypro3em-abc/status/em:0",
            payload: Array(#"{"id":0,"total_act_power":\#(JSONValue.format(grid))}"#.utf8)).line)
    }
    if let battery {
        // evcc: + discharging, − charging.
        lines.append(TraceMessage(at: time.addingTimeInterval(2 * apart), topic: "evcc/site/battery/power", payload: Array(JSONValue.format(-battery).utf8)).line)
    }
    return lines
}

private func time(_ text: String) -> Date { RFC3339.parse(text)! }

/// Readings of one moment settle, and the sign advice waits for evidence.
@Suite struct SettleReplayTests {
    /// The evening, the meters publishing every 30 s (evcc's interval): the solar reading of 0 W
    /// comes 30 ms before the grid's +200 W and 60 ms before the battery's −600 W. Home is
    /// 800 W before and after.
    static func evening() -> [String] {
        var trace: [String] = []
        let start = time("2026-06-01T17:50:00Z")
        for step in 0..<40 {
            let at = start.addingTimeInterval(Double(step) * 30)
            trace += step < 20
                ? readings(at: at, solar: 1400, grid: 0, battery: 600, apart: 0.03)  // filling 600
                : readings(at: at, solar: 0, grid: 200, battery: -600, apart: 0.03)  // draining 600
        }
        return trace
    }

    @Test func theEveningTransitionShowsHome800InEveryPushAndNoSignWarning() throws {
        let run = try replayWithLog(config: homeConfig(), trace: Self.evening())
        let pushes = documents(run.lines)
        #expect(pushes.count >= 2)
        for document in pushes { #expect(document["flow"]?["output"]?["rate"] == 800, "\(document)") }
        #expect(pushes.last?["flow"]?["storage"]?["rate"] == -600)
        #expect(!run.log.contains { $0.diagnostic.message.contains("output shows 0") }, "\(run.log.map(\.diagnostic))")
    }

    /// Without settling, the same trace shows the house at 0 W between the readings.
    @Test func withoutSettlingTheSameTraceFlickers() throws {
        let run = try replayWithLog(config: homeConfig(policy: ", settle: 0s"), trace: Self.evening())
        #expect(documents(run.lines).contains { $0["flow"]?["output"]?["rate"] == 0 })
    }

    /// The grid meter reports export as import (its sign is wrong): the balance is clamped at 0
    /// minute after minute. The log names the exchange after about ten minutes, not before.
    @Test func aPersistingSignErrorIsSaidAfterAboutTenMinutes() throws {
        var trace: [String] = []
        let start = time("2026-06-01T12:00:00Z")
        for step in 0..<(15 * 6) {
            trace += readings(at: start.addingTimeInterval(Double(step) * 10), solar: 200, grid: -1400, battery: 0)
        }
        let run = try replayWithLog(config: homeConfig(), trace: trace)
        let warnings = run.log.filter { $0.diagnostic.message.contains("a sign is probably wrong") }
        #expect(warnings.count == 1)
        let first = try #require(warnings.first)
        #expect(first.diagnostic.level == .warning)
        #expect(first.diagnostic.message.contains("the exchange (source 'grid'; + must mean importing): toggle `invert` on it"))
        let after = first.at.timeIntervalSince(start)
        #expect(after >= 9 * 60 && after <= 11 * 60, "after \(after) s")
    }
}

/// A balance with a stale exchange is unknown; a held slot is marked.
@Suite struct StaleReplayTests {
    /// 12:00 to 12:50, readings every 10 s; the grid meter is silent from 12:10 to 12:40.
    static func silentGrid() -> [String] {
        var trace: [String] = []
        let start = time("2026-06-01T12:00:00Z")
        for step in 0...300 {
            let offset = Double(step) * 10
            let gridOn = offset <= 600 || offset >= 2400
            trace += readings(at: start.addingTimeInterval(offset), solar: 2000, grid: gridOn ? 500 : nil, battery: 0, apart: 0)
        }
        return trace
    }

    /// While the grid is stale the balance is unknown: the output holds 2500 W, shows 0 or
    /// disappears. Its total is the balance of what the meters counted: the solar's production
    /// goes on counting, the silent grid's import does not.
    @Test(arguments: [("hold", 2500.0 as Double?), ("zero", 0), ("clear", nil)])
    func aStaleGridMakesTheBalanceFollowTheOutputsWhenStale(whenStale: String, shown: Double?) throws {
        let config = homeConfig(policy: ", settle: 0s, min_interval: 0s", output: ", when_stale: \(whenStale)", extra: ", stale_after: 1m")
        let run = try replayWithLog(config: config, trace: Self.silentGrid())
        let stamped = zip(run.lines.filter { $0["patch"] != nil }, documents(run.lines)).map { (time($0.0["t"]!.stringValue!), $0.1) }
        let silence = stamped.filter { $0.0 >= time("2026-06-01T12:11:00Z") && $0.0 < time("2026-06-01T12:40:00Z") }
        #expect(!silence.isEmpty)
        for (_, document) in silence {
            #expect(document["flow"]?["output"]?["rate"]?.numberValue == shown, "\(document)")
            #expect(document["flow"]?["exchange"]?["rate"] == 500)  // held
        }
        let totals = silence.compactMap { $0.1["flow"]?["output"]?["total"]?.numberValue }
        // (`clear` takes the output away with its total.)
        #expect(totals == totals.sorted() && (shown == nil || Set(totals).count > 1), "\(totals)")
        // The solar's 3000 s at 2000 W, and the grid's import while it read: 12:00:00 to 12:10:00
        // and 12:40:00 to 12:50:00, 1200 s at 500 W. 1.6667 + 0.1667 kWh.
        let final = try #require(run.lines.last?["content"]?["flow"]?["output"])
        #expect(final["rate"] == 2500)
        #expect(final["total"] == 1.833)
    }

    @Test func aStaleHeldSlotIsMarkedAndUnmarked() throws {
        let config = homeConfig(policy: ", settle: 0s, min_interval: 0s", extra: ", stale_after: 1m")
        let run = try replayWithLog(config: config, trace: Self.silentGrid())
        let shown = documents(run.lines)
        let marked = try #require(shown.first { $0["flow"]?["exchange"]?["color"] == "gray" })
        #expect(marked["subtitle"] == "Grid: no reading since 12:10")
        #expect(marked["flow"]?["output"]?["color"] == "gray")
        #expect(marked["flow"]?["storage"]?["color"] == nil)
        let final = try #require(shown.last)
        #expect(final["subtitle"] == "Solar · grid · home")
        #expect(final["flow"]?["exchange"]?["color"] == "cyan")
        #expect(final["flow"]?["output"]?["color"] == nil)
        // Marked once and unmarked once: no flicker.
        let grays = shown.map { $0["flow"]?["exchange"]?["color"] == "gray" }
        #expect(zip(grays, grays.dropFirst()).filter { $0 != $1 }.count == 2)
    }

    /// `flowbridge replay --state`: the day is saved at 10:30, the next replay starts at 12:30 with
    /// only the solar meter publishing. The battery's and the grid's 2-hour-old readings are
    /// never pushed as live: gray and named, and no balance is made of them.
    @Test func aRestartTwoHoursLaterPushesNoOldRateAsLive() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", homeConfig())
        let state = folder.url.appendingPathComponent("state.json").path
        var morning: [String] = []
        for step in 0...180 {
            morning += readings(at: time("2026-06-01T10:00:00Z").addingTimeInterval(Double(step) * 10), solar: 1000, grid: 200, battery: 500)
        }
        let later = (0...6).flatMap { readings(at: time("2026-06-01T12:30:00Z").addingTimeInterval(Double($0) * 10), solar: 1500, grid: nil, battery: nil) }
        let first = try runFlowbridge(["replay", "--config", config, "--state", state, try folder.write("1.ndjson", morning.joined(separator: "\n"))])
        #expect(first.status == 0, "\(first.err)")
        let second = try runFlowbridge(["replay", "--config", config, "--state", state, try folder.write("2.ndjson", later.joined(separator: "\n"))])
        #expect(second.status == 0, "\(second.err)")
        let lines = try second.out.split(separator: "\n").map { try JSONValue(parsing: String($0)) }
        let shown = documents(lines)
        #expect(!shown.isEmpty)
        for document in shown {
            #expect(document["flow"]?["storage"]?["color"] == "gray", "\(document)")
            #expect(document["flow"]?["exchange"]?["color"] == "gray", "\(document)")
            #expect(document["flow"]?["output"] == nil, "\(document)")
            #expect(document["subtitle"] == "Battery, Grid: no reading since 10:30", "\(document)")
        }
        #expect(shown.last?["flow"]?["inputs"]?.arrayValue?.first?["rate"] == 1500)
    }
}

/// Time that jumps: out of order, from the future, and a date change that the next events confirm.
@Suite struct TimeJumpReplayTests {
    static let config = """
        timezone: UTC
        sources:
          load: {topic: house/power}
        widgets:
          home:
            template: flow
            flow: {output: {name: Home, rate: load, total: integrate}}
            policy: {total_step: 0.001}
        """

    static func load(_ text: String, _ watts: String = "3600") -> String { traceLine(text, "house/power", watts) }

    @Test func aTraceOutOfOrderCountsEachSecondOnce() throws {
        let trace = [
            Self.load("2026-06-01T10:00:00Z"), Self.load("2026-06-01T10:00:10Z"), Self.load("2026-06-01T09:59:00Z"),
            Self.load("2026-06-01T10:00:20Z"),
        ]
        let (lines, _) = try replay(config: Self.config, trace: trace)
        #expect(lines.last?["content"]?["flow"]?["output"]?["total"] == 0.02)
    }

    /// A morning of 1000 W, one reading a minute, 06:00 to 12:00.
    static func morning(date: String = "2026-06-01") -> [String] {
        (0...360).map { minute in
            TraceMessage(at: time("\(date)T06:00:00Z").addingTimeInterval(Double(minute) * 60), topic: "house/power", payload: Array("1000".utf8)).line
        }
    }

    @Test func oneLineDatedTomorrowKeepsTheWholeMorning() throws {
        var trace = Self.morning()
        trace.insert(Self.load("2026-06-02T09:00:30Z", "1000"), at: 181)  // after 09:00
        let run = try replayWithLog(config: Self.config, trace: trace)
        #expect(run.lines.last?["content"]?["flow"]?["output"]?["total"] == 6)
        #expect(run.engine.lastClosedDay == nil)
        let rejected = run.log.filter { $0.diagnostic.message.contains("ignored unless the next events confirm") }
        #expect(rejected.count == 1)
        #expect(rejected.first?.diagnostic.message.contains("2026-06-02 09:00:30") == true)
    }

    @Test func aDateChangeThatTheNextLinesConfirmClosesTheDay() throws {
        var trace = Self.morning()
        trace += [
            Self.load("2026-06-02T09:00:00Z", "1000"),  // held: one line is no evidence
            Self.load("2026-06-02T09:00:18Z", "1000"),  // confirmed: the day closes, counting starts here
            Self.load("2026-06-02T09:00:36Z", "1000"),
        ]
        let run = try replayWithLog(config: Self.config, trace: trace)
        let closed = try #require(run.engine.lastClosedDay)
        #expect(closed.date.description == "2026-06-01")
        #expect(abs(closed.totalsKWh["home/output"]! - 6) < 1e-9)
        #expect(run.lines.last?["content"]?["flow"]?["output"]?["total"] == 0.005)  // 18 s at 1000 W
    }
}

/// Wildcard sums, payload sizes and silent sources, through replay.
@Suite struct SourceReplayTests {
    /// OpenDTU with two inverters: `solar/<serial>/0/power` each. The second stops at 12:05.
    @Test func aSumOverTwoInvertersCountsEachWhileFresh() throws {
        let payload = try Repository.payload("solar/114190641177/0/power")
        let watts = try #require(Double(payload))
        let config = """
            timezone: UTC
            sources:
              solar: {topic: "solar/+/0/power", combine: sum, stale_after: 1m}
            widgets:
              home:
                template: flow
                flow: {inputs: [{name: Solar, rate: solar, total: integrate}]}
                policy: {rate_step: 0.1, rate_deadband: 0}
            """
        var trace: [String] = []
        for step in 0...60 {
            let at = time("2026-06-01T12:00:00Z").addingTimeInterval(Double(step) * 10)
            trace.append(TraceMessage(at: at, topic: "solar/114190641177/0/power", payload: Array(payload.utf8)).line)
            if step <= 30 { trace.append(TraceMessage(at: at.addingTimeInterval(1), topic: "solar/114190641178/0/power", payload: Array("300".utf8)).line) }
        }
        let (lines, engine) = try replay(config: config, trace: trace)
        let rates = documents(lines).compactMap { $0["flow"]?["inputs"]?.arrayValue?.first?["rate"]?.numberValue }
        #expect(rates.first == PatchPolicy.quantize(watts + 300, step: 0.1))
        #expect(rates.last == PatchPolicy.quantize(watts, step: 0.1))
        #expect(engine.readings["solar"]?.value == watts)
        let saved = engine.snapshot()["readings"]?["solar"]?["topics"]?.objectValue
        #expect(saved?.keys.sorted() == ["solar/114190641177/0/power", "solar/114190641178/0/power"])
    }

    @Test func anOversizePayloadIsRefused() throws {
        let big = #"{"id":0,"total_act_power":9999,"pad":""# + String(repeating: "x", count: 70_000) + #""}"#
        let trace = [
            traceLine("2026-06-01T12:00:00Z", "shellypro3em-abc/status/em:0", #"{"id":0,"total_act_power":300}"#),
            traceLine("2026-06-01T12:00:05Z", "shellypro3em-abc/status/em:0", big),
        ]
        let run = try replayWithLog(config: homeConfig(), trace: trace)
        #expect(run.lines.last?["content"]?["flow"]?["exchange"]?["rate"] == 300)
        #expect(run.engine.sourceStats["grid"]?.oversized == 1)
        #expect(run.log.contains {
            $0.diagnostic.message.contains("source 'grid' (topic shellypro3em-abc/status/em:0): a payload of \(big.utf8.count) bytes is beyond its max_payload (65536 bytes); not read")
        })
    }

    /// The battery's topic has a typo: said once, ten minutes after the first line (the
    /// subscription in a replay), naming the topic.
    @Test func aSourceThatNeverReportsIsSaidOnce() throws {
        let config = homeConfig().replacingOccurrences(of: "evcc/site/battery/power", with: "evcc/site/batery/power")
        var trace: [String] = []
        for step in 0..<(30 * 6) {
            trace += readings(at: time("2026-06-01T12:00:00Z").addingTimeInterval(Double(step) * 10), solar: 1000, grid: 200, battery: 100)
        }
        let run = try replayWithLog(config: config, trace: trace)
        let silent = run.log.filter { $0.diagnostic.message.contains("no message at all") }
        #expect(silent.count == 1)
        #expect(silent.first?.diagnostic.level == .warning)
        #expect(silent.first?.diagnostic.message.contains("source 'battery' (topic evcc/site/batery/power): no message at all in the 10 min since the subscription at 12:00") == true)
        #expect(silent.first.map { $0.at.timeIntervalSince(time("2026-06-01T12:10:00Z")) } ?? -1 >= 0)
        #expect(run.engine.silentSources == ["battery"])
    }
}
