import FlowCore
import Testing

/// The sign checks: what only a flipped sign explains is found and names the source to flip; what
/// right signs make is passed; too little evidence is said as such.
@Suite struct SignCheckTests {
    /// solar → input, grid → exchange, battery (+ level) → storage, and the output derived or read
    /// from `home`.
    static func widget(storage: Bool = true, exchange: Bool = true, measuredOutput: Bool = false) -> FlowWidgetConfig {
        FlowWidgetConfig(
            name: "power", inputs: [NodeConfig(name: "Solar", rate: .sum([RateTerm(source: "solar")]))],
            output: NodeConfig(name: "Home", rate: measuredOutput ? .sum([RateTerm(source: "home")]) : .balance),
            storage: storage ? NodeConfig(name: "Battery", rate: .sum([RateTerm(source: "battery")]), level: "level") : nil,
            exchange: exchange ? NodeConfig(name: "Grid", rate: .sum([RateTerm(source: "grid")])) : nil)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var widget: FlowWidgetConfig
        /// One moment's readings per element, by source (after `invert`).
        var moments: [[String: Double]]
        var check: SignCheck.Check
        var outcome: SignCheck.Verdict.Outcome
        var flips: [[String]] = []
        var testDescription: String { name }
    }

    /// `count` moments of `make(i)`.
    static func moments(_ count: Int, _ make: (Double) -> [String: Double]) -> [[String: Double]] {
        (0..<count).map { make(Double($0)) }
    }

    static let cases: [Case] = [
        Case(name: "a solar clamp the wrong way round reads below 0", widget: widget(storage: false),
             moments: moments(10) { _ in ["solar": -1450, "grid": 300] }, check: .production, outcome: .wrong, flips: [["solar"]]),
        Case(name: "an inverter's standby draw is no sign error", widget: widget(storage: false),
             moments: moments(10) { _ in ["solar": -3, "grid": 300] }, check: .production, outcome: .plausible),
        // evcc's battery without invert: + is discharging, so the level falls while the rate says filling.
        Case(name: "the level falls while the rate says filling",
             widget: widget(), moments: moments(12) { i in ["solar": 0, "grid": 300, "battery": 1200, "level": 60 - (i / 5).rounded(.down)] },
             check: .levelFollowsRate, outcome: .wrong, flips: [["battery"]]),
        Case(name: "the level rises while filling",
             widget: widget(), moments: moments(12) { i in ["solar": 3000, "grid": -300, "battery": 1500, "level": 60 + (i / 5).rounded(.down)] },
             check: .levelFollowsRate, outcome: .plausible),
        Case(name: "a level that does not move says nothing",
             widget: widget(), moments: moments(12) { _ in ["solar": 3000, "grid": -300, "battery": 1500, "level": 60] },
             check: .levelFollowsRate, outcome: .undecided),
        // A flipped grid meter: the home draws 500 W, the sun rises from 500 to 2500 W; the true
        // exchange is 500 − P (export grows), the flipped one P − 500.
        Case(name: "the import grows with the sun",
             widget: widget(storage: false), moments: moments(11) { i in ["solar": 500 + 200 * i, "grid": 200 * i] },
             check: .exchangeAgainstProduction, outcome: .wrong, flips: [["grid"]]),
        Case(name: "the export grows with the sun",
             widget: widget(storage: false), moments: moments(11) { i in ["solar": 500 + 200 * i, "grid": -200 * i] },
             check: .exchangeAgainstProduction, outcome: .plausible),
        Case(name: "a steady sun says nothing of the grid",
             widget: widget(storage: false), moments: moments(11) { i in ["solar": 2000 + i, "grid": -1500] },
             check: .exchangeAgainstProduction, outcome: .undecided),
        // A zero-export battery takes the surplus: flipped, it drains faster as the sun rises.
        Case(name: "the battery drains faster as the sun rises",
             widget: widget(), moments: moments(11) { i in ["solar": 500 + 200 * i, "grid": 0, "battery": -200 * i, "level": 50] },
             check: .storageWithProduction, outcome: .wrong, flips: [["battery"]]),
        // At night: 300 W from the grid and 1200 W from the battery for a home of 1500 W; the
        // battery's sign flipped makes the balance 0 + 300 − 1200 = −900.
        Case(name: "a derived output that stays clamped",
             widget: widget(), moments: moments(10) { _ in ["solar": 0, "grid": 300, "battery": 1200, "level": 50] },
             check: .outputNotClamped, outcome: .wrong, flips: [["battery"]]),
        // A cloud: solar falls from 3000 to 500 W, and evcc's battery still says it charges 2000 W
        // for over half of the minute, until its next publish.
        Case(name: "a slow meter after a cloud is no evidence",
             widget: widget(), moments: moments(60) { i in ["solar": 500, "grid": 0, "battery": i < 35 ? 2000 : -1500, "level": 50] },
             check: .outputNotClamped, outcome: .plausible),
        Case(name: "a clamp of a moment is no evidence",
             widget: widget(), moments: moments(10) { i in ["solar": 0, "grid": i == 3 ? -500 : 300, "battery": -1200, "level": 50] },
             check: .outputNotClamped, outcome: .plausible),
        // A house meter: 3000 W of sun, 1000 W home, 800 W into the battery, 1200 W exported; the
        // grid meter reads + for export.
        Case(name: "a measured output adds up only with the grid flipped",
             widget: widget(measuredOutput: true), moments: moments(10) { _ in ["solar": 3000, "grid": 1200, "battery": 800, "home": 1000, "level": 50] },
             check: .balanceAddsUp, outcome: .wrong, flips: [["grid"]]),
        Case(name: "a measured output that adds up",
             widget: widget(measuredOutput: true), moments: moments(10) { _ in ["solar": 3000, "grid": -1200, "battery": 800, "home": 1000, "level": 50] },
             check: .balanceAddsUp, outcome: .plausible),
        Case(name: "an output that leaves out a load",
             widget: widget(measuredOutput: true), moments: moments(10) { _ in ["solar": 5000, "grid": -1000, "battery": 1000, "home": 1000, "level": 50] },
             check: .balanceAddsUp, outcome: .undecided),
    ]

