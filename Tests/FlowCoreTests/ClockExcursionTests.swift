@testable import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// The wall clock goes back to an earlier day and comes forward again (a bad NTP answer, a
/// Raspberry Pi without a real-time clock that boots with an old time): the day in progress goes
/// on, no day is closed under another date, and the readings stamped in the excursion count nothing.
@Suite struct ClockExcursionTests {
    static let midnight = 86_400.0 * 20_600
    static let today = CivilDate(daysSinceEpoch: 20_600)
    /// A load that never turns stale: a few minutes without a reading are bridged, as in a trace.
    static let load = FlowConfig(
        sources: [source("load", "p")],
        widgets: [FlowWidgetConfig(name: "home", output: node("load", total: .integrate, name: "Home"), policy: eager)])

    /// One reading a minute at 3600 W (0.06 kWh a minute) from midnight to noon; the minutes in
    /// `early` are dated `back` seconds before their time.
    static func noon(early: Range<Int>, back: Double) -> EngineHarness {
        var home = EngineHarness(Self.load)
        for minute in 0...720 {
            home.send("p", "3600", at: midnight + Double(minute) * 60 - (early.contains(minute) ? back : 0))
        }
        return home
    }

    /// Back by a day, by three, and by half a day (10:00 to 22:00 the evening before).
    @Test(arguments: [86_400.0, 3 * 86_400, 43_200] as [Double])
    func readingsDatedEarlierInTheMiddleOfTheDayChangeNothing(back: Double) throws {
        let home = Self.noon(early: 600..<603, back: back)
        #expect(home.engine.day?.date == Self.today)
        #expect(home.engine.lastClosedDay == nil)
        #expect(!home.diagnostics.contains { $0.message.contains("closed") }, "\(home.diagnostics)")
        let total = try #require(home.total("output"))
        #expect(abs(total - 720 * 0.06) < 1e-6)
    }

    /// The live path: the daemon sees the step against its monotonic clock, back by a day and
    /// forward again. Nothing is counted across either step, and the day goes on.
    @Test func aStepBackADayAndForwardAgainKeepsTheDay() throws {
        var home = EngineHarness(Self.load)
        func at(_ minute: Int) -> Double { Self.midnight + Double(minute) * 60 }
        for minute in 0..<600 { home.send("p", "3600", at: at(minute)) }
        home.record(home.engine.clockStepped(by: -86_400, at: Date(timeIntervalSince1970: at(600) - 86_400)))
        for minute in 600..<603 { home.send("p", "3600", at: at(minute) - 86_400) }
        home.record(home.engine.clockStepped(by: 86_400, at: Date(timeIntervalSince1970: at(603))))
        for minute in 603...720 { home.send("p", "3600", at: at(minute)) }
        #expect(home.engine.day?.date == Self.today)
        #expect(home.engine.lastClosedDay == nil)
        #expect(!home.diagnostics.contains { $0.message.contains("closed") }, "\(home.diagnostics)")
        #expect(home.diagnostics.contains { $0.message.contains("the day \(Self.today) goes on") }, "\(home.diagnostics)")
        // Minutes 0–599 and 603–720: the four minutes around the steps count nothing.
        #expect(abs(try #require(home.total("output")) - (720 - 4) * 0.06) < 1e-6)
    }

    /// A restart whose first events carry an old time (no real-time clock, NTP not yet answered):
    /// the restored day is kept, and goes on once the clock is right.
    @Test func aRestartUnderAnOldClockKeepsTheRestoredDay() throws {
        let before = Self.noon(early: 0..<0, back: 0)
        var home = EngineHarness(Self.load)
        try home.engine.restore(before.engine.snapshot())
        for second in stride(from: 0.0, through: 120, by: 10) { home.send("p", "3600", at: Self.midnight - 86_400 * 200 + second) }
        for minute in 722...780 { home.send("p", "3600", at: Self.midnight + Double(minute) * 60) }
        #expect(home.engine.day?.date == Self.today)
        #expect(home.engine.lastClosedDay == nil)
        #expect(!home.diagnostics.contains { $0.message.contains("closed") }, "\(home.diagnostics)")
        // The noon total and the hour since: the readings under the old clock counted nothing.
        #expect(abs(try #require(home.total("output")) - 780 * 0.06) < 1e-6)
    }

    /// A clock that stays back past the hold was wrong before: the day counts on under the
    /// earlier date, as for a clock that ran ahead across midnight.
    @Test func anExcursionThatLastsIsBelieved() {
        var home = EngineHarness(Self.load)
        for minute in 0...10 { home.send("p", "3600", at: Self.midnight + Double(minute) * 60) }
        let back = Self.midnight - 86_400 + 36_000
        for minute in 0...61 { home.send("p", "3600", at: back + Double(minute) * 60) }
        #expect(home.engine.day?.date == CivilDate(daysSinceEpoch: 20_599))
        #expect(home.diagnostics.contains { $0.message.contains("the clock went back to before \(Self.today)") })
        #expect(home.engine.lastClosedDay == nil)
    }
}

@Suite struct ExcursionVerdictTests {
    typealias Verdict = EventTimeline.Verdict

    /// Event times (seconds) in a day from 0 to 86 400 s, jumps up to 300 s taken as ordinary.
    @Test(arguments: [
        ([43_200, -43_200, -43_140, 43_260], [Verdict.onTime, .late, .late, .onTime]),  // back a day and again
        ([43_200, -43_200, -39_600], [.onTime, .late, .stepped(from: Date(timeIntervalSince1970: 43_200))]),  // held an hour: believed
        ([100, -100, -90], [.onTime, .late, .stepped(from: Date(timeIntervalSince1970: 100))]),  // ran ahead across midnight: a step
        ([-43_200, -43_140, 600], [.late, .late, .onTime]),  // a restored day, an old clock at the start
    ] as [([Double], [Verdict])])
    func verdicts(times: [Double], expected: [Verdict]) {
        let day = LocalDay(date: CivilDate(daysSinceEpoch: 0), start: Date(timeIntervalSince1970: 0), end: Date(timeIntervalSince1970: 86_400))
        var timeline = EventTimeline()
        var verdicts: [Verdict] = []
        for seconds in times {
            let time = Date(timeIntervalSince1970: seconds)
            let verdict = timeline.classify(time, day: day, jumpSeconds: 300)
            timeline.take(time, verdict)
            verdicts.append(verdict)
        }
        #expect(verdicts == expected)
    }
}
