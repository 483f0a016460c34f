@testable import Configuration
@testable import Delivery
@testable import Persistence
@testable import Platform
@testable import Runtime
import FlowCore
import Foundation
import Mosquitto
import Synchronization
import TestSupport
import Testing

/// The Bridge hands every sink the engine's accounts, beside the pushes.
@Suite struct BridgeAccountsTests {
    final class Recorder: Sink {
        let name = "recorder"
        let pushes = Mutex<[WidgetPush]>([])
        let accounts = Mutex<[WidgetAccounts]>([])
        func take(_ push: WidgetPush) { pushes.withLock { $0.append(push) } }
        func take(accounts item: WidgetAccounts) { accounts.withLock { $0.append(item) } }
        let takesAccounts: Bool
        init(takesAccounts: Bool = true) { self.takesAccounts = takesAccounts }
        func stop(timeout: Duration) -> Bool { true }
    }

    /// The engine works out accounts only for a bridge with a sink that takes them, and an engine
    /// reloaded in its place does as it did; the pushes go out either way.
    @Test(arguments: [true, false])
    func theEngineHandsOverAccountsOnlyWhenASinkTakesThem(takes: Bool) throws {
        let config = try DaemonConfig.parse("""
            timezone: UTC
            sources: {load: {topic: l}}
            widgets: {w: {template: flow, flow: {output: {rate: load, total: integrate}}, policy: {min_interval: 0s, settle: 0s}}}
            """, file: "c.yaml")
        let zone = try #require(SystemTimeZone(identifier: "UTC"))
        let recorder = Recorder(takesAccounts: takes)
        let bridge = Bridge(
            engine: FlowEngine(config: config.flow, zone: zone), config: config, zone: zone, sinks: [recorder], store: nil,
            log: Logger(threshold: .error))
        #expect(bridge.state.withLock { $0.engine.handsOverAccounts } == takes)
        let start = Date(timeIntervalSince1970: 1_780_272_000 + 3600)
        _ = try bridge.replaceEngine(config: config, at: start)
        #expect(bridge.state.withLock { $0.engine.handsOverAccounts } == takes)
        bridge.receive("3600", on: "l", every: 10, steps: 0...12, from: start, monotonic: ContinuousClock.now)
        #expect(recorder.pushes.withLock(\.count) >= 2)
        #expect(recorder.accounts.withLock(\.isEmpty) == !takes)
    }

    /// A widget pushed at most every 5 minutes, 3600 W read every 10 s for 10 minutes: the sink
    /// gets the accounts at least once a minute (each 0.01 kWh more per reading), the widget two pushes.
    @Test func accountsReachTheSinksEveryMinuteWhileTheWidgetWaits() throws {
        let config = try DaemonConfig.parse("""
            timezone: UTC
            sources: {load: {topic: l}}
            widgets: {w: {template: flow, flow: {output: {rate: load, total: integrate}}, policy: {min_interval: 5m, settle: 0s, rate_deadband: 10000}}}
            """, file: "c.yaml")
        let zone = try #require(SystemTimeZone(identifier: "UTC"))
        let recorder = Recorder()
        let bridge = Bridge(
            engine: FlowEngine(config: config.flow, zone: zone), config: config, zone: zone, sinks: [recorder], store: nil,
            log: Logger(threshold: .error))
        let start = Date(timeIntervalSince1970: 1_780_272_000 + 3600)
        bridge.receive("3600", on: "l", every: 10, steps: 0...60, from: start, monotonic: ContinuousClock.now)
        let times = recorder.accounts.withLock { $0.map { $0.at.timeIntervalSince(start) } }
        #expect(times.count >= 10, "\(times)")
        for (earlier, later) in zip(times, times.dropFirst()) { #expect(later - earlier <= 70, "\(times)") }
        #expect(recorder.pushes.withLock(\.count) <= 3)
        // 600 s at 3.6 kW: 0.6 kWh, the last at most a reading behind.
        let last = recorder.accounts.withLock { $0.last?.accountsKWh[.output]?[.consumption] } ?? 0
        #expect(last > 0.5 && last <= 0.6 + 1e-9, "\(last)")
    }
}
