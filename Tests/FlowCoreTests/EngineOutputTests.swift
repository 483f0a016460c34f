@testable import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// What the engine hands out as values besides pushes: a payload refused and why, a source gone
/// silent and back, and the open slot carried through a restart.
@Suite struct EngineOutputTests {
    static let t0 = 1_780_300_800.0  // 2026-06-01T08:00:00Z

    static func config(staleAfter: Double? = nil, maxPayload: Int = 64) -> FlowConfig {
        FlowConfig(
            sources: [
                source("solar", "home/solar", staleAfter: staleAfter, maxPayload: maxPayload),
                source("grid", "home/grid", json: "power", staleAfter: staleAfter),
                source("soc", "home/soc", unit: .percent),
            ],
            widgets: [FlowWidgetConfig(
                name: "home", inputs: [node("solar", total: .integrate)], output: node("balance", total: .integrate),
                exchange: node("grid", total: .imported), policy: eager)])
    }

    struct RefusalCase: Sendable, CustomTestStringConvertible {
        var name: String
        var topic: String
        var payload: String
        var reason: String
        var rejected: Bool
        var testDescription: String { name }
    }

    static let refusals: [RefusalCase] = [
        RefusalCase(name: "text that is no number", topic: "home/solar", payload: "abc", reason: "undecodable: not a number", rejected: true),
        RefusalCase(name: "JSON without an object", topic: "home/grid", payload: "[1]", reason: "undecodable: json", rejected: true),
        RefusalCase(name: "beyond max_power", topic: "home/solar", payload: "99999999", reason: "implausible", rejected: true),
        RefusalCase(name: "a level above 100 %", topic: "home/soc", payload: "140", reason: "implausible", rejected: true),
        RefusalCase(name: "beyond max_payload", topic: "home/solar", payload: String(repeating: "1", count: 65), reason: "oversized 65 of 64", rejected: false),
    ]

    /// With `handsOverAccounts` off (no sink of the daemon takes them), a widget pushed at every
    /// reading goes out as before, and no accounts at all: not with the pushes, not on the ticks
    /// between them.
    @Test func accountsGoOutOnlyWhenHandedOver() {
        let config = FlowConfig(
            sources: Self.config().sources, widgets: Self.config().widgets,
            tariff: TariffConfig(importPrice: PriceConfig(base: .fixed(0.3)), standingChargePerDay: 2.40))
        var handing = EngineHarness(config)
        var keeping = EngineHarness(config)
        keeping.engine.handsOverAccounts = false
        func send(_ topic: String, _ payload: String, at seconds: Double) {
            handing.send(topic, payload, at: seconds)
            keeping.send(topic, payload, at: seconds)
        }
        for step in 0...60 {
            send("home/solar", "\(1000 + step)", at: Self.t0 + Double(step) * 10)
            send("home/grid", #"{"power": \#(200 - step)}"#, at: Self.t0 + Double(step) * 10 + 5)
        }
        #expect(handing.pushes.count > 100)
        #expect(keeping.pushes.map(\.at) == handing.pushes.map(\.at))
        #expect(keeping.pushes.map(\.push.patch) == handing.pushes.map(\.push.patch))
        #expect(!handing.accountOutputs.isEmpty && !handing.moneyOutputs.isEmpty)
        #expect(keeping.accountOutputs.isEmpty && keeping.moneyOutputs.isEmpty)
    }

    @Test(arguments: refusals)
    func aRefusedPayloadSaysWhy(_ test: RefusalCase) throws {
        var home = EngineHarness(Self.config())
        home.send(test.topic, test.payload, at: Self.t0)
        let refusal = try #require(home.refusals.first)
        #expect(home.refusals.count == 1)
        #expect(refusal.topic == test.topic && refusal.at == Date(timeIntervalSince1970: Self.t0))
        let reason: String = switch refusal.reason {
        case .undecodable(let error): "undecodable: \(error.kind.rawValue)"
        case .implausible: "implausible"
        case .oversized(let bytes, let maxBytes): "oversized \(bytes) of \(maxBytes)"
        case .tooManyTopics: "too many topics"
        }
        #expect(reason == test.reason)
        #expect(refusal.isRejection == test.rejected)
        // The log still has its line, rate-limited as before.
        #expect(home.diagnostics.contains { $0.message.contains("source '\(refusal.source)'") })
    }

    /// Solar every 10 s until 08:00:20, quiet until 08:03:00: silent at 08:01:20 (its stale_after
    /// of 60 s past the last value), back at 08:03:00 after 160 s; said once each way.
    @Test func aSourceGoesSilentAndComesBack() throws {
        var home = EngineHarness(Self.config(staleAfter: 60))
        record(home.engine.subscribed(at: Date(timeIntervalSince1970: Self.t0)), into: &home)
        for t in stride(from: 0.0, through: 20, by: 10) { home.send("home/solar", "500", at: Self.t0 + t) }
        home.run(until: Self.t0 + 170)
        home.send("home/solar", "500", at: Self.t0 + 180)
        home.run(until: Self.t0 + 200)
        #expect(home.silences.map(\.silent) == [true, false])
        let (_, silent) = home.silences[0]
        #expect(silent.source == "solar" && silent.topic == "home/solar")
        #expect(silent.lastValueAt == Date(timeIntervalSince1970: Self.t0 + 20) && silent.at == Date(timeIntervalSince1970: Self.t0 + 80))
        #expect(home.silences[1].1.silentSeconds == 160)
    }

    func record(_ outputs: [FlowEngine.Output], into home: inout EngineHarness) { home.record(outputs) }

    /// A restart in the middle of a slot: the slots after it are those of a day without the restart,
    /// the open slot's energy so far neither lost nor counted twice.
    @Test(arguments: [8 * 60.0 + 7, 22 * 60.0, 29 * 60.0 + 59])
    func aRestartKeepsTheOpenSlot(restartAfterSeconds: Double) throws {
        func send(_ home: inout EngineHarness, from: Double, to: Double) {
            // One reading every 20 s on the same grid either side of the restart.
            var t = (from / 20).rounded(.up) * 20
            while t < to {
                home.send("home/solar", "\(1000 + t.truncatingRemainder(dividingBy: 700))", at: Self.t0 + t)
                home.send("home/grid", #"{"power": \#(300 - t.truncatingRemainder(dividingBy: 500))}"#, at: Self.t0 + t)
                t += 20
            }
        }
        var whole = EngineHarness(Self.config())
        send(&whole, from: 0, to: 3600)
        var first = EngineHarness(Self.config())
        send(&first, from: 0, to: restartAfterSeconds)
        var second = EngineHarness(Self.config())
        try second.engine.restore(first.engine.snapshot())
        send(&second, from: restartAfterSeconds, to: 3600)
        let split = first.closedSlots + second.closedSlots
        #expect(split.map(\.start) == whole.closedSlots.map(\.start))
        #expect(whole.closedSlots.count == 3)
        for (a, b) in zip(split, whole.closedSlots) {
            for (place, accounts) in b.energyKWh {
                for (account, kWh) in accounts { #expect(abs((a.energyKWh[place]?[account] ?? -1) - kWh) < 1e-9, "\(b.start) \(place) \(account)") }
            }
        }
    }
}
