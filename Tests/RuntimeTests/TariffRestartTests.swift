import Commands
import Configuration
import FlowCore
import Foundation
import Glibc
import TestSupport
import ReplaySupport
import Testing

/// A power cut (`kill -9` of `flowbridge run`) in the middle of a priced day: the money after the
/// restart is within 0.01 of a replay of the same messages without the fault.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct TariffRestartTests {
    /// A grid meter with a lifetime counter that rises 0.5 kWh a message (a large site: its
    /// max_power says so), the home's use integrated from the rate, and a price source.
    static func config(port: Int?, state: String) -> String {
        """
        timezone: UTC
        \(port.map { "mqtt: {host: 127.0.0.1, port: \($0), client_id: flowbridge-tariff}\nstate_file: \(state)\noutput: {stdout: true}" } ?? "")
        sources:
          grid:  {topic: grid/power, max_power: 1e9}
          meter: {topic: grid/energy, unit: kWh, max_power: 1e9}
          price: {topic: market/price, unit: EUR/MWh, stale_after: 1h}
        widgets:
          power:
            template: flow
            flow:
              output: {name: Home, rate: balance, total: integrate}
              exchange: {name: Grid, rate: grid, total: {counter: meter}}
            policy: {min_interval: 0s, settle: 0s}
        tariff:
          import: {price: price, fees: 0.05}
          standing_charge: 0.40
        """
    }

    final class Published {
        var messages: [(Date, String, String)] = []
    }

    static func publish(_ broker: MosquittoBroker, _ topic: String, _ payload: String, into log: Published) async throws {
        log.messages.append((Date(), topic, payload))
        try await broker.publish(topic: topic, payload: payload)
    }

    /// One message of each meter a second: 3.6 kW and the counter 0.5 kWh further (from
    /// `counterKWh` at second 0).
    static func meters(_ broker: MosquittoBroker, seconds: ClosedRange<Int>, counterKWh: Double = 1000, into log: Published) async throws {
        let clock = ContinuousClock()
        let begin = clock.now
        for second in seconds {
            try await publish(broker, "grid/power", "3600", into: log)
            try await publish(broker, "grid/energy", JSONValue.format(counterKWh + Double(second) * 0.5), into: log)
            try await Task.sleep(until: begin + .seconds(second - seconds.lowerBound + 1), clock: clock)  // the test is about time passing
        }
    }

    /// The money of widget `power` the state at `state` holds after the fault, and what a replay
    /// of the same messages at the times they were sent makes of them without the fault.
    static func moneyAgainstReplay(state: String, log: Published) throws -> (saved: JSONValue, faultFree: MoneyReport) {
        let saved = try #require(savedState(state))
        let money = try #require(saved["money"]?["power"], "\(saved)")
        let trace = log.messages.map { TraceMessage(at: $0.0, topic: $0.1, payload: Array($0.2.utf8)).line }
        let run = try replayWithLog(config: config(port: nil, state: state), trace: trace, final: false)
        return (money, try #require(run.engine.money(ofWidget: "power")))
    }

    @Test func killMinusNineKeepsTheMoneyWithinACentOfTheFaultFreeReplay() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        let config = Self.config(port: broker.port, state: state)
        let log = Published()

        let first = try RunTests.Daemon(config: config, folder: folder, name: "first")
        #expect(await first.waitFor("subscribed to"), "\(first.text)")
        try await Self.publish(broker, "market/price", "300", into: log)  // 0.30 + 0.05 fees
        try await Self.meters(broker, seconds: 0...5, into: log)
        // The first save holds the counter's baseline and the price; the rest of the minute is lost.
        #expect(await eventually { savedState(state)?["prices"]?.objectValue?.values.contains { $0["points"] != nil } == true })
        #expect(await first.waitFor(#""total":2.5"#), "\(first.text)")
        first.process.send(SIGKILL)
        #expect(await first.process.waitForExit(timeout: .seconds(5)))

        let second = try RunTests.Daemon(config: config, folder: folder, name: "second")
        #expect(await second.waitFor("subscribed to"), "\(second.text)")
        try await Self.meters(broker, seconds: 6...8, into: log)
        try await Self.publish(broker, "market/price", "500", into: log)  // 0.50 + 0.05 from here
        // The counter reads 1004 again at second 9: nothing flows across the new price, which a
        // loaded machine's delivery delays would split differently from the replay.
        try await Self.meters(broker, seconds: 9...11, counterKWh: 999.5, into: log)
        #expect(await second.waitFor(#""total":5"#), "\(second.text)")
        await second.stop()

        let (money, faultFree) = try Self.moneyAgainstReplay(state: state, log: log)
        // Import: 5 kWh, 4 of them (0…8 s, across the kill) at 0.35, 1 after the new price at
        // 0.55: 1.95. Consumption: 3.6 kW for about 11 s ≈ 0.011 kWh, its money within a cent.
        #expect(abs(faultFree.importCost - 1.95) < 1e-9, "\(faultFree.text)")
        #expect(abs((money["import_cost"]?.numberValue ?? .nan) - faultFree.importCost) < 1e-6, "\(money) vs \(faultFree.text)")
        #expect(abs((money["grid_only_cost"]?.numberValue ?? .nan) - (faultFree.gridOnlyCost! - faultFree.standingCharge)) <= 0.01, "\(money) vs \(faultFree.text)")
    }
}

