@testable import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// Progress widgets beside a flow widget: the battery bar with its self-advancing window, the day's
/// self-sufficiency and production goal, all from the flow widget's state.
@Suite struct ProgressWidgetTests {
    /// Every change at once, in whole percent, 10 W rates with a 20 W deadband.
    static let policy = PatchPolicyConfig(minIntervalSeconds: 0, rateStep: 10, rateDeadband: 20, totalStep: 0.1, levelStep: 1, settleSeconds: 0)

    /// A home with solar, a battery (+ filling) with its level, and a grid; the bars beside it.
    static func home(
        _ bars: [ProgressWidgetConfig], policy: PatchPolicyConfig = policy, batteryStaleAfter: Double? = nil
    ) -> FlowConfig {
        FlowConfig(
            sources: [
                source("solar", "pv"), source("grid", "grid"), source("battery", "bat", staleAfter: batteryStaleAfter),
                source("soc", "soc", unit: .percent),
            ],
            widgets: [
                FlowWidgetConfig(
                    name: "power", inputs: [node("solar", total: .integrate, name: "Solar")],
                    output: node("balance", total: .integrate, name: "Home"),
                    storage: node("battery", total: .charged, level: "soc", name: "Battery"),
                    exchange: node("grid", total: .imported, name: "Grid"), policy: policy)
            ],
            progressWidgets: bars)
    }

    static func battery(capacity: Double? = 10, policy: PatchPolicyConfig = policy) -> ProgressWidgetConfig {
        ProgressWidgetConfig(name: "battery", measure: .battery(BatteryGauge(capacityKWh: capacity)), policy: policy)
    }

    /// Every document a widget was pushed passes the spec's rules at its push time.
    static func expectValid(_ home: EngineHarness, sourceLocation: SourceLocation = #_sourceLocation) {
        for (at, _, push) in home.pushes {
            #expect(push.document.validate(now: at).isEmpty, "\(push.document.json)", sourceLocation: sourceLocation)
        }
    }

    /// The fraction a window gives at `now`, as a phone that understands the dates draws it.
    static func fraction(_ content: ProgressContent, at now: Date) throws -> Double {
        let start = try #require(content.startDate.flatMap(RFC3339.parse))
        let end = try #require(content.endDate.flatMap(RFC3339.parse))
        return now.timeIntervalSince(start) / end.timeIntervalSince(start)
    }

    struct ChargeCase: Sendable, CustomTestStringConvertible {
        var levelPercent: Double
        var rateW: Double
        var capacityKWh: Double
        /// (100 − level) % of the capacity at the rate.
        var secondsToFull: Double
        var fullIn: String
        var testDescription: String { "\(levelPercent) % at \(rateW) W of \(capacityKWh) kWh" }
    }

    @Test(arguments: [
        ChargeCase(levelPercent: 76, rateW: 1000, capacityKWh: 10, secondsToFull: 8640, fullIn: "2 h 24 min"),
        ChargeCase(levelPercent: 5, rateW: 3000, capacityKWh: 13.5, secondsToFull: 15_390, fullIn: "4 h 17 min"),
        ChargeCase(levelPercent: 99, rateW: 250, capacityKWh: 5, secondsToFull: 720, fullIn: "12 min"),
        ChargeCase(levelPercent: 0, rateW: 800, capacityKWh: 2.4, secondsToFull: 10_800, fullIn: "3 h"),
    ])
    func aChargingBatterysWindowGivesTheLevelNowAndEndsWhenFull(_ test: ChargeCase) throws {
        var home = EngineHarness(Self.home([Self.battery(capacity: test.capacityKWh)]))
        home.send("soc", JSONValue.format(test.levelPercent), at: afternoon)
        home.send("bat", JSONValue.format(test.rateW), at: afternoon + 0.5)
        let (at, push) = try #require(home.pushes(of: "battery").last)
        let bar = try #require(home.progress("battery"))
        #expect(bar.value == test.levelPercent / 100)
        #expect(bar.trend == .up)
        #expect(abs(try Self.fraction(bar, at: at) - test.levelPercent / 100) < 1e-4)
        let end = try #require(bar.endDate.flatMap(RFC3339.parse))
        #expect(abs(end.timeIntervalSince(at) - test.secondsToFull) <= 1)
        #expect(bar.statRows?.first == StatRow(label: "Charging", value: JSONValue.format(test.rateW), unit: "W"))
        #expect(bar.statRows?.last == StatRow(label: "Full in", value: test.fullIn))
        #expect(push.patch["start_date"] != nil && push.patch["end_date"] != nil)
        Self.expectValid(home)
    }

