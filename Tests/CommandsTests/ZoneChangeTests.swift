import Commands
import FlowCore
import Foundation
import TestSupport
import ReplaySupport
import Testing

/// A restart under another time zone (`timezone:` changed, or the system's zone) on the same local
/// date carries the day over to that date in the new zone, whichever way the zone moved.
@Suite struct ZoneChangeTests {
    /// The day config in `zone`, its totals shown to the Wh.
    static func config(zone: String) -> String {
        BerlinDay.config.replacingOccurrences(of: "timezone: Europe/Berlin", with: "timezone: \(zone)")
            + "\n    policy: {total_step: 0.001}"
    }

    /// One reading a minute of 1000 W solar and 200 W from the grid, from `from` for `minutes`.
    static func trace(from start: String, minutes: Int) -> String {
        let begin = RFC3339.parse(start)!
        return (0..<minutes).flatMap { minute in
            let at = begin.addingTimeInterval(Double(minute) * 60)
            return [TraceMessage(at: at, topic: "pv/power", payload: Array("1000".utf8)).line, TraceMessage(at: at, topic: "grid/power", payload: Array("200".utf8)).line]
        }.joined(separator: "\n") + "\n"
    }

    /// A morning saved in Berlin (06:00 to 10:00 UTC), then ten minutes more read back under
    /// `config` with `environment`: the log and the solar total at the end.
    static func carryOver(config text: String, environment: [String: String] = [:]) throws -> (err: String, solarKWh: Double) {
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        let morning = try folder.write("morning.ndjson", trace(from: "2026-06-01T06:00:00Z", minutes: 240))
        let berlin = try folder.write("berlin.yaml", config(zone: "Europe/Berlin"))
        #expect(try runFlowbridge(["replay", "--config", berlin, "--state", state, morning]).status == 0)
        let elsewhere = try folder.write("elsewhere.yaml", text)
        let next = try folder.write("next.ndjson", trace(from: "2026-06-01T10:00:00Z", minutes: 10))
        let run = try runFlowbridge(["replay", "--config", elsewhere, "--state", state, "--final", next], environment: environment)
        #expect(run.status == 0, "\(run.err)")
        #expect(!run.err.contains("cannot be used"), "\(run.err)")
        let final = try finalDocument(run.out)
        return (run.err, try #require(final["content"]?["flow"]?["inputs"]?.arrayValue?.first?["total"]?.numberValue))
    }

    /// Read back at once (10:00 UTC) in zones to the west (06:00 in New York, 00:00 in Honolulu)
    /// and to the east (19:00 in Tokyo), where it is still 1 June: the day goes on, its totals kept.
    @Test(arguments: ["America/New_York", "Pacific/Honolulu", "Asia/Tokyo"])
    func theDayGoesOnInTheNewZone(zone: String) throws {
        let (err, solar) = try Self.carryOver(config: Self.config(zone: zone))
        #expect(err.contains("continuing the day 2026-06-01"), "\(err)")
        #expect(abs(solar - 249.0 / 60) <= 0.01, "\(solar)")  // 06:00 to 10:09 at 1 kW
    }

    /// The same when the config names no zone and the system's changed (`TZ` here).
    @Test func theDayGoesOnWhenTheSystemZoneMovesWest() throws {
        let config = Self.config(zone: "Europe/Berlin").replacingOccurrences(of: "timezone: Europe/Berlin\n", with: "")
        let (err, solar) = try Self.carryOver(config: config, environment: ["TZ": "America/Los_Angeles"])
        #expect(err.contains("continuing the day 2026-06-01"), "\(err)")
        #expect(abs(solar - 249.0 / 60) <= 0.01, "\(solar)")
    }

    /// In Kiritimati (UTC+14) it is already 2 June: the first event closes 1 June with its
    /// totals, as any midnight.
    @Test func aNewZoneOnALaterDateClosesTheDay() throws {
        let (err, solar) = try Self.carryOver(config: Self.config(zone: "Pacific/Kiritimati"))
        let closed = try #require(err.split(separator: "\n").first { $0.contains("day 2026-06-01 (Pacific/Kiritimati) closed:") })
        #expect(closed.contains("home/inputs[0] 4 kWh"), "\(closed)")
        #expect(abs(solar - 9.0 / 60) <= 0.01, "\(solar)")
    }
}