    @Test(arguments: cases)
    func verdict(_ test: Case) throws {
        var check = SignCheck(widget: test.widget)
        for moment in test.moments { check.observe(moment) }
        let verdict = try #require(check.verdicts.first { $0.check == test.check })
        #expect(verdict.outcome == test.outcome, "\(verdict)")
        #expect(verdict.flips == test.flips, "\(verdict)")
        if test.outcome == .wrong, let source = test.flips.first?.first {
            #expect(verdict.description.contains("flip `invert` on source '\(source)'"), "\(verdict)")
        }
    }

    /// A night with the battery's sign flipped: the level and the balance both name it; nothing
    /// else is blamed.
    @Test func aFlippedBatteryIsNamedAndNothingElse() {
        var check = SignCheck(widget: Self.widget())
        for second in 0..<30 {
            check.observe(["solar": 0, "grid": 300, "battery": 1200, "level": 60 - Double(second / 10)])
        }
        let wrong = check.verdicts.filter { $0.outcome == .wrong }
        #expect(Set(wrong.map(\.check)) == [.levelFollowsRate, .outputNotClamped])
        #expect(wrong.allSatisfy { $0.flips == [["battery"]] })
    }

    /// At night the inverters sleep and send nothing: the balance counts them 0 W, as the engine
    /// does, so a flipped battery is still found.
    @Test func sleepingInvertersCountZero() {
        var check = SignCheck(widget: Self.widget())
        for _ in 0..<10 { check.observe(["grid": 300, "battery": 1200, "level": 50]) }
        let verdict = check.verdicts.first { $0.check == .outputNotClamped }
        #expect(verdict?.outcome == .wrong)
        #expect(verdict?.flips == [["battery"]])
        #expect(check.verdicts.first { $0.check == .production }?.outcome == .undecided)
    }

    /// Missing readings are not zeros: a slot that never read leaves its checks undecided.
    @Test func aSilentSlotLeavesItsChecksUndecided() {
        var check = SignCheck(widget: Self.widget())
        for _ in 0..<10 { check.observe(["solar": 2000, "grid": -500]) }
        #expect(check.verdicts.filter { $0.outcome == .wrong }.isEmpty)
        #expect(check.verdicts.first { $0.check == .outputNotClamped }?.outcome == .undecided)
        #expect(check.verdicts.first { $0.check == .levelFollowsRate }?.outcome == .undecided)
    }
}
