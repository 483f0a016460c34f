@testable import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// Readings of one moment settle before a push (`policy.settle`).
@Suite struct SettleTests {
    static func policy(settle: Double = 2, interval: Double = 10) -> PatchPolicyConfig {
        PatchPolicyConfig(minIntervalSeconds: interval, rateStep: 1, rateDeadband: 0, totalStep: 0.001, levelStep: 1, settleSeconds: settle)
    }

    /// The day: 1400 W solar, the battery filling with 600 W (evcc: − = charging): home 800 W.
    static func day(_ home: inout EngineHarness, at t: Double) {
        home.send("solar/ac/power", "1400", at: t)
        home.send("shellypro3em/status/em:0", #"{"total_act_power":0}"#, at: t + 0.02)
        home.send("evcc/site/battery/power", "-600", at: t + 0.04)
    }

    /// The evening, 30 ms apart: solar 0, grid +200, battery draining 600 W: home 800 W again.
    static func evening(_ home: inout EngineHarness, at t: Double) {
        home.send("solar/ac/power", "0", at: t)
        home.send("shellypro3em/status/em:0", #"{"total_act_power":200}"#, at: t + 0.03)
        home.send("evcc/site/battery/power", "600", at: t + 0.06)
    }

    @Test func aBurstMakesOnePushWhenItHasSettledTheFirstOneToo() {
        var home = EngineHarness(homeConfig(policy: Self.policy()))
        Self.day(&home, at: 0)
        #expect(home.pushes.isEmpty)
        #expect(home.engine.nextDeadline == Date(timeIntervalSince1970: 2))
        home.run(until: 10)
        #expect(home.pushes.count == 1)
        #expect(home.pushes.first?.at == Date(timeIntervalSince1970: 2))
        #expect(home.pushes.first?.push.isFullContent == true)
        #expect(home.rate("output") == 800)
    }

    /// Import ↔ export and filling ↔ draining go out as soon as the burst has settled: not in the
    /// middle of it (home at 0 W for 60 ms), and not at the end of `min_interval`.
    @Test func aReversalGoesOutOnceSettledWithHomeRightThroughout() {
        var home = EngineHarness(homeConfig(policy: Self.policy(interval: 60)))
        Self.day(&home, at: 0)
        home.run(until: 30)
        Self.evening(&home, at: 30)
        #expect(home.pushes.count == 1)
        home.run(until: 40)
        #expect(home.pushes.count == 2)
        #expect(home.pushes.last?.at == Date(timeIntervalSince1970: 32))
        #expect(home.lastPatch?["flow"]?["storage"] == ["rate": -600])
        #expect(home.lastPatch?["flow"]?["exchange"] == ["rate": 200])
        #expect(home.lastPatch?["flow"]?["output"] == nil)  // still 800 W
        #expect(home.rate("output") == 800)
        #expect(!home.diagnostics.contains { $0.message.contains("output shows 0") })
    }

    /// A change of a moment that would only be held by `min_interval` settles first, then waits.
    @Test func anOrdinaryChangeSettlesThenWaitsForTheInterval() {
        let config = FlowConfig(sources: [source("grid", "g")], widgets: [FlowWidgetConfig(name: "w", exchange: node("grid"), policy: Self.policy())])
        var meter = EngineHarness(config)
        meter.send("g", "1000", at: 0)
        meter.send("g", "1100", at: 5)
        meter.send("g", "1200", at: 6)  // within the burst opened at 5
        meter.run(until: 30)
        #expect(meter.pushes.map(\.at) == [Date(timeIntervalSince1970: 2), Date(timeIntervalSince1970: 12)])
        #expect(meter.lastPatch == ["flow": ["exchange": ["rate": 1200]]])
    }

    /// A meter that reports every second, its reading changing each time: every burst opens the
    /// next window the moment the last one ends, and a change held back by the interval goes out
    /// at the end of the first window after it, interval after interval, not once and never again.
    @Test func aMeterReportingEverySecondIsPushedEveryInterval() {
        let config = FlowConfig(
            sources: [source("grid", "g")], widgets: [FlowWidgetConfig(name: "w", exchange: node("grid"), policy: Self.policy(interval: 5))])
        var meter = EngineHarness(config)
        for second in 0..<60 { meter.send("g", "\(1000 + 10 * second)", at: Double(second) + 0.84) }
        meter.run(until: 60)
        let times = meter.pushes.map(\.at.timeIntervalSince1970)
        #expect(times.count >= 9, "\(times)")
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 5 && $1 - $0 < 8 }, "\(times)")
    }

