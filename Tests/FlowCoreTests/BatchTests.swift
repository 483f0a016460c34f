@testable import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// A backlog read in one go (`FlowEngine.endBatch`): every reading is taken, the widgets are
/// offered once at the batch's end, and a widget waits no longer than `batchWaitSeconds`.
@Suite struct BatchTests {
    /// A reading: topic, payload, seconds after `afternoon`.
    typealias Reading = (topic: String, payload: String, at: Double)

    /// The flow beside the battery bar (`ProgressWidgetTests.home`), every change pushed at once.
    static let home = ProgressWidgetTests.home([ProgressWidgetTests.battery()])

    /// The morning before each batch, taken reading by reading.
    static let morning: [Reading] = [("pv", "1400", 0), ("grid", "200", 0.01), ("bat", "600", 0.02), ("soc", "50", 0.03)]

    /// Backlogs of one moment, 10 ms apart from 10 s on.
    static let backlogs: [(name: String, readings: [Reading])] = [
        ("every meter once", [("pv", "1500", 10), ("grid", "150", 10.01), ("bat", "700", 10.02), ("soc", "51", 10.03)]),
        ("the grid turning to export and back", [("grid", "-300", 10), ("grid", "-200", 10.01), ("grid", "100", 10.02)]),
        ("the battery turning to drain", [("bat", "-400", 10), ("pv", "0", 10.01), ("soc", "49", 10.02)]),
        ("one meter many times", (0..<9).map { ("pv", "\(1400 + 10 * $0)", 10 + 0.01 * Double($0)) }),
    ]

    static func send(_ readings: [Reading], to home: inout EngineHarness, inBatch: Bool) {
        for reading in readings { home.send(reading.topic, reading.payload, at: afternoon + reading.at, inBatch: inBatch) }
    }

    /// The batch pushes nothing until it ends, then each widget once, and leaves the engine where
    /// the same readings taken one by one leave it: the documents shown, every total and baseline.
    @Test(arguments: backlogs.indices)
    func aBacklogIsOnePushPerWidgetAndTheSameDayAsReadingByReading(_ index: Int) {
        var plain = EngineHarness(Self.home)
        var batched = EngineHarness(Self.home)
        Self.send(Self.morning, to: &plain, inBatch: false)
        Self.send(Self.morning, to: &batched, inBatch: false)
        let before = batched.pushes.count
        Self.send(Self.backlogs[index].readings, to: &plain, inBatch: false)
        Self.send(Self.backlogs[index].readings, to: &batched, inBatch: true)
        #expect(batched.pushes.count == before, "nothing goes out within the batch")
        batched.endBatch()
        let pushed = batched.pushes.dropFirst(before).map(\.widget)
        #expect(pushed.count == Set(pushed).count, "one push per widget: \(pushed)")
        #expect(pushed.contains("power"))
        #expect(batched.engine.deliveredContent == plain.engine.deliveredContent)
        #expect(batched.engine.snapshot() == plain.engine.snapshot())
        ProgressWidgetTests.expectValid(batched)
    }

    /// Milliseconds after `afternoon`.
    static func milliseconds(_ date: Date) -> Double { ((date.timeIntervalSince1970 - afternoon) * 1000).rounded() }

    /// Readings of one batch, seconds after `afternoon`; the times of the pushes within it, each
    /// at the limit of a wait (the batch's end pushes what still waits).
    @Test(arguments: [
        ([0, 0.05, 0.11, 0.15, 0.2, 0.26], [0.1, 0.21]),
        ([0, 0.05, 0.099], []),
        ([0, 0.3, 0.35], [0.1]),
        ([0], []),
    ])
    func aWidgetWaitsForTheBatchAtMostTheWaitLimit(times: [Double], pushedAt: [Double]) {
        let config = FlowConfig(sources: [source("grid", "g")], widgets: [FlowWidgetConfig(name: "w", exchange: node("grid"), policy: eager)])
        var meter = EngineHarness(config)
        for (index, time) in times.enumerated() { meter.send("g", "\(1000 + index)", at: afternoon + time, inBatch: true) }
        #expect(meter.pushes.map { Self.milliseconds($0.at) } == pushedAt.map { $0 * 1000 })
        let waited = times.last! > (pushedAt.last ?? -1)
        meter.endBatch()
        #expect(meter.pushes.count == pushedAt.count + (waited ? 1 : 0))
        #expect(meter.rate("exchange") == Double(1000 + times.count - 1))
        #expect(meter.pushes.last.map { Self.milliseconds($0.at) } == times.last! * 1000)
    }

    /// A batch's end with nothing waiting says nothing: before any reading, after readings taken
    /// one by one, and a second time.
    @Test func anEndWithNothingWaitingPushesNothing() {
        var home = EngineHarness(Self.home)
        home.endBatch()
        #expect(home.pushes.isEmpty && home.diagnostics.isEmpty)
        Self.send(Self.morning, to: &home, inBatch: false)
        let count = home.pushes.count
        home.endBatch()
        home.send("pv", "900", at: afternoon + 1, inBatch: true)
        home.endBatch()
        home.endBatch()
        #expect(home.pushes.count == count + 1)
    }

    /// A widget waits no longer than the limit while a flood moves only another one: its wait is
    /// a deadline of its own, not only checked at its next reading.
    @Test func aWidgetLeftWaitingByAFloodOfAnotherGoesOutAtTheLimit() {
        var home = EngineHarness(twoMeterConfig("flooded", "quiet"))
        home.send("b", "300", at: afternoon, inBatch: true)
        for step in 1...50 { home.send("a", "\(1000 + step)", at: afternoon + 0.01 * Double(step), inBatch: true) }
        let quiet = home.pushes(of: "quiet")
        #expect(quiet.count == 1, "\(quiet.map { Self.milliseconds($0.at) })")
        #expect(quiet.first.map { Self.milliseconds($0.at) } == 100)
        #expect(quiet.first?.push.document.json["flow"]?["exchange"]?["rate"] == 300)
        // The flooded widget goes out at its own limits meanwhile, about every 0.1 s.
        #expect((4...6).contains(home.pushes(of: "flooded").count), "\(home.pushes(of: "flooded").map { Self.milliseconds($0.at) })")
    }
}