    /// A battery whose level follows its rate keeps the window it was sent: pushes for the rows and
    /// for each level step carry no new dates. The rate past its deadband makes a new window; a
    /// rate within it changes nothing at all.
    @Test func theWindowStaysWhileItTellsTheTruth() throws {
        var home = EngineHarness(Self.home([Self.battery()]))
        // 1000 W into 10 kWh: 1 % every 360 s, from 50 %.
        for minute in 0...30 {
            let t = afternoon + Double(minute) * 60
            home.send("bat", minute % 2 == 0 ? "1004" : "996", at: t)
            home.send("soc", "\(50 + minute / 6)", at: t + 0.5)
        }
        let pushes = home.pushes(of: "battery")
        let first = try #require(pushes.first)
        let bar = try #require(home.progress("battery"))
        #expect(bar.value == 0.55)
        guard case .progress(let firstBar) = first.push.document else { throw Unexpected() }
        #expect(bar.startDate == firstBar.startDate && bar.endDate == firstBar.endDate)
        #expect(pushes.dropFirst().allSatisfy { $0.push.patch["start_date"] == nil && $0.push.patch["end_date"] == nil })
        // A step of the level, a step of the day's charge (0.1 kWh every 6 minutes): no more pushes.
        #expect(pushes.count <= 1 + 5 + 5, "\(pushes.count) pushes in 30 minutes")
        #expect(abs(try Self.fraction(bar, at: pushes.last!.at) - 0.55) < 0.01)

        // Within the deadband: nothing to send.
        let before = pushes.count
        home.send("bat", "1010", at: afternoon + 1900)
        #expect(home.pushes(of: "battery").count == before)

        // Twice the rate: a new window that ends when the battery is full at 2000 W.
        home.send("bat", "2000", at: afternoon + 1920)
        let (at, push) = try #require(home.pushes(of: "battery").last)
        #expect(push.patch["start_date"] != nil && push.patch["end_date"] != nil)
        let faster = try #require(home.progress("battery"))
        let end = try #require(faster.endDate.flatMap(RFC3339.parse))
        #expect(abs(end.timeIntervalSince(at) - 0.45 * 18_000) <= 1)
        #expect(abs(try Self.fraction(faster, at: at) - 0.55) < 1e-4)
        Self.expectValid(home)
    }

    /// Between two readings of the level the window is the better guess: time passing alone sends
    /// nothing. A level read a step away from where the window has the bar makes a new window,
    /// true at its push time.
    @Test func aLevelThatStraysAStepFromTheWindowMakesANewOne() throws {
        var home = EngineHarness(Self.home([Self.battery()]))
        home.send("soc", "50", at: afternoon)
        home.send("bat", "1000", at: afternoon)
        let first = try #require(home.progress("battery"))
        let windowed = home.pushes(of: "battery").count
        // 20 minutes of the battery alone, no level: the window has the bar at 53 % by then.
        for minute in 1...20 { home.send("bat", "1000", at: afternoon + Double(minute) * 60) }
        home.run(until: afternoon + 1250)
        #expect(home.progress("battery")?.startDate == first.startDate)
        #expect(home.pushes(of: "battery").dropFirst(windowed).allSatisfy { $0.push.patch["start_date"] == nil })
        // The battery says 53 %: as the window has it. Then, ten minutes on, still 53 %: a step behind.
        home.send("soc", "53", at: afternoon + 1260)
        #expect(home.progress("battery")?.startDate == first.startDate)
        home.send("soc", "53", at: afternoon + 1860)
        let (at, push) = try #require(home.pushes(of: "battery").last)
        #expect(at == Date(timeIntervalSince1970: afternoon + 1860))
        #expect(push.patch["start_date"] != nil)
        let bar = try #require(home.progress("battery"))
        #expect(abs(try Self.fraction(bar, at: at) - 0.53) < 1e-4)
        Self.expectValid(home)
    }

