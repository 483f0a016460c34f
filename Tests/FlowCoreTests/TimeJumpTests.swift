@testable import FlowCore
import FoundationEssentials
import TestSupport
import Testing

@Suite struct EventTimelineTests {
    typealias Verdict = EventTimeline.Verdict

    /// Event times (seconds) and the verdict each gets, with the day ending at 1000 s and jumps up
    /// to 300 s taken as ordinary.
    @Test(arguments: [
        ([0, 10, 20], [Verdict.onTime, .onTime, .onTime]),
        ([0, 10, -50, 20], [.onTime, .onTime, .late, .onTime]),  // one line out of order
        ([0, 10, -50, -40], [.onTime, .onTime, .late, .stepped(from: Date(timeIntervalSince1970: 10))]),  // a step back, confirmed
        ([900, 1100], [.onTime, .onTime]),  // midnight in a continuous stream
        ([0, 5000, 20], [.onTime, .ahead(first: true), .onTime]),  // one line from tomorrow
        ([0, 5000, 5000, 30], [.onTime, .ahead(first: true), .ahead(first: false), .onTime]),  // tick(through:) then receive
        ([0, 5000, 5010, 5020], [.onTime, .ahead(first: true), .stepped(from: Date(timeIntervalSince1970: 0)), .onTime]),  // confirmed
        ([0, 800], [.onTime, .onTime]),  // a long silence within the day
        ([0, 10, 9.5, 9.6], [.onTime, .onTime, .onTime, .onTime]),  // a moment apart: simultaneous
    ] as [([Double], [Verdict])])
    func verdicts(times: [Double], expected: [Verdict]) {
        var timeline = EventTimeline()
        var verdicts: [Verdict] = []
        for seconds in times {
            let time = Date(timeIntervalSince1970: seconds)
            let day = LocalDay(date: CivilDate(daysSinceEpoch: 0), start: Date(timeIntervalSince1970: 1000 - 86_400), end: Date(timeIntervalSince1970: 1000))
            let verdict = timeline.classify(time, day: day, jumpSeconds: 300)
            timeline.take(time, verdict)
            verdicts.append(verdict)
        }
        #expect(verdicts == expected)
    }
}

@Suite struct TimeJumpTests {
    static let midnight = 86_400.0 * 20_600

    static let load = FlowConfig(
        sources: [source("load", "p", staleAfter: 60)],
        widgets: [FlowWidgetConfig(name: "home", output: node("load", total: .integrate, name: "Home"), policy: eager)])

    @Test func aReadingOutOfOrderCountsNoEnergyButMayShow() {
        var home = EngineHarness(Self.load)
        let t0 = Self.midnight + 36_000
        home.send("p", "3600", at: t0)
        home.send("p", "3600", at: t0 + 10)
        home.send("p", "1800", at: t0 - 60)  // late
        #expect(abs(home.total("output")! - 0.01) < 1e-9)
        #expect(home.rate("output") == 3600)  // older than the reading the source has: not taken
        home.send("p", "3600", at: t0 + 20)
        #expect(abs(home.total("output")! - 0.02) < 1e-9)
    }

    /// A meter's message delayed past another's: it shows, as of the latest event, and counts nothing.
    @Test func aLateReadingShowsAsOfTheLatestEvent() {
        let config = FlowConfig(
            sources: [source("load", "p"), source("pv", "s")],
            widgets: [FlowWidgetConfig(name: "home", inputs: [node("pv", total: .integrate)], output: node("load"), policy: eager)])
        var home = EngineHarness(config)
        let t0 = Self.midnight + 36_000
        home.send("p", "3600", at: t0)
        home.send("p", "3600", at: t0 + 10)
        home.send("s", "500", at: t0 - 5)
        #expect(home.rate("inputs") == 500)
        #expect(home.pushes.last?.at == Date(timeIntervalSince1970: t0 + 10))
        #expect(home.total("inputs") == 0)
    }

    @Test func aClockStepAheadCountsNoEnergyAcrossItAndAgesNothing() {
        var home = EngineHarness(Self.load)
        let t0 = Self.midnight + 36_000
        home.send("p", "3600", at: t0)
        home.send("p", "3600", at: t0 + 10)
        home.record(home.engine.clockStepped(by: 3600, at: Date(timeIntervalSince1970: t0 + 3611)))
        #expect(home.engine.readings["load"]?.at == Date(timeIntervalSince1970: t0 + 3610))
        #expect(home.diagnostics.filter { $0.message.contains("the system clock stepped ahead by 60 min") }.count == 1)
        #expect(home.shown?["flow"]?["output"]?["color"] == nil)  // 1 s old, not an hour: not stale
        home.send("p", "3600", at: t0 + 3620)
        #expect(abs(home.total("output")! - 0.01) < 1e-9)  // nothing across the step
        home.send("p", "3600", at: t0 + 3630)
        #expect(abs(home.total("output")! - 0.02) < 1e-9)
    }

    @Test func aClockStepAheadPastMidnightClosesTheDay() throws {
        var home = EngineHarness(Self.load)
        for t in stride(from: Self.midnight - 600, through: Self.midnight - 300, by: 10) { home.send("p", "3600", at: t) }
        home.record(home.engine.clockStepped(by: 7200, at: Date(timeIntervalSince1970: Self.midnight + 6900)))
        let closed = try #require(home.engine.lastClosedDay)
        #expect(closed.date == CivilDate(daysSinceEpoch: 20_599))
        #expect(abs(closed.totalsKWh["home/output"]! - 0.3) < 1e-9)
        #expect(home.total("output") == 0)
    }

