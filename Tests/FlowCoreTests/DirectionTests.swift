import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// `direction:`: a magnitude signed by other sources, judged as a value, then in the engine.
@Suite struct DirectionTests {
    /// A direction, the readings of its sources (nil: not read yet), and what it says.
    struct VerdictCase: Sendable, CustomTestStringConvertible {
        var name: String
        var direction: DirectionFrom<String>
        var readings: [String: Double]
        var verdict: DirectionVerdict
        var testDescription: String { name }
    }

    static let both = DirectionFrom<String>.flags(positive: "charging", negative: "discharging")

    static let verdicts: [VerdictCase] = [
        VerdictCase(name: "charging 1, discharging 0: +", direction: both, readings: ["charging": 1, "discharging": 0], verdict: .known(.positive)),
        VerdictCase(name: "charging 0, discharging 1: −", direction: both, readings: ["charging": 0, "discharging": 1], verdict: .known(.negative)),
        VerdictCase(name: "both 0: no flow", direction: both, readings: ["charging": 0, "discharging": 0], verdict: .known(.neither)),
        VerdictCase(name: "both 1: a contradiction", direction: both, readings: ["charging": 1, "discharging": 1], verdict: .contradiction),
        VerdictCase(name: "one flag of two not read yet", direction: both, readings: ["charging": 1], verdict: .notYet),
        VerdictCase(name: "no flag read yet", direction: both, readings: [:], verdict: .notYet),
        VerdictCase(name: "a negative flag alone at 1: −", direction: .flags(positive: nil, negative: "selling"), readings: ["selling": 1], verdict: .known(.negative)),
        VerdictCase(name: "a negative flag alone at 0: +", direction: .flags(positive: nil, negative: "selling"), readings: ["selling": 0], verdict: .known(.positive)),
        VerdictCase(name: "a positive flag alone at 1: +", direction: .flags(positive: "buying", negative: nil), readings: ["buying": 1], verdict: .known(.positive)),
        VerdictCase(name: "a positive flag alone at 0: −", direction: .flags(positive: "buying", negative: nil), readings: ["buying": 0], verdict: .known(.negative)),
        VerdictCase(name: "a signed number above 0: +", direction: .signOf("meter"), readings: ["meter": 312.5], verdict: .known(.positive)),
        VerdictCase(name: "a signed number below 0: −", direction: .signOf("meter"), readings: ["meter": -0.5], verdict: .known(.negative)),
        VerdictCase(name: "a signed number at 0: no flow", direction: .signOf("meter"), readings: ["meter": 0], verdict: .known(.neither)),
        VerdictCase(name: "a signed number not read yet", direction: .signOf("meter"), readings: [:], verdict: .notYet),
    ]

    @Test(arguments: verdicts)
    func theSourcesReadingsGiveTheDirection(_ test: VerdictCase) {
        #expect(test.direction.verdict { test.readings[$0] } == test.verdict)
    }

    @Test(arguments: [
        (DirectionVerdict.known(.positive), 945.0, 945.0 as Double?),
        (.known(.negative), 945, -945),
        (.known(.negative), -945, -945),  // a magnitude written with a sign is still a magnitude
        (.known(.neither), 12, 0),
        (.notYet, 945, nil),
        (.contradiction, 945, nil),
    ])
    func aVerdictSignsTheMagnitude(verdict: DirectionVerdict, magnitude: Double, signed: Double?) {
        #expect(verdict.signed(magnitude) == signed)
    }

    // MARK: - In the engine

    /// A battery's magnitude on one topic, its direction as two flags on two others.
    static func battery(staleAfter: Double? = nil) -> FlowConfig {
        var magnitude = source("battery", "ess/battery", staleAfter: staleAfter)
        magnitude.direction = .flags(positive: "charging", negative: "discharging")
        return FlowConfig(
            sources: [magnitude, source("charging", "ess/charging"), source("discharging", "ess/discharging")],
            widgets: [FlowWidgetConfig(name: "w", storage: node("battery", total: .charged, name: "Battery"), policy: eager)])
    }