    /// A level published only when it changes can be old when the battery starts charging: the
    /// window is made for it at the push, and kept until the level is read again.
    @Test func anOldLevelKeepsTheWindowMadeForIt() throws {
        var home = EngineHarness(Self.home([Self.battery()]))
        home.send("soc", "50", at: afternoon)
        home.send("bat", "0", at: afternoon)
        home.send("bat", "1000", at: afternoon + 1200)
        let (at, _) = try #require(home.pushes(of: "battery").last)
        let first = try #require(home.progress("battery"))
        #expect(abs(try Self.fraction(first, at: at) - 0.5) < 1e-4)
        for minute in 21...40 { home.send("bat", "1000", at: afternoon + Double(minute) * 60) }
        #expect(home.progress("battery")?.startDate == first.startDate)
        #expect(home.pushes(of: "battery").filter { $0.push.patch["start_date"] != nil }.count == 1)
    }

    /// A clock-driven bar can only rise: draining sends no dates and clears the ones sent, with
    /// `null`, as soon as it has settled (not at the end of `min_interval`); so does idling.
    @Test func drainingOrIdleSendsNoDatesAndClearsThoseSent() throws {
        let slow = PatchPolicyConfig(minIntervalSeconds: 600, rateStep: 10, rateDeadband: 20, totalStep: 0.1, levelStep: 1, settleSeconds: 2)
        var home = EngineHarness(Self.home([Self.battery(policy: slow)], policy: slow))
        home.send("soc", "60", at: afternoon)
        home.send("bat", "1500", at: afternoon)
        home.run(until: afternoon + 5)
        #expect(home.progress("battery")?.startDate != nil)

        home.send("bat", "-500", at: afternoon + 30)
        home.run(until: afternoon + 40)
        let (at, push) = try #require(home.pushes(of: "battery").last)
        #expect(at == Date(timeIntervalSince1970: afternoon + 32))
        #expect(push.patch["start_date"] == .null)
        #expect(push.patch["end_date"] == .null)
        #expect(push.patch["trend"] == "down")
        let bar = try #require(home.progress("battery"))
        #expect(bar.value == 0.6)
        // 60 % of 10 kWh at 500 W: 12 h.
        #expect(bar.statRows?.map(\.label) == ["Draining", "Charged today", "Empty in"])
        #expect(bar.statRows?.last?.value == "12 h")

        home.send("bat", "1200", at: afternoon + 700)
        home.run(until: afternoon + 710)
        #expect(home.progress("battery")?.startDate != nil)
        home.send("bat", "0", at: afternoon + 1400)
        home.run(until: afternoon + 1410)
        let idle = try #require(home.progress("battery"))
        #expect(idle.trend == .flat)
        #expect(idle.startDate == nil && idle.endDate == nil)
        #expect(home.pushes(of: "battery").last?.push.patch["start_date"] == .null)
        #expect(idle.statRows?.first == StatRow(label: "Idle", value: "0", unit: "W"))
        Self.expectValid(home)
    }

    /// Rates unrounded (`rate_step: 0`, `rate_deadband: 0`): a battery at 0 W is idle, neither
    /// charging nor draining, and has no time to full or empty.
    @Test func withoutAStepOrADeadbandZeroIsIdle() throws {
        let exact = PatchPolicyConfig(minIntervalSeconds: 0, rateStep: 0, rateDeadband: 0, totalStep: 0.1, levelStep: 1, settleSeconds: 0)
        var home = EngineHarness(Self.home([Self.battery(policy: exact)], policy: exact))
        home.send("soc", "40", at: afternoon)
        home.send("bat", "-300", at: afternoon + 1)
        home.send("bat", "0", at: afternoon + 2)
        let bar = try #require(home.progress("battery"))
        #expect(bar.trend == .flat)
        #expect(bar.statRows?.map(\.label) == ["Idle", "Charged today"])
        #expect(bar.startDate == nil && bar.endDate == nil)
        home.send("bat", "0.5", at: afternoon + 3)
        #expect(home.progress("battery")?.trend == .up)
        Self.expectValid(home)
    }

