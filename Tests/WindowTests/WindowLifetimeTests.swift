@testable import Configuration
@testable import Persistence
@testable import Platform
@testable import Runtime
@testable import FlowCore
import Foundation
import Mosquitto
import TestSupport
import ReplaySupport
import Testing

/// The window's lifetime counters: a closed day is added once at its midnight, today's accounts
/// on top, kept in the state file and taken back from it, so the counter only rises.
@Suite struct WindowLifetimeTests {
    static let config = """
        timezone: UTC
        sources: {grid: {topic: g}, meter: {topic: m, unit: kWh}}
        widgets: {w: {template: flow, flow: {exchange: {rate: grid, total: {counter: meter}}}, policy: {min_interval: 0s, settle: 0s}}}
        tariff: {import: {price: 0.25}}
        """

    static func importJoules(_ bridge: Bridge, at now: Date) -> Double? {
        let snapshot = bridge.windowSnapshot(at: now, status: ServiceStatus(address: "b", sourceCount: 2))
        return snapshot.widgets.first?.lifetimeKWh[.imported].map { $0 * 3.6e6 }
    }

    @Test func aClosedDayIsAddedOnceAndTheCountSurvivesARestart() throws {
        let config = try DaemonConfig.parse(Self.config, file: "c.yaml")
        let zone = try #require(SystemTimeZone(identifier: "UTC"))
        let folder = TemporaryFolder()
        let store = StateStore(path: folder.url.appendingPathComponent("state.json").path)
        let log = Logger(threshold: .error)
        let bridge = Bridge(engine: FlowEngine(config: config.flow, zone: zone), config: config, zone: zone, sinks: [], store: store, log: log)
        let evening = Date(timeIntervalSince1970: 1_780_272_000 + 23 * 3600)  // 23:00 UTC
        let monotonic = ContinuousClock.now
        var ticked = 0.0
        // The daemon's clock ticks every second; a minute apart is enough for the engine's.
        func meter(_ kWh: Double, at seconds: Double) {
            while ticked + 60 < seconds {
                ticked += 60
                bridge.tick(at: evening.addingTimeInterval(ticked), monotonic: monotonic.advanced(by: .seconds(ticked)))
            }
            bridge.receive(
                MQTTMessage(topic: "m", payload: Array(JSONValue.format(kWh).utf8)), at: evening.addingTimeInterval(seconds),
                monotonic: monotonic.advanced(by: .seconds(seconds)))
        }
        meter(100, at: 0)
        meter(103, at: 1800)  // 3 kWh before midnight
        #expect(Self.importJoules(bridge, at: evening.addingTimeInterval(1800)) == 3 * 3.6e6)
        meter(104, at: 3600 + 600)  // past midnight: the day closed; 1 kWh of the counter's rise spans it
        let afterMidnight = try #require(Self.importJoules(bridge, at: evening.addingTimeInterval(4200)))
        #expect(abs(afterMidnight - 4 * 3.6e6) < 1, "\(afterMidnight)")
        let money = bridge.windowSnapshot(at: evening.addingTimeInterval(4200), status: ServiceStatus(address: "b", sourceCount: 2)).widgets.first?.lifetimeMoney
        #expect(money.map { abs($0.importCost - 4 * 0.25) < 1e-9 } == true, "\(String(describing: money))")
        #expect(bridge.flush(at: evening.addingTimeInterval(4200)))

        // A restart: the closed day comes back from the state, today's accounts too; the same day
        // offered again is not added twice.
        let restored = try Bridge.engine(for: config, zone: zone, store: store, access: .owner, configPath: "c.yaml", sinks: [], log: log)
        #expect(restored.lifetime.throughDay != nil)
        let again = Bridge(engine: restored.engine, lifetime: restored.lifetime, config: config, zone: zone, sinks: [], store: store, log: log)
        let afterRestart = try #require(Self.importJoules(again, at: evening.addingTimeInterval(4300)))
        #expect(abs(afterRestart - afterMidnight) < 1e-6, "\(afterRestart) after \(afterMidnight)")
        again.receive(
            MQTTMessage(topic: "m", payload: Array("104.5".utf8)), at: evening.addingTimeInterval(4800), monotonic: monotonic.advanced(by: .seconds(4800)))
        let later = try #require(Self.importJoules(again, at: evening.addingTimeInterval(4800)))
        #expect(abs(later - 4.5 * 3.6e6) < 1, "\(later)")
    }

    @Test func aDayIsAddedOnce() {
        var lifetime = LifetimeAccounts()
        var day = FlowEngine.ClosedDay(date: CivilDate(year: 2026, month: 12, day: 5), totalsKWh: [:], accountsKWh: ["w": [.imported: 2]])
        let first = lifetime.add(day)
        let again = lifetime.add(day)
        day.date = CivilDate(year: 2026, month: 12, day: 4)
        let earlier = lifetime.add(day)
        #expect(first && !again && !earlier)
        #expect(lifetime.totalKWh(of: "w", today: [.imported: 0.5, .exported: 0]) == [.imported: 2.5, .exported: 0])
        #expect(LifetimeAccounts(json: lifetime.json) == lifetime)
        // The last day amended (a counter's rise across midnight counted after it closed) adds
        // what it gained, once.
        day.date = CivilDate(year: 2026, month: 12, day: 5)
        day.accountsKWh["w"]?[.imported] = 3
        #expect(lifetime.add(day) && !lifetime.add(day))
        #expect(lifetime.totalKWh(of: "w", today: [:]) == [.imported: 3])
        // As a counter it never falls: a derived home's day fallen back by a moment's export holds
        // at what was served until it is above it again.
        #expect(lifetime.counterKWh(of: "w", today: [.consumption: 1.5]) == [.imported: 3, .consumption: 1.5])
        #expect(lifetime.counterKWh(of: "w", today: [.consumption: 1.4]) == [.imported: 3, .consumption: 1.5])
        #expect(lifetime.counterKWh(of: "w", today: [.consumption: 1.6]) == [.imported: 3, .consumption: 1.6])
    }
}