/// The money and the price source's recent prices go into the state and come back: a restart
/// from a state saved mid-day ends the day with the same money as a day without one.
@Suite struct TariffStateTests {
    static let config = TariffRestartTests.config(port: nil, state: "")

    /// 10:00–12:00: 3.6 kW, the counter 1 kWh a minute; the price 300 EUR/MWh, 500 from 11:00.
    static var messages: [(Date, String, String)] {
        let start = RFC3339.parse("2026-06-01T10:00:00Z")!
        var messages: [(Date, String, String)] = [(start, "market/price", "300"), (start.addingTimeInterval(3600), "market/price", "500")]
        for minute in 0...120 {
            let at = start.addingTimeInterval(Double(minute) * 60)
            messages += [(at, "grid/power", "3600"), (at, "grid/energy", JSONValue.format(1000 + Double(minute)))]
        }
        return messages.sorted { $0.0 < $1.0 }
    }

    static func lines(_ messages: [(Date, String, String)]) -> [String] {
        messages.map { TraceMessage(at: $0.0, topic: $0.1, payload: Array($0.2.utf8)).line }
    }

    @Test(arguments: [30, 75])
    func aStateSavedMidDayKeepsTheMoney(atMinute minute: Int) throws {
        let parsed = try DaemonConfig.parse(Self.config, file: "t.yaml")
        let zone = FixedOffsetZone()
        let all = Self.messages
        let cut = RFC3339.parse("2026-06-01T10:00:00Z")!.addingTimeInterval(Double(minute) * 60 + 30)
        var whole = Replay(config: parsed.flow, zone: zone)
        for line in Self.lines(all) { _ = whole.feed(try TraceMessage(line: Array(line.utf8))) }
        var before = Replay(config: parsed.flow, zone: zone)
        for line in Self.lines(all.filter { $0.0 < cut }) { _ = before.feed(try TraceMessage(line: Array(line.utf8))) }
        // What a restart reads: the state as written, as text.
        let state = try JSONValue(parsing: Array(before.engine.snapshot().description.utf8))
        var after = FlowEngine(config: parsed.flow, zone: zone)
        #expect(try after.restore(state).isEmpty)
        for message in all where message.0 >= cut {
            _ = after.tick(through: message.0)
            _ = after.receive(topic: message.1, payload: Array(message.2.utf8), at: message.0)
        }
        let expected = try #require(whole.engine.money(ofWidget: "power"))
        let restored = try #require(after.money(ofWidget: "power"))
        // 60 kWh at 0.35 and 60 at 0.55: 21 + 33 = 54 (the first reading is the baseline; the
        // 500 sent at 11:00 holds for the hour, to the last reading at 12:00).
        #expect(abs(expected.importCost - 54) < 1e-9, "\(expected.text)")
        #expect(abs(restored.importCost - expected.importCost) < 1e-9, "\(restored.text)")
        #expect(abs(restored.gridOnlyCost! - expected.gridOnlyCost!) < 1e-9, "\(restored.text)")
    }

    /// Money counted in euros means nothing in pounds: it starts afresh, the day's import so far
    /// counted unpriced (it has no price in pounds), and the log says why.
    @Test func moneyOfAnotherCurrencyStartsAtZero() throws {
        let parsed = try DaemonConfig.parse(Self.config, file: "t.yaml")
        var before = Replay(config: parsed.flow, zone: FixedOffsetZone())
        for line in Self.lines(Self.messages) { _ = before.feed(try TraceMessage(line: Array(line.utf8))) }
        var pounds = parsed.flow
        pounds.tariff = TariffConfig(currency: Currency(code: "GBP")!, importPrice: PriceConfig(base: .fixed(0.3)))
        var after = FlowEngine(config: pounds, zone: FixedOffsetZone())
        let said = try after.restore(before.engine.snapshot())
        #expect(said.map(\.message) == ["state: the money of 'power' was counted in EUR; in GBP it starts afresh; the 120 kWh imported before count unpriced"])
        #expect(after.money(ofWidget: "power")?.importCost == 0)
        #expect(after.money(ofWidget: "power")?.unpricedKWh[.imported] == 120)
    }
}

/// Unpriced energy is said once a day, a restart in the day included.
@Suite struct UnpricedOnceADayTests: TariffHome {
    @Test func aRestartDoesNotSayItAgain() throws {
        let config = try DaemonConfig.parse(
            Self.config(tariff: "  import: {price: price}", sources: "  price: {topic: market/price, unit: EUR/MWh, stale_after: 20m}"), file: "t.yaml")
        let zone = FixedOffsetZone()
        let start = Self.time("2026-06-01T10:00:00Z")
        func said(_ engine: inout FlowEngine, from minute: Int, to last: Int) -> Int {
            var count = 0
            for m in minute...last {
                let outputs = engine.receive(topic: "home/grid", payload: Array("1000".utf8), at: start.addingTimeInterval(Double(m) * 60))
                count += outputs.filter { if case .diagnostic(let d) = $0 { d.message.contains("flows without a price") } else { false } }.count
            }
            return count
        }
        var first = FlowEngine(config: config.flow, zone: zone)
        #expect(said(&first, from: 0, to: 5) == 1)
        var second = FlowEngine(config: config.flow, zone: zone)
        _ = try second.restore(try JSONValue(parsing: Array(first.snapshot().description.utf8)))
        #expect(said(&second, from: 6, to: 10) == 0)
    }
}