    /// A window whose end would be more than 366 days ahead is not sent; the value still is.
    @Test func aWindowBeyondTheSpecsBoundsIsNotSent() throws {
        var home = EngineHarness(Self.home([Self.battery(capacity: 1_000_000)]))
        home.send("soc", "40", at: afternoon)
        home.send("bat", "30", at: afternoon)
        let bar = try #require(home.progress("battery"))
        #expect(bar.value == 0.4)
        #expect(bar.trend == .up)
        #expect(bar.startDate == nil && bar.endDate == nil)
        Self.expectValid(home)
    }

    struct UnboundedCase: Sendable, CustomTestStringConvertible {
        var rateStep: Double
        var rateDeadband: Double
        var capacityKWh: Double
        var batteryW: String
        var trend: ProgressContent.Trend
        var testDescription: String { "\(batteryW) W into \(capacityKWh) kWh, rate_step \(rateStep), rate_deadband \(rateDeadband)" }
    }

    /// Rates unrounded (`rate_step: 0`, `rate_deadband: 0`) and a battery that reads a hair above
    /// 0 W, or an absurd capacity: the time to full is endless or beyond any date. The bar still
    /// goes out, valid, without a window.
    @Test(arguments: [
        UnboundedCase(rateStep: 0, rateDeadband: 0, capacityKWh: 10, batteryW: "1e-300", trend: .up),
        UnboundedCase(rateStep: 0, rateDeadband: 0, capacityKWh: 10, batteryW: "5e-324", trend: .up),
        UnboundedCase(rateStep: 10, rateDeadband: 20, capacityKWh: 1e12, batteryW: "30", trend: .up),
    ])
    func anEndlessTimeToFullSendsTheBarWithoutAWindow(_ test: UnboundedCase) throws {
        let policy = PatchPolicyConfig(
            minIntervalSeconds: 0, rateStep: test.rateStep, rateDeadband: test.rateDeadband, totalStep: 0.1, levelStep: 1, settleSeconds: 0)
        var home = EngineHarness(Self.home([Self.battery(capacity: test.capacityKWh, policy: policy)], policy: policy))
        home.send("soc", "40", at: afternoon)
        home.send("bat", test.batteryW, at: afternoon + 1)
        let bar = try #require(home.progress("battery"))
        #expect(bar.value == 0.4)
        #expect(bar.trend == test.trend)
        #expect(bar.startDate == nil && bar.endDate == nil)
        Self.expectValid(home)
    }

