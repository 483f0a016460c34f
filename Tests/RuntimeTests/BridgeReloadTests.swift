@testable import Commands
@testable import Configuration
@testable import Persistence
@testable import Platform
@testable import Runtime
import FlowCore
import Foundation
import Mosquitto
import TestSupport
import Testing

/// A reload carries the day over; a total it cannot carry is said in the log, never silently
/// restarted at 0 (Home Assistant would count the drop as a new cycle).
@Suite struct BridgeReloadTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var testDescription: String
        /// The sources and the solar input's total after the reload.
        var sources: String
        var total: String
        /// What the reload says, and today's solar total after it.
        var said: [String]
        var solarKWh: Double
    }

    static func config(sources: String, total: String) throws -> DaemonConfig {
        try DaemonConfig.parse("""
            timezone: UTC
            sources: \(sources)
            widgets: {w: {template: flow, flow: {inputs: [{rate: solar, total: \(total)}]}}}
            """, file: "c.yaml")
    }

    /// Solar at 2 kW for an hour (2 kWh), then the config is reloaded.
    @Test(arguments: [
        Case(testDescription: "the same config keeps the day", sources: "{solar: {topic: s}}", total: "integrate", said: [], solarKWh: 2),
        Case(
            testDescription: "a max_power that cannot have made the day", sources: "{solar: {topic: s, max_power: 10}}", total: "integrate",
            said: [
                "state: the reading of 'solar' is damaged; left out",
                "state: the total of w/inputs[0], 2 kWh, is damaged: more than its sources' max_power allow in a day (0.25 kWh); left out",
            ],
            solarKWh: 0),
        Case(
            testDescription: "a total of another kind starts at 0", sources: "{solar: {topic: s}, meter: {topic: m, unit: kWh}}",
            total: "{counter: meter}", said: ["state: the total of w/inputs[0] was saved as integrate; as counter:meter it starts at 0"],
            solarKWh: 0),
    ])
    func aReloadSaysWhatItCouldNotCarryOver(_ test: Case) throws {
        let folder = TemporaryFolder()
        let running = try Self.config(sources: "{solar: {topic: s}}", total: "integrate")
        let bridge = try Bridge.inUTC(running, savingIn: folder)
        let start = try #require(RFC3339.parse("2026-06-01T12:00:00Z"))
        bridge.receive("2000", on: "s", every: 60, steps: 0...60, from: start, monotonic: ContinuousClock.now)
        func solarKWh() -> Double? { bridge.state.withLock { $0.engine.snapshot()["totals"]?["w/inputs[0]"]?["kwh"]?.numberValue } }
        #expect(abs((solarKWh() ?? 0) - 2) < 1e-9)
        let said = try bridge.replaceEngine(config: Self.config(sources: test.sources, total: test.total), at: start.addingTimeInterval(3630))
        #expect(said.map(\.message) == test.said)
        #expect(abs((solarKWh() ?? 0) - test.solarKWh) < 1e-9)
    }

    /// A reload within a batch: what waited for the batch's end goes out first, and the new engine
    /// takes over the widget showing it.
    @Test func aReloadWithinABatchOffersWhatWaits() throws {
        let folder = TemporaryFolder()
        let config = try DaemonConfig.parse("""
            timezone: UTC
            sources: {solar: {topic: s}}
            widgets: {w: {template: flow, flow: {inputs: [{rate: solar}]}, policy: {min_interval: 0s, settle: 0s}}}
            """, file: "c.yaml")
        let bridge = try Bridge.inUTC(config, savingIn: folder)
        let start = try #require(RFC3339.parse("2026-06-01T12:00:00Z"))
        bridge.receive(MQTTMessage(topic: "s", payload: Array("2000".utf8)), at: start)
        bridge.receive(MQTTMessage(topic: "s", payload: Array("2500".utf8)), at: start.addingTimeInterval(0.01), inBatch: true)
        func shownW() -> Double? {
            guard case .array(let inputs)? = bridge.state.withLock({ $0.engine.deliveredContent["w"]?["flow"]?["inputs"] }) else { return nil }
            return inputs.first?["rate"]?.numberValue
        }
        #expect(shownW() == 2000)
        _ = try bridge.replaceEngine(config: config, at: start.addingTimeInterval(0.02))
        #expect(shownW() == 2500)
    }
}
