import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// `currentDocuments(at:)` and `latestKnownTime`: what `flowbridge render` draws from a saved state.
@Suite struct CurrentDocumentsTests {
    /// A state saved and restored into a fresh engine gives back, at its latest time, the document
    /// the widget was last pushed.
    @Test func aRestoredStateShowsTheLastPushedDocument() throws {
        var home = EngineHarness(homeConfig())
        home.send("solar/ac/power", "3200", at: 1_780_000_000)
        home.send("shellypro3em/status/em:0", #"{"total_act_power":-1400}"#, at: 1_780_000_001)
        home.send("evcc/site/battery/power", "-800", at: 1_780_000_002)
        home.send("evcc/site/battery/soc", "76", at: 1_780_000_003)
        let pushed = try #require(home.pushes.last?.push)

        var restored = FlowEngine(config: homeConfig(), zone: FixedOffsetZone())
        try restored.restore(home.engine.snapshot())
        #expect(restored.latestKnownTime == Date(timeIntervalSince1970: 1_780_000_003))
        let documents = restored.currentDocuments(at: try #require(restored.latestKnownTime))
        #expect(documents == ["power": ShownDocument(content: pushed.document, held: pushed.held)])
    }

    /// At the state's latest time a reading that was stale then is drawn stale: here the solar
    /// input, silent for longer than its `stale_after`, reads 0 W.
    @Test func readingsStaleAtTheLatestTimeAreStale() throws {
        var home = EngineHarness(homeConfig(staleAfter: 60))
        home.send("solar/ac/power", "3200", at: 1_780_000_000)
        home.send("shellypro3em/status/em:0", #"{"total_act_power":-100}"#, at: 1_780_000_100)
        home.send("evcc/site/battery/power", "0", at: 1_780_000_120)
        var restored = FlowEngine(config: homeConfig(staleAfter: 60), zone: FixedOffsetZone())
        try restored.restore(home.engine.snapshot())
        let at = try #require(restored.latestKnownTime)
        #expect(at == Date(timeIntervalSince1970: 1_780_000_120))
        guard case .flow(let flow) = restored.currentDocuments(at: at)["power"]?.content else {
            Issue.record("no flow document")
            return
        }
        #expect(flow.inputs?.first?.rate == 0)
        #expect(flow.exchange?.rate == -100)
    }

    /// Before any reading there is no time and nothing to show.
    @Test func aFreshEngineHasNothingToShow() {
        let engine = FlowEngine(config: homeConfig(), zone: FixedOffsetZone())
        #expect(engine.latestKnownTime == nil)
        #expect(engine.currentDocuments(at: Date(timeIntervalSince1970: 1_780_000_000)).isEmpty)
    }
}