    @Test func aClockStepBackPastMidnightCountsOnUnderTheEarlierDate() {
        var home = EngineHarness(Self.load)
        home.send("p", "3600", at: Self.midnight + 30)
        home.send("p", "3600", at: Self.midnight + 40)
        home.record(home.engine.clockStepped(by: -120, at: Date(timeIntervalSince1970: Self.midnight - 79)))
        #expect(home.engine.day?.date == CivilDate(daysSinceEpoch: 20_599))
        #expect(home.diagnostics.contains { $0.message.contains("the clock went back to before \(CivilDate(daysSinceEpoch: 20_600))") })
        home.send("p", "3600", at: Self.midnight - 70)
        home.send("p", "3600", at: Self.midnight - 60)
        #expect(abs(home.total("output")! - 0.02) < 1e-9)  // the 10 s before the step, and the 10 s after it
    }

    /// A clock that ran two minutes ahead closed the day early, and NTP steps it back across
    /// midnight: the closed day is in the book and stays as it closed (closed again at the clock's
    /// next midnight, it would hold only the two minutes since); what flows meanwhile counts in the
    /// day in progress.
    @Test func aClockStepBackIntoAClosedDayCountsOnUnderTheDayInProgress() throws {
        var home = EngineHarness(Self.load)
        for t in stride(from: Self.midnight - 600, through: Self.midnight + 60, by: 10) { home.send("p", "3600", at: t) }
        let closed = try #require(home.engine.lastClosedDay)
        #expect(closed.date == CivilDate(daysSinceEpoch: 20_599))
        #expect(abs(closed.totalsKWh["home/output"]! - 0.6) < 1e-9)
        home.record(home.engine.clockStepped(by: -120, at: Date(timeIntervalSince1970: Self.midnight - 60)))
        #expect(home.engine.day?.date == CivilDate(daysSinceEpoch: 20_600))
        #expect(home.diagnostics.contains { $0.message.contains("into \(CivilDate(daysSinceEpoch: 20_599)), which is closed; the totals count on as \(CivilDate(daysSinceEpoch: 20_600))") })
        for t in stride(from: Self.midnight - 50, through: Self.midnight + 120, by: 10) { home.send("p", "3600", at: t) }
        #expect(home.closedDays.map(\.date) == [CivilDate(daysSinceEpoch: 20_599)])
        #expect(home.engine.lastClosedDay == closed)
        #expect(home.engine.day?.date == CivilDate(daysSinceEpoch: 20_600))
        // The minute before the step, and from the first reading after it on: 6 + 17 steps of 10 s at 3,600 W.
        #expect(abs(home.total("output")! - 0.23) < 1e-9)
    }

    /// The same after a restart: a state saved just after midnight, read back under a clock a few
    /// minutes behind it (a board without a real-time clock, its time restored from before
    /// midnight). The date closed last is saved with the day.
    @Test func aRestartUnderAClockBehindAClosedMidnightKeepsTheDay() throws {
        var before = EngineHarness(Self.load)
        for t in stride(from: Self.midnight - 600, through: Self.midnight + 60, by: 10) { before.send("p", "3600", at: t) }
        let state = before.engine.snapshot()
        #expect(state["closed_through"] == .string(CivilDate(daysSinceEpoch: 20_599).description))
        var after = EngineHarness(Self.load)
        try after.engine.restore(state)
        for t in stride(from: Self.midnight - 120, through: Self.midnight + 120, by: 10) { after.send("p", "3600", at: t) }
        #expect(after.closedDays.isEmpty)
        #expect(after.engine.day?.date == CivilDate(daysSinceEpoch: 20_600))
        #expect(after.engine.snapshot()["closed_through"] == state["closed_through"])
    }

    /// The daemon's tick thread read the clock just after midnight and took the lock first; the
    /// message thread read it a moment before midnight. Simultaneous: no clock went back, and the
    /// closed day stays closed.
    @Test func aMessageAMomentBeforeATickIsOnTime() throws {
        var home = EngineHarness(Self.load)
        home.send("p", "3600", at: Self.midnight - 20)
        home.record(home.engine.tick(at: Date(timeIntervalSince1970: Self.midnight + 0.002)))
        home.record(home.engine.receive(topic: "p", payload: Array("3600".utf8), at: Date(timeIntervalSince1970: Self.midnight - 0.001)))
        #expect(!home.diagnostics.contains { $0.message.contains("clock") }, "\(home.diagnostics)")
        #expect(home.engine.day?.date == CivilDate(daysSinceEpoch: 20_600))
        let closed = try #require(home.engine.lastClosedDay)
        #expect(abs(closed.totalsKWh["home/output"]! - 0.02) < 1e-9)
        home.send("p", "3600", at: Self.midnight + 10)
        #expect(abs(home.total("output")! - 0.01) < 1e-6)
    }

    /// A line from tomorrow is ignored, whether it comes through `tick(through:)` or `receive`.
    @Test func oneEventFromTomorrowClosesNothing() {
        var home = EngineHarness(Self.load)
        let t0 = Self.midnight + 36_000
        home.send("p", "3600", at: t0)
        home.send("p", "3600", at: t0 + 10)
        home.send("p", "999", at: t0 + 86_400 + 20)
        #expect(home.engine.lastClosedDay == nil)
        #expect(home.rate("output") == 3600)
        #expect(home.diagnostics.filter { $0.message.contains("on a later day: ignored unless the next events confirm") }.count == 1)
        home.send("p", "3600", at: t0 + 30)
        #expect(abs(home.total("output")! - 0.03) < 1e-9)
    }
}
