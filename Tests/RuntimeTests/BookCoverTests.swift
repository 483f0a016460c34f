import Configuration
import DayBook
import FlowCore
import Foundation
import Mosquitto
import Persistence
import Platform
@testable import Runtime
import TestSupport
import Testing

/// The day book takes a closed slot only once a state on disk holds the day: a first start killed
/// after the book took its first slots, but before its first save, would start the day afresh,
/// and the slots from there to the restart would never be closed (a hole in the book, and slots
/// whose energy no day row counts).
@Suite struct BookCoverTests {
    static let config = """
        timezone: UTC
        sources:
          grid: {topic: grid/power}
        widgets:
          power:
            template: flow
            flow:
              exchange: {name: Grid, rate: grid, total: import}
        """

    @Test func theBookWaitsForTheFirstSaveOfTheDay() throws {
        let folder = TemporaryFolder()
        let config = try DaemonConfig.parse(Self.config, file: "t.yaml")
        let bridge = try Bridge.inUTC(config, savingIn: folder)
        let start = try #require(RFC3339.parse("2026-06-01T10:00:00Z"))
        let monotonic = ContinuousClock.now
        // 10:00 to 10:20, a reading a minute: the slot of 10:00 closes at 10:15.
        bridge.receive("1000", on: "grid/power", every: 60, steps: 0...20, from: start, monotonic: monotonic)
        #expect(bridge.state.withLock { $0.book.slots.count } == 1)
        #expect(bridge.bookWaiting().isEmpty, "no state on disk holds the day yet")
        #expect(bridge.flush(at: start.addingTimeInterval(1200)))
        #expect(bridge.bookWaiting().slots.count == 1)

        // A start that restored the day may give the book what it closes at once.
        var engine = FlowEngine(config: config.flow, zone: try #require(SystemTimeZone(identifier: "UTC")))
        try engine.restore(try #require(savedState(folder.url.appendingPathComponent("state.json").path)))
        let restarted = Bridge(
            engine: engine, config: config, zone: try #require(SystemTimeZone(identifier: "UTC")), sinks: [],
            store: StateStore(path: folder.url.appendingPathComponent("state.json").path), book: BookQueue(), log: Logger(threshold: .error))
        restarted.receive(
            MQTTMessage(topic: "grid/power", payload: Array("1000".utf8)), at: start.addingTimeInterval(1860), monotonic: monotonic.advanced(by: .seconds(1860)))
        #expect(restarted.bookWaiting().slots.count == 1, "the slot of 10:15 closed again at 10:31")
    }
}
