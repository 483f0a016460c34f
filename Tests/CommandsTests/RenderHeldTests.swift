import FlowCore
import Foundation
import TestSupport
import Testing

/// `flowbridge render` draws a node dashed when the engine holds its reading (its meter silent at
/// the state's latest time), not because it is gray: a node the user colors gray with a live
/// meter is drawn solid.
@Suite struct RenderHeldTests {
    /// The state's latest time, 14:00:00 UTC.
    static let latest = 1_780_063_200.0

    struct HeldCase: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var color: String
        /// How long before the latest time Solar last read: beyond its `stale_after` (60 s) it is
        /// silent, and its reading held (`when_stale: hold`).
        var solarAgeSeconds: Double
        var dashed: Bool
    }

    @Test(arguments: [
        HeldCase(testDescription: "colored gray, its meter live", color: "gray", solarAgeSeconds: 0, dashed: false),
        HeldCase(testDescription: "colored gray, its meter silent", color: "gray", solarAgeSeconds: 120, dashed: true),
        HeldCase(testDescription: "colored yellow, its meter silent", color: "yellow", solarAgeSeconds: 120, dashed: true),
    ])
    func aNodeIsDrawnHeldByTheMarkNotByItsColor(_ test: HeldCase) throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", """
            timezone: UTC
            sources:
              solar: {topic: solar/power, stale_after: 60s}
              grid: {topic: grid/power, stale_after: 60s}
            widgets:
              power:
                template: flow
                flow:
                  inputs: [{name: Solar, rate: solar, color: \(test.color), when_stale: hold}]
                  exchange: {name: Grid, rate: grid}
            """)
        let solarAt = JSONValue.format(Self.latest - test.solarAgeSeconds)
        let state = try folder.write("state.json", """
            {"version": 1, "totals": {}, "readings": {"solar": {"value": 2000, "t": \(solarAt)}, "grid": {"value": -500, "t": \(JSONValue.format(Self.latest))}}}
            """)
        let out = folder.url.appendingPathComponent("power.svg").path
        let run = try runFlowbridge(["render", "--config", config, "--state", state, "--out", out])
        #expect(run.status == 0, "\(run.err)")
        let picture = try String(contentsOfFile: out, encoding: .utf8)
        let start = try #require(picture.firstRange(of: #"data-place="inputs[0]""#))
        let end = try #require(picture[start.upperBound...].firstRange(of: "</g>"))
        let solar = picture[start.lowerBound..<end.lowerBound]
        #expect(solar.contains(#"data-stale="\#(test.dashed)""#), "\(solar)")
        #expect(solar.contains("stroke-dasharray") == test.dashed, "\(solar)")
        #expect(solar.contains(">held</text>") == test.dashed, "\(solar)")
    }
}