    /// Without a capacity: the level, the trend and the rows, no time and no window.
    @Test func withoutACapacityTheBarShowsLevelTrendAndRows() throws {
        var home = EngineHarness(Self.home([Self.battery(capacity: nil)]))
        home.send("soc", "76", at: afternoon)
        home.send("bat", "800", at: afternoon)
        let bar = try #require(home.progress("battery"))
        #expect(bar.json == [
            "template": "progress", "value": 0.76, "trend": "up",
            "stat_rows": [["label": "Charging", "value": "800", "unit": "W"], ["label": "Charged today", "value": "0", "unit": "kWh"]],
        ])
    }

    /// A battery bar with a rate and a level of its own needs no flow widget; it has no day's total.
    @Test func aBatteryOfItsOwnNeedsNoFlowWidget() throws {
        let bar = ProgressWidgetConfig(
            name: "battery", shared: SharedContent(label: "Battery", accentColor: "green"),
            measure: .battery(BatteryGauge(rate: .sum([RateTerm(source: "discharge", negated: true)]), level: "soc", capacityKWh: 5)),
            policy: Self.policy)
        var home = EngineHarness(FlowConfig(
            sources: [source("discharge", "d"), source("soc", "soc", unit: .percent)], widgets: [], progressWidgets: [bar]))
        home.send("soc", "50", at: afternoon)
        #expect(home.progress("battery")?.value == 0.5)  // the level alone, before the first rate
        home.send("d", "1250", at: afternoon + 1)  // discharging 1250 W: draining
        let shown = try #require(home.progress("battery"))
        #expect(shown.shared.label == "Battery" && shown.shared.accentColor == "green")
        #expect(shown.trend == .down)
        #expect(shown.statRows == [StatRow(label: "Draining", value: "1250", unit: "W"), StatRow(label: "Empty in", value: "2 h")])  // 2.5 kWh at 1.25 kW
        Self.expectValid(home)
    }

    /// The bars read the flow widget's own totals: the same day, to the last joule.
    @Test func theDaysBarsReadTheFlowWidgetsTotals() throws {
        let bars = [
            ProgressWidgetConfig(name: "autarky", measure: .selfSufficiency, policy: Self.policy),
            ProgressWidgetConfig(name: "goal", measure: .productionGoal(goalKWh: 2), policy: Self.policy),
        ]
        var home = EngineHarness(Self.home(bars))
        for minute in 0...90 {
            let t = afternoon + Double(minute) * 60
            home.send("pv", "\(800 + 7 * minute)", at: t)
            home.send("grid", "\(300 - 11 * minute)", at: t)
            home.send("bat", "\(minute % 7 * 40)", at: t)
        }
        home.send("pv", "2500", at: afternoon + 91 * 60)
        let totals = try #require(home.engine.snapshot()["totals"])
        let output = try #require(totals["power/output"]?["kwh"]?.numberValue)
        let imported = try #require(totals["power/exchange"]?["kwh"]?.numberValue)
        let solar = try #require(totals["power/inputs[0]"]?["kwh"]?.numberValue)
        #expect(home.progress("autarky")?.value == PatchPolicy.quantize(100 * (1 - imported / output), step: 1) / 100)
        #expect(home.progress("goal")?.value == min(1, PatchPolicy.quantize(100 * solar / 2, step: 1) / 100))
        #expect(home.progress("goal")?.statRows?.first == StatRow(label: "Today", value: JSONValue.format(PatchPolicy.quantize(solar, step: 0.1)), unit: "kWh"))
        // The inputs' rate as the flow shows it.
        #expect(home.progress("goal")?.statRows?.last == StatRow(label: "Now", value: "2500", unit: "W"))
        Self.expectValid(home)
    }

    /// At midnight the day's bars start over, at once, whatever the interval.
    @Test func midnightStartsTheDaysBarsOverAtOnce() throws {
        let slow = PatchPolicyConfig(minIntervalSeconds: 2400, rateStep: 10, rateDeadband: 20, totalStep: 0.1, levelStep: 1, settleSeconds: 0)
        let bars = [
            ProgressWidgetConfig(name: "autarky", measure: .selfSufficiency, policy: slow),
            ProgressWidgetConfig(name: "goal", measure: .productionGoal(goalKWh: 1), policy: slow),
        ]
        var home = EngineHarness(Self.home(bars, policy: slow))
        let midnight = (afternoon / 86_400).rounded(.up) * 86_400
        for t in stride(from: midnight - 3600, to: midnight, by: 60) {
            home.send("pv", "2000", at: t)
            home.send("grid", "500", at: t)
            home.send("bat", "0", at: t)
        }
        // Pushed at 23:00 and, held back, at 23:40; the next would wait until 00:20.
        #expect(home.progress("goal")?.value == 1)  // 1.33 kWh of 1 kWh
        #expect(home.progress("autarky")?.value == 0.8)  // 2.5 kW at home, 0.5 kW of it from the grid
        home.run(until: midnight + 1)
        let goal = try #require(home.pushes(of: "goal").last)
        #expect(goal.at == Date(timeIntervalSince1970: midnight))
        #expect(home.progress("goal")?.value == 0)
        #expect(home.progress("goal")?.statRows?.first?.value == "0")
        #expect(home.pushes(of: "autarky").last?.at == Date(timeIntervalSince1970: midnight))
        #expect(home.progress("autarky")?.value == 1)  // nothing consumed yet today
        Self.expectValid(home)
    }

    /// A held battery reading of a silent meter grays the bar and the subtitle names the meter,
    /// as the flow widget does; both come back with the readings.
    @Test func aSilentBatteryMeterGraysTheBarAndNamesIt() throws {
        var bar = Self.battery()
        bar.shared = SharedContent(label: "Battery", subtitle: "Garage", accentColor: "green")
        var home = EngineHarness(Self.home([bar], batteryStaleAfter: 60))
        home.send("soc", "70", at: afternoon)
        home.send("bat", "1000", at: afternoon)
        home.run(until: afternoon + 61)
        let stale = try #require(home.progress("battery"))
        #expect(stale.shared.subtitle == "Battery: no reading since 14:02")
        #expect(stale.shared.accentColor == "gray")
        home.send("bat", "1000", at: afternoon + 120)
        let back = try #require(home.progress("battery"))
        #expect(back.shared.subtitle == "Garage")
        #expect(back.shared.accentColor == "green")
        Self.expectValid(home)
    }

    /// The grid meter is silent: its import counts nothing from its last reading, while the solar's
    /// production goes on counting into the home's day (the balance of what the meters counted):
    /// the bar says the grid is silent, naming it.
    @Test func aSilentGridMeterGraysTheSelfSufficiencyBar() throws {
        var config = Self.home([ProgressWidgetConfig(name: "autarky", measure: .selfSufficiency, policy: Self.policy)])
        config.sources[1].staleAfterSeconds = 60
        var home = EngineHarness(config)
        for t in stride(from: 0.0, through: 50, by: 10) {
            home.send("pv", "1000", at: afternoon + t)
            home.send("grid", "500", at: afternoon + t)
            home.send("bat", "0", at: afternoon + t)
        }
        home.send("pv", "1000", at: afternoon + 120)
        let bar = try #require(home.progress("autarky"))
        #expect(bar.shared.subtitle == "Grid: no reading since 14:02")
        #expect(bar.shared.accentColor == "gray")
        // Import 50 s at 500 W; the home used the solar's 120 s at 1000 W and that import:
        // 1 − 25 / 145.
        #expect(bar.value == 0.83)
        Self.expectValid(home)
    }

    /// Nothing a bar kept is in the state: after a restart its first push is the whole document,
    /// with a window made again, true at its push time.
    @Test func aRestartMakesTheWindowAgain() throws {
        var home = EngineHarness(Self.home([Self.battery()]))
        home.send("soc", "30", at: afternoon)
        home.send("bat", "2000", at: afternoon)
        var restarted = EngineHarness(Self.home([Self.battery()]))
        try restarted.engine.restore(home.engine.snapshot())
        restarted.send("bat", "2000", at: afternoon + 200)
        let (at, push) = try #require(restarted.pushes(of: "battery").first)
        #expect(push.isFullContent)
        let bar = try #require(restarted.progress("battery"))
        #expect(abs(try Self.fraction(bar, at: at) - 0.3) < 1e-4)
        #expect(bar.statRows?[1] == StatRow(label: "Charged today", value: "0.1", unit: "kWh"))  // 200 s at 2 kW
    }

    /// A reloaded config takes over what the bar shows: the next push is a patch.
    @Test func aReloadedConfigPatchesFromWhatTheBarShows() throws {
        var home = EngineHarness(Self.home([Self.battery()]))
        home.send("soc", "30", at: afternoon)
        home.send("bat", "2000", at: afternoon)
        var reloaded = EngineHarness(Self.home([Self.battery(capacity: 20)]))
        try reloaded.engine.restore(home.engine.snapshot())
        reloaded.engine.adoptDeliveries(from: home.engine)
        reloaded.send("soc", "31", at: afternoon + 10)
        let push = try #require(reloaded.pushes(of: "battery").first?.push)
        #expect(!push.isFullContent)
        #expect(push.patch["end_date"] != nil)  // twice the capacity: a window twice as long
    }

    static let remaining: [(Double, String)] = [
        (30, "1 min"), (2700, "45 min"), (4800, "1 h 20 min"), (7200, "2 h"), (180_000, "2 days 2 h"), (259_200, "3 days"),
    ]

    @Test(arguments: remaining)
    func timesToFullOrEmptyReadToTheMinute(seconds: Double, text: String) {
        #expect(FlowEngine.remainingText(seconds: seconds) == text)
    }

    struct Unexpected: Error {}
}