    @Test func midnightGoesOutAtOnceEvenWhileABurstSettles() {
        let config = FlowConfig(
            sources: [source("load", "p")],
            widgets: [FlowWidgetConfig(name: "w", output: node("load", total: .integrate), policy: Self.policy())])
        var home = EngineHarness(config)
        let midnight = 86_400.0 * 20_600
        for t in stride(from: midnight - 60, through: midnight - 4, by: 1) { home.send("p", "3600", at: t) }
        #expect(home.total("output") ?? 0 > 0.05)
        home.send("p", "3600", at: midnight - 0.5)  // opens a burst that ends after midnight
        home.run(until: midnight)
        let reset = home.pushes.first { $0.at == Date(timeIntervalSince1970: midnight) }
        #expect(reset?.push.patch["flow"]?["output"]?["total"] == 0)
    }

    /// Only the pushes wait: every reading is integrated when it arrives.
    @Test func totalsIntegrateAtEveryReadingWhilePushesWait() {
        let config = FlowConfig(
            sources: [source("grid", "g")],
            widgets: [FlowWidgetConfig(name: "w", exchange: node("grid", total: .imported), policy: Self.policy())])
        var meter = EngineHarness(config)
        meter.send("g", "3600", at: 0)
        meter.send("g", "3600", at: 1)
        meter.send("g", "3600", at: 1.5)
        #expect(meter.pushes.isEmpty)
        let kWh = meter.engine.snapshot()["totals"]?["w/exchange"]?["kwh"]?.numberValue
        #expect(abs((kWh ?? 0) - 0.0015) < 1e-12)
    }

    @Test func settleZeroPushesEveryReadingAtOnce() {
        let config = FlowConfig(sources: [source("grid", "g")], widgets: [FlowWidgetConfig(name: "w", exchange: node("grid"), policy: Self.policy(settle: 0, interval: 0))])
        var meter = EngineHarness(config)
        meter.send("g", "1", at: 0)
        meter.send("g", "2", at: 0.01)
        #expect(meter.pushes.map(\.at) == [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 0.01)])
    }
}

/// The sign advice only for a clamp that persists.
@Suite struct ClampWatchTests {
    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }

    @Test func aClampThatHoldsForTenMinutesIsEvidenceOnce() {
        var watch = ClampWatch()
        var said: [Double] = []
        for second in stride(from: 0.0, to: 1500, by: 5) where watch.record(clamped: true, at: Self.at(second)) {
            said.append(second)
        }
        #expect(said == [540, 1080])  // minute 9, then the evidence starts afresh
    }

    @Test(arguments: [
        (1, 3),  // one clamped evaluation in three
        (2, 5),
    ])
    func clampsThatAreNotMostAreNoEvidence(clamped: Int, of evaluations: Int) {
        var watch = ClampWatch()
        var second = 0.0
        var said = 0
        for step in 0..<2000 {
            if watch.record(clamped: step % evaluations < clamped, at: Self.at(second)) { said += 1 }
            second += 1
        }
        #expect(said == 0)
    }

    @Test func aShortBurstOfClampsIsNoEvidence() {
        var watch = ClampWatch()
        let said = (0..<1000).filter { watch.record(clamped: true, at: Self.at(Double($0) * 0.5)) }  // 8 minutes
        #expect(said.isEmpty)
    }
}
