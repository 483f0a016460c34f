import FlowCore
import Foundation
import Glibc
import TestSupport
import Testing

/// A power cut, as `kill -9` of `flowbridge run`, between two of the minute's saves: the integrated
/// total loses at most what a minute of its rate adds, and the counter total loses nothing (its
/// baseline was saved when it was set; the next reading rebuilds the rest).
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason))
struct StateSaveKillTests {
    static let solarW = 3600.0
    static let baselineKWh = 100.0

    static func config(port: Int, state: String) -> String {
        """
        timezone: UTC
        mqtt: {host: 127.0.0.1, port: \(port), client_id: flowbridge-kill}
        state_file: \(state)
        output: {stdout: true}
        sources:
          solar: {topic: solar/ac/power}
          grid: {topic: grid/power}
          meter: {topic: grid/energy, unit: kWh}
        widgets:
          power:
            template: flow
            flow:
              inputs: [{name: Solar, rate: solar, total: integrate}]
              exchange: {name: Grid, rate: grid, total: {counter: meter}}
            policy: {min_interval: 0s, settle: 0s, rate_step: 1, rate_deadband: 0, total_step: 0.001}
        """
    }

    /// The totals of the widget's latest document, from every push the daemon wrote.
    static func totals(_ daemon: RunTests.Daemon) -> (solarKWh: Double?, gridKWh: Double?) {
        let content = daemon.pushes.reduce(JSONValue.null) { MergePatch.apply($1["patch"]!["content"]!, to: $0) }
        return (content["flow"]?["inputs"]?.arrayValue?.first?["total"]?.numberValue, content["flow"]?["exchange"]?["total"]?.numberValue)
    }

    @Test func killMinusNineLosesAtMostAMinuteOfIntegratedEnergyAndNoCounterEnergy() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        let config = Self.config(port: broker.port, state: state)
        let first = try RunTests.Daemon(config: config, folder: folder, name: "first")
        #expect(await first.waitFor("subscribed to"), "\(first.text)")

        // 70 s of 3.6 kW (1 Wh a second) and a meter rising 1 Wh a second: the first save at the
        // first readings, the minute's save a minute later, then ten unsaved seconds.
        let clock = ContinuousClock()
        let begin = clock.now
        var second = 0
        while clock.now - begin < .seconds(70) {
            try await broker.publish(topic: "solar/ac/power", payload: JSONValue.format(Self.solarW))
            try await broker.publish(topic: "grid/power", payload: "500")
            try await broker.publish(topic: "grid/energy", payload: JSONValue.format(Self.baselineKWh + Double(second) * 0.001))
            second += 1
            try await Task.sleep(until: begin + .seconds(second), clock: clock)  // the test is about time passing
        }
        let lastMeter = Self.baselineKWh + Double(second - 1) * 0.001
        #expect(await first.waitFor(#""total":\#(JSONValue.format(((lastMeter - Self.baselineKWh) * 1000).rounded() / 1000))"#), "\(first.text)")
        let shown = Self.totals(first)
        first.process.send(SIGKILL)
        #expect(await first.process.waitForExit(timeout: .seconds(5)))

        let saved = try #require(savedState(state))
        let savedSolarKWh = try #require(saved["totals"]?["power/inputs[0]"]?["kwh"]?.numberValue, "\(saved)")
        let shownSolarKWh = try #require(shown.solarKWh)
        let minuteKWh = Self.solarW * 60 / 3_600_000
        #expect(shownSolarKWh - savedSolarKWh <= minuteKWh + 0.001, "shown \(shownSolarKWh), saved \(savedSolarKWh)")
        #expect(savedSolarKWh > minuteKWh / 2, "the minute's save was not written: \(savedSolarKWh)")  // not only the first save's

        // The restart continues from the file; one reading of the meter gives its total exactly.
        let restarted = try RunTests.Daemon(config: config, folder: folder, name: "second")
        #expect(await restarted.waitFor("subscribed to"), "\(restarted.text)")
        let nextMeter = lastMeter + 0.005
        try await broker.publish(topic: "grid/energy", payload: JSONValue.format(nextMeter))
        let gridKWh = ((nextMeter - Self.baselineKWh) * 1000).rounded() / 1000
        #expect(await restarted.waitFor(#""total":\#(JSONValue.format(gridKWh))"#), "\(restarted.text)")
        #expect(Self.totals(restarted).gridKWh == gridKWh)
        let restoredSolar = try #require(Self.totals(restarted).solarKWh)
        #expect(abs(restoredSolar - savedSolarKWh) <= 0.001)
        await restarted.stop()
    }
}
