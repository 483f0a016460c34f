import Commands
import Configuration
import FlowCore
import FoundationEssentials
import Platform
import TestSupport
import ReplaySupport
import Testing

/// A daily counter's first step counts, through `replay`.
@Suite struct DailyCounterReplayTests {
    static func config(tariff: String = "", daily: String? = nil) -> String {
        """
        timezone: UTC
        mqtt: {host: 127.0.0.1}
        sources:
          solar: {topic: home/solar, max_gap: 2h, stale_after: 2h}
          grid: {topic: home/grid, max_gap: 2h, stale_after: 2h}
          battery: {topic: home/battery, max_gap: 2h, stale_after: 2h}
        \(daily.map { "  solar_day: {topic: home/solar_day, \($0)}" } ?? "")
        widgets:
          home:
            template: flow
            flow:
              inputs: [{name: Solar, rate: solar, total: \(daily == nil ? "integrate" : "{daily: solar_day}")}]
              storage: {name: Battery, rate: battery, total: charge}
              exchange: {name: Grid, rate: grid, total: import}
              output: {name: Home, rate: balance, total: integrate}
        \(tariff)
        """
    }

    /// Runs `lines` through replay; returns every output and the engine at the end.
    static func run(_ text: String, _ lines: [String]) throws -> (outputs: [FlowEngine.Output], engine: FlowEngine) {
        let config = try DaemonConfig.parse(text, file: "test.yaml")
        var replay = Replay(config: config.flow, zone: SystemTimeZone(identifier: "UTC")!)
        var outputs: [FlowEngine.Output] = []
        for line in lines { outputs += replay.feed(try TraceMessage(line: Array(line.utf8))) }
        return (outputs + replay.finish(), replay.engine)
    }

    /// 2026-06-01T00:00:00Z.
    static let midnight = 1_780_272_000.0

    struct CounterCase: Sendable, CustomTestStringConvertible {
        var name: String
        var source: String
        var values: [String]
        var expectedKWh: Double
        var testDescription: String { name }
    }

    static let counters: [CounterCase] = [
        // hoymiles-mqtt, OpenDTU's yieldday: whole Wh. The first step of one Wh counts.
        CounterCase(name: "Wh 431 → 432", source: "unit: Wh", values: ["431", "432"], expectedKWh: 0.432),
        // Tasmota's Today: kWh to three decimals.
        CounterCase(name: "kWh 0.431 → 0.432", source: "unit: kWh", values: ["0.431", "0.432"], expectedKWh: 0.432),
        // A device reset right after the first step keeps the day: 0.432 + 0.001 after the reset.
        CounterCase(name: "a reset after the first step", source: "unit: Wh", values: ["431", "432", "0", "1"], expectedKWh: 0.433),
        // A counter that never moves is yesterday's, left over: nothing.
        CounterCase(name: "a counter that never moves", source: "unit: Wh", values: ["431", "431"], expectedKWh: 0),
    ]

    @Test(arguments: counters)
    func aDailyCountersFirstStepCounts(_ test: CounterCase) throws {
        let lines = test.values.enumerated().map { index, value in
            traceLine(RFC3339.format(Date(timeIntervalSince1970: Self.midnight + 36_000 + Double(index) * 300)), "home/solar_day", value)
        }
        let (_, engine) = try Self.run(Self.config(daily: test.source), lines)
        let production = try #require(engine.accountTotals(ofWidget: "home")?[.production])
        #expect(abs(production - test.expectedKWh) < 1e-9, "\(production)")
    }
}