    /// Before its flags come the magnitude has no sign: no reading, no node, nothing counted; the
    /// first flags sign it at once, and later magnitudes take the flags' direction.
    @Test func theMagnitudeHasNoSignUntilItsFlagsCome() {
        var home = EngineHarness(Self.battery())
        home.send("ess/battery", "945", at: afternoon)
        #expect(home.engine.readings["battery"] == nil)
        #expect(home.engine.sourceStats["battery"]?.readings == 1)
        #expect(home.rate("storage") == nil)
        home.send("ess/charging", "1", at: afternoon + 1)
        #expect(home.rate("storage") == nil, "one flag of two is no direction yet")
        home.send("ess/discharging", "0", at: afternoon + 1)
        #expect(home.rate("storage") == 945)
        home.send("ess/battery", "1200", at: afternoon + 10)
        #expect(home.rate("storage") == 1200)
        home.send("ess/charging", "0", at: afternoon + 11)
        #expect(home.rate("storage") == 0, "both flags 0: the battery idles")
        home.send("ess/discharging", "1", at: afternoon + 11)
        #expect(home.rate("storage") == -1200)
    }

    /// A flag that is not 0 or 1 is refused, naming the flag's source; the direction stays.
    @Test(arguments: ["2", "-1", "0.5"])
    func aFlagThatIsNotZeroOrOneIsRefused(payload: String) throws {
        var home = EngineHarness(Self.battery())
        home.send("ess/charging", "1", at: afternoon)
        home.send("ess/discharging", "0", at: afternoon)
        home.send("ess/battery", "500", at: afternoon)
        home.send("ess/discharging", payload, at: afternoon + 1)
        let refusal = try #require(home.refusals.last)
        #expect(refusal.source == "discharging")
        #expect(home.engine.sourceStats["discharging"]?.rejected == 1)
        let warning = try #require(home.diagnostics.last)
        #expect(warning.message.hasPrefix("source 'discharging' (topic ess/discharging): "), "\(warning.message)")
        #expect(warning.message.contains("is not a direction flag: a flag reads 0 or 1"), "\(warning.message)")
        #expect(home.rate("storage") == 500)
    }

    /// Both flags at 1: a magnitude that comes then is refused, naming both flags, and the
    /// battery keeps its last signed reading; the flag that settles it signs the magnitude again.
    @Test func aMagnitudeWhileBothFlagsReadOneIsRefused() throws {
        var home = EngineHarness(Self.battery())
        home.send("ess/charging", "0", at: afternoon)
        home.send("ess/discharging", "1", at: afternoon)
        home.send("ess/battery", "700", at: afternoon)
        // The battery turns: the charging flag comes first, both read 1 for a moment.
        home.send("ess/charging", "1", at: afternoon + 10)
        #expect(home.rate("storage") == -700, "a contradiction keeps what was known")
        #expect(home.refusals.isEmpty)
        home.send("ess/battery", "800", at: afternoon + 20)
        let refusal = try #require(home.refusals.last)
        #expect(refusal.source == "battery")
        let warning = try #require(home.diagnostics.last?.message)
        #expect(warning.contains("source 'battery' (topic ess/battery): its direction flags 'charging' and 'discharging' both read 1"), "\(warning)")
        #expect(home.rate("storage") == -700)
        home.send("ess/discharging", "0", at: afternoon + 21)
        #expect(home.rate("storage") == 700, "the refused 800 W never counted; the last magnitude, signed anew")
    }

    /// A config without `direction:` reads as before: a flag-like 2 on a plain source is a reading.
    @Test func aSourceWithoutADirectionIsNoFlag() {
        let config = FlowConfig(sources: [source("grid", "g")], widgets: [FlowWidgetConfig(name: "w", exchange: node("grid"), policy: eager)])
        var home = EngineHarness(config)
        home.send("g", "2", at: afternoon)
        #expect(home.rate("exchange") == 2)
        #expect(home.refusals.isEmpty)
    }

    /// The signed reading is saved; restored, it stands, and a new flag re-signs its magnitude.
    @Test func aRestoredReadingKeepsItsSignAndItsMagnitude() throws {
        var home = EngineHarness(Self.battery(staleAfter: 600))
        home.send("ess/charging", "0", at: afternoon)
        home.send("ess/discharging", "1", at: afternoon)
        home.send("ess/battery", "650", at: afternoon)
        let saved = home.engine.snapshot()
        var restored = EngineHarness(Self.battery(staleAfter: 600))
        _ = try restored.engine.restore(saved)
        #expect(restored.engine.readings["battery"]?.value == -650)
        restored.send("ess/discharging", "0", at: afternoon + 6)
        restored.send("ess/charging", "1", at: afternoon + 6)
        #expect(restored.engine.readings["battery"]?.value == 650)
    }
}
