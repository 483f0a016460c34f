@testable import Commands
@testable import Configuration
@testable import Runtime
import FlowCore
import Foundation
import Mosquitto
import TestSupport
import ReplaySupport
import Testing

/// A clock excursion through the daemon's two paths: a trace replayed (the times are the only
/// clock) and the live bridge (the monotonic clock tells the step).
@Suite struct ClockExcursionReplayTests {
    /// The flow's solar, grid and home totals at the end of a replay.
    static func totals(_ output: String) throws -> [Double] {
        let final = try finalDocument(output)
        let flow = try #require(final["content"]?["flow"])
        return [flow["inputs"]?.arrayValue?[0]["total"], flow["exchange"]?["total"], flow["output"]?["total"]].map { $0?.numberValue ?? -1 }
    }

    /// Three minutes of readings at noon dated a day early: the totals are those of the day
    /// without the excursion, and no day is closed.
    @Test func aDayWithReadingsDatedADayEarlyKeepsItsTotals() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let trace = BerlinDay.trace()
        // Two lines a minute from 00:01: lines 1438–1443 are 12:00 to 12:02.
        var excursion = trace
        for index in 1438..<1444 {
            var message = try TraceMessage(line: Array(trace[index].utf8))
            message.at.addTimeInterval(-86_400)
            excursion[index] = message.line
        }
        let whole = try folder.write("whole.ndjson", trace.joined(separator: "\n") + "\n")
        let early = try folder.write("early.ndjson", excursion.joined(separator: "\n") + "\n")
        let straight = try runFlowbridge(["replay", "--config", config, "--final", whole])
        let stepped = try runFlowbridge(["replay", "--config", config, "--final", early])
        #expect(straight.status == 0 && stepped.status == 0, "\(stepped.err)")
        let expected = try Self.totals(straight.out)
        let got = try Self.totals(stepped.out)
        #expect(expected[0] > 10)
        for (a, b) in zip(expected, got) { #expect(abs(a - b) <= 0.01, "\(expected) vs \(got)") }
        #expect(!stepped.err.contains("closed"), "\(stepped.err)")
    }

    /// The live path: the wall clock steps back a day while the monotonic clock runs on, and comes
    /// back three minutes later. The bridge tells the engine both steps; the day goes on.
    @Test func aLiveStepBackADayAndForwardAgainKeepsTheDay() throws {
        let folder = TemporaryFolder()
        let config = try DaemonConfig.parse("""
            timezone: UTC
            sources: {load: {topic: p}}
            widgets: {w: {template: flow, flow: {output: {rate: load, total: integrate}}}}
            """, file: "c.yaml")
        let bridge = try Bridge.inUTC(config, savingIn: folder)
        let midnight = try #require(RFC3339.parse("2026-06-01T00:00:00Z"))
        let monotonic = ContinuousClock.now
        for minute in 0...720 {
            let wall = midnight.addingTimeInterval(Double(minute) * 60 - ((600..<603).contains(minute) ? 86_400 : 0))
            bridge.receive(MQTTMessage(topic: "p", payload: Array("3600".utf8)), at: wall, monotonic: monotonic.advanced(by: .seconds(minute * 60)))
        }
        let (day, closed, total) = bridge.state.withLock { state in
            (state.engine.day?.date, state.engine.lastClosedDay, state.engine.snapshot()["totals"]?["w/output"]?["kwh"]?.numberValue)
        }
        #expect(day == CivilDate("2026-06-01"))
        #expect(closed == nil)
        // All but the four minutes around the two steps.
        #expect(abs(try #require(total) - (720 - 4) * 0.06) < 1e-6)
    }
}
