import Commands
import Configuration
import FlowCore
import Foundation
import Glibc
import TestSupport
import Testing

/// `flowbridge run` started fresh (no state) on a broker that holds evcc's grid price forecast,
/// retained: its first accounts are priced at once (a retained single price would leave them
/// unpriced), and a kill -9 keeps the schedule's prices.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct ScheduleRunTests {
    /// TariffRestartTests' site (a counter that rises 0.5 kWh a message, fees 0.05), its price
    /// source evcc's forecast instead of a single price.
    static func config(port: Int, state: String) throws -> String {
        let single = "price: {topic: market/price, unit: EUR/MWh, stale_after: 1h}"
        let text = TariffRestartTests.config(port: port, state: state)
        try #require(text.contains(single))
        return text.replacingOccurrences(of: single, with: "price: {topic: evcc/site/forecast/grid, unit: EUR/MWh, schedule: true}")
    }

    static func importCost(in state: String) -> Double? {
        savedState(state)?["money"]?["power"]?["import_cost"]?.numberValue
    }

    @Test func aFreshStartPricesItsFirstAccountsFromTheRetainedSchedule() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        // Three hourly slots around now at 300 EUR/MWh (0.30 + 0.05 fees), in evcc's later arrays.
        let hour = (Date().timeIntervalSince1970 / 3600).rounded(.down) * 3600
        let slots = (-1...1).map { "[\(Int(hour) + $0 * 3600), \(Int(hour) + ($0 + 1) * 3600), 300]" }
        try await broker.publish(topic: "evcc/site/forecast/grid", payload: "[" + slots.joined(separator: ",") + "]", retain: true)

        let first = try RunTests.Daemon(config: try Self.config(port: broker.port, state: state), folder: folder, name: "first")
        #expect(await first.waitFor("subscribed to"), "\(first.text)")
        try await TariffRestartTests.meters(broker, seconds: 0...3, into: TariffRestartTests.Published())
        #expect(await first.waitFor(#""total":1.5"#), "\(first.text)")
        // The schedule is saved at once, with the counter's baseline: a restart counts the rise
        // since the baseline again and prices it from them.
        #expect(await eventually { savedState(state)?["prices"]?.objectValue?.values.contains { $0["slots"] != nil } == true })
        #expect(!first.text.contains("flows without a price"), "\(first.text)")
        first.process.send(SIGKILL)
        #expect(await first.process.waitForExit(timeout: .seconds(5)))

        let second = try RunTests.Daemon(config: try Self.config(port: broker.port, state: state), folder: folder, name: "second")
        #expect(await second.waitFor("subscribed to"), "\(second.text)")
        try await TariffRestartTests.meters(broker, seconds: 4...6, into: TariffRestartTests.Published())
        #expect(await second.waitFor(#""total":3"#), "\(second.text)")
        await second.stop()
        // 3 kWh since the first reading, all at 0.35, none unpriced.
        #expect(Self.importCost(in: state).map { abs($0 - 1.05) < 1e-9 } == true, "\(Self.importCost(in: state) ?? .nan)")
        #expect(!second.text.contains("flows without a price"), "\(second.text)")
        let saved = try #require(savedState(state))
        #expect(saved["money"]?["power"]?["unpriced_kwh"] == nil, "\(saved)")
    }
}
