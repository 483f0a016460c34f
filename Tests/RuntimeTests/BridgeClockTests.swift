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

extension Bridge {
    /// A bridge for `config` in UTC, without sinks, saving its state in `folder`, logging errors only.
    static func inUTC(_ config: DaemonConfig, savingIn folder: TemporaryFolder) throws -> Bridge {
        let zone = try #require(SystemTimeZone(identifier: "UTC"))
        return Bridge(
            engine: FlowEngine(config: config.flow, zone: zone), config: config, zone: zone, sinks: [],
            store: StateStore(path: folder.url.appendingPathComponent("state.json").path), log: Logger(threshold: .error))
    }

    /// A meter on time: `payload` on `topic` at `start` plus `interval` seconds times each of
    /// `steps`, the monotonic clock (from `monotonic`) advancing with the wall clock.
    func receive(
        _ payload: String, on topic: String, every interval: Double, steps: ClosedRange<Int>, from start: Date, monotonic: ContinuousClock.Instant
    ) {
        for step in steps {
            let seconds = Double(step) * interval
            receive(
                MQTTMessage(topic: topic, payload: Array(payload.utf8)), at: start.addingTimeInterval(seconds),
                monotonic: monotonic.advanced(by: .seconds(seconds)))
        }
    }
}

/// The daemon tells the engine when the wall clock stepped: it compares the wall clock's progress
/// between two ticks with the monotonic clock's.
@Suite struct BridgeClockTests {
    @Test func aWallClockStepBetweenTicksIsToldToTheEngine() throws {
        let folder = TemporaryFolder()
        let config = try DaemonConfig.parse("""
            timezone: UTC
            sources: {grid: {topic: g, stale_after: 1m}}
            widgets: {w: {template: flow, flow: {exchange: {rate: grid}}}}
            """, file: "c.yaml")
        let bridge = try Bridge.inUTC(config, savingIn: folder)
        let start = try #require(RFC3339.parse("2026-06-01T12:00:00Z"))
        let monotonic = ContinuousClock.now
        bridge.state.withLock { _ = $0.engine.receive(topic: "g", payload: Array("500".utf8), at: start) }
        bridge.tick(at: start.addingTimeInterval(1), monotonic: monotonic)
        // One second later by the monotonic clock, an hour and a second by the wall clock.
        bridge.tick(at: start.addingTimeInterval(3602), monotonic: monotonic.advanced(by: .seconds(1)))
        #expect(bridge.state.withLock { $0.engine.readings["grid"]?.at } == start.addingTimeInterval(3600))
        // Ticks that keep pace with the monotonic clock (a second of drift is no step) shift nothing.
        bridge.tick(at: start.addingTimeInterval(3604.5), monotonic: monotonic.advanced(by: .seconds(2)))
        #expect(bridge.state.withLock { $0.engine.readings["grid"]?.at } == start.addingTimeInterval(3600))
    }

    /// NTP steps the clock back an hour and a message arrives before the next tick: the step is
    /// taken first, so the message is on the new timeline and the old reading is an hour older.
    @Test func aStepIsTakenBeforeAMessageThatFollowsIt() throws {
        let folder = TemporaryFolder()
        let config = try DaemonConfig.parse("""
            timezone: UTC
            sources: {grid: {topic: g}, solar: {topic: s}}
            widgets: {w: {template: flow, flow: {inputs: [{rate: solar}], exchange: {rate: grid}}}}
            """, file: "c.yaml")
        let bridge = try Bridge.inUTC(config, savingIn: folder)
        let start = try #require(RFC3339.parse("2026-06-01T12:00:00Z"))
        let monotonic = ContinuousClock.now
        bridge.receive(MQTTMessage(topic: "g", payload: Array("500".utf8)), at: start, monotonic: monotonic)
        bridge.receive(MQTTMessage(topic: "s", payload: Array("900".utf8)), at: start.addingTimeInterval(-3599), monotonic: monotonic.advanced(by: .seconds(1)))
        let readings = bridge.state.withLock { $0.engine.readings }
        #expect(readings["grid"]?.at == start.addingTimeInterval(-3600))
        #expect(readings["solar"]?.at == start.addingTimeInterval(-3599))
        #expect(bridge.state.withLock { $0.engine.clock } == start.addingTimeInterval(-3599))
    }
}
