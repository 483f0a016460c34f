import Commands
@testable import Configuration
@testable import Runtime
import FlowCore
import Foundation
import Glibc
import Mosquitto
import Platform
import ReplaySupport
import TestSupport
import Testing

/// Every counted kWh is priced at the price in force while it flowed, or counted unpriced: across
/// a currency change at a restart, a rise over no time, a clock behind the saved state, and a
/// reload that changes the tariff while a counter's rise is pending.
@Suite struct MoneyIntegrityTests: TariffHome {
    static let meter = "  meter: {topic: grid/energy, unit: kWh, max_power: 1e9}"
    static let counterExchange = "{name: Grid, rate: grid, total: {counter: meter}}"

    /// The home of a grid counter without a tariff, and with import at 0.30: a tariff added.
    static let meterHome: (unpriced: String, priced: String) = {
        let priced = Self.config(tariff: "  import: {price: 0.30}", sources: Self.meter, exchange: Self.counterExchange)
        return (String(priced[..<priced.range(of: "tariff:")!.lowerBound]), priced)
    }()

    static func engine(_ config: String) throws -> FlowEngine {
        FlowEngine(config: try DaemonConfig.parse(config, file: "t.yaml").flow, zone: FixedOffsetZone())
    }

    static func feed(_ engine: inout FlowEngine, _ messages: [(String, String, String)]) -> [String] {
        var said: [String] = []
        for (at, topic, payload) in messages {
            let outputs = engine.tick(through: time(at)) + engine.receive(topic: topic, payload: Array(payload.utf8), at: time(at))
            for case .diagnostic(let diagnostic) in outputs { said.append(diagnostic.message) }
        }
        return said
    }

    /// The state as a restart reads it: written as text, parsed back.
    static func restarted(_ engine: FlowEngine, into config: String) throws -> (FlowEngine, [String]) {
        var fresh = try Self.engine(config)
        let said = try fresh.restore(try JSONValue(parsing: Array(engine.snapshot().description.utf8)))
        return (fresh, said.map(\.message))
    }

    // MARK: - A currency change across a restart

    /// EUR → SEK with the same price source name: the day's money restarts in SEK, and the euro
    /// price saved with it is no SEK price: the energy after the restart is unpriced until a SEK
    /// price comes, then priced at it.
    @Test func pricesSavedInAnotherCurrencyAreLeftOutWithTheMoney() throws {
        func config(_ currency: String) -> String {
            Self.config(
                tariff: "  currency: \(currency)\n  import: {price: price}",
                sources: "\(Self.meter)\n  price: {topic: market/price, unit: \(currency)/MWh, stale_after: 1h}", exchange: Self.counterExchange)
        }
        var euros = try Self.engine(config("EUR"))
        _ = Self.feed(&euros, [
            ("2026-06-01T10:00:00Z", "market/price", "300"), ("2026-06-01T10:00:00Z", "grid/energy", "1000"),
            ("2026-06-01T10:10:00Z", "grid/energy", "1000.5"),
        ])
        #expect(abs((euros.money(ofWidget: "home")?.importCost ?? 0) - 0.15) < 1e-9)
        let (restarted, said) = try Self.restarted(euros, into: config("SEK"))
        var kronor = restarted
        #expect(said.contains("state: the import prices of 'price' were in EUR; in SEK they are left out until a price comes"), "\(said)")
        // 10:10–10:30: 1 kWh without a SEK price; from 10:30 at 2 SEK/kWh: 0.5 kWh, 1 SEK.
        _ = Self.feed(&kronor, [
            ("2026-06-01T10:20:00Z", "grid/energy", "1000.75"), ("2026-06-01T10:30:00Z", "grid/energy", "1001.5"),
            ("2026-06-01T10:30:00Z", "market/price", "2000"), ("2026-06-01T10:40:00Z", "grid/energy", "1002"),
        ])
        let money = try #require(kronor.money(ofWidget: "home"))
        #expect(money.currency.code == "SEK")
        #expect(abs(money.importCost - 1) < 1e-9, "\(money.text)")
        // The hour's 1 kWh, and the 0.5 kWh imported before the restart, which has no SEK price.
        #expect(abs((money.unpricedKWh[.imported] ?? 0) - 1.5) < 1e-9, "\(money.text)")
    }

    /// A day whose money starts afresh in the middle (a tariff added by a restart or by a reload):
    /// the energy it imported before has no price in the new money, so it counts as unpriced, not
    /// as energy that cost nothing. 0.5 kWh imported before the tariff, then 0.25 kWh at 0.30.
    @Test(arguments: [false, true])
    func energyCountedBeforeTheMoneyBeganIsUnpriced(reload: Bool) throws {
        let (unpriced, priced) = Self.meterHome
        let before = [("2026-06-01T10:00:00Z", "grid/energy", "1000"), ("2026-06-01T10:10:00Z", "grid/energy", "1000.5")]
        let after = [("2026-06-01T10:20:00Z", "grid/energy", "1000.75")]
        let money: MoneyReport?
        var said: [String] = []
        if reload {
            let bridge = try Bridge.inUTC(try DaemonConfig.parse(unpriced, file: "t.yaml"), savingIn: TemporaryFolder())
            let monotonic = ContinuousClock.now
            func receive(_ message: (String, String, String)) {
                let instant = Self.time(message.0)
                bridge.receive(
                    MQTTMessage(topic: message.1, payload: Array(message.2.utf8)), at: instant,
                    monotonic: monotonic.advanced(by: .seconds(instant.timeIntervalSince(Self.time("2026-06-01T10:00:00Z")))))
            }
            before.forEach(receive)
            said = try bridge.replaceEngine(config: try DaemonConfig.parse(priced, file: "t.yaml"), at: Self.time("2026-06-01T10:10:00Z")).map(\.message)
            after.forEach(receive)
            money = bridge.state.withLock { $0.engine.money(ofWidget: "home") }
        } else {
            var engine = try Self.engine(unpriced)
            _ = Self.feed(&engine, before)
            var restarted: FlowEngine
            (restarted, said) = try Self.restarted(engine, into: priced)
            _ = Self.feed(&restarted, after)
            money = restarted.money(ofWidget: "home")
        }
        let report = try #require(money)
        #expect(abs(report.importCost - 0.075) < 1e-9, "\(report.text)")
        #expect(abs((report.unpricedKWh[.imported] ?? 0) - 0.5) < 1e-9, "\(report.text)")
        #expect(said.contains { $0.contains("0.5 kWh imported before count unpriced") }, "\(said)")
    }

    /// A reload that brings the tariff while a counter's rise is pending (read at 10:10, the
    /// tariff from 10:15, the next reading at 10:20): the rise's share before the reload had no
    /// price, so it is unpriced, not priced at 0; the share after it at the new price.
    @Test func aRiseReadAfterAReloadThatBringsTheTariffIsUnpricedBeforeIt() throws {
        let (unpriced, priced) = Self.meterHome
        var old = try Self.engine(unpriced)
        _ = Self.feed(&old, [("2026-06-01T10:00:00Z", "grid/energy", "1000"), ("2026-06-01T10:10:00Z", "grid/energy", "1000.5")])
        var reloaded = try Self.engine(priced)
        try reloaded.restore(old.snapshot())
        reloaded.adoptPrices(from: old, at: Self.time("2026-06-01T10:15:00Z"))
        _ = Self.feed(&reloaded, [("2026-06-01T10:20:00Z", "grid/energy", "1000.75")])
        let money = try #require(reloaded.money(ofWidget: "home"))
        #expect(abs(money.importCost - 0.0375) < 1e-9, "\(money.text)")
        // 0.5 kWh before the tariff, and 10:10–10:15's 0.125 kWh.
        #expect(abs((money.unpricedKWh[.imported] ?? 0) - 0.625) < 1e-9, "\(money.text)")
    }

    /// A solar counter read every five minutes beside a grid meter read every few seconds, the
    /// home derived from both, and a new price at 14:00: the solar rise read at 14:03 covers
    /// 13:58–14:03, and the home's use of its share before 14:00 is priced at 13:00's price, which
    /// the grid's readings past 14:00 must not have let go.
    @Test func theDerivedHomesShareOfASlowCounterKeepsThePriceItFlowedAt() throws {
        let config = Self.config(
            tariff: "  import: {price: price}",
            sources: "  pv: {topic: home/pv}\n  pv_total: {topic: home/pv_total, unit: kWh}\n  price: {topic: market/price, unit: EUR/kWh, stale_after: 2h}",
            inputs: "[{name: Solar, rate: pv, total: {counter: pv_total}}]")
        var engine = try Self.engine(config)
        _ = Self.feed(&engine, [
            ("2026-06-01T13:00:00Z", "market/price", "0.30"), ("2026-06-01T13:00:00Z", "home/grid", "0"),
            ("2026-06-01T13:58:00Z", "home/pv_total", "100"), ("2026-06-01T13:58:00Z", "home/pv", "3000"),
            ("2026-06-01T13:58:00Z", "home/grid", "0"), ("2026-06-01T14:00:00Z", "market/price", "0.40"),
            ("2026-06-01T14:00:02Z", "home/grid", "0"), ("2026-06-01T14:03:00Z", "home/pv_total", "100.25"),
        ])
        let money = try #require(engine.money(ofWidget: "home"))
        // 0.1 kWh before 14:00 at 0.30, 0.15 kWh after at 0.40.
        #expect(abs((money.gridOnlyCost ?? 0) - 0.09) < 1e-9, "\(money.text)")
        #expect(money.unpricedTotalKWh == 0, "\(money.text)")
    }

    // MARK: - A rise over no time

    struct NoTimeCase: Sendable, CustomTestStringConvertible {
        var testDescription: String
        /// Before a restart (none when empty), and after it.
        var before: [(String, String, String)]
        var after: [(String, String, String)]
        var importedKWh: Double
    }

    static let noTimeCases: [NoTimeCase] = [
        // 0.5 kWh over ten minutes, then 0.5 more in a reading with the same timestamp.
        NoTimeCase(
            testDescription: "two readings with one timestamp", before: [],
            after: [
                ("2026-06-01T10:00:00Z", "grid/energy", "1000"), ("2026-06-01T10:10:00Z", "grid/energy", "1000.5"),
                ("2026-06-01T10:10:00Z", "grid/energy", "1001"),
            ],
            importedKWh: 1),
        // A Raspberry Pi without a real-time clock restarts an hour behind the saved state: the
        // rise since the saved reading comes at an instant before it.
        NoTimeCase(
            testDescription: "a clock behind the saved state",
            before: [("2026-06-01T10:00:00Z", "grid/energy", "1000"), ("2026-06-01T10:10:00Z", "grid/energy", "1000.5")],
            after: [("2026-06-01T09:20:00Z", "grid/energy", "1002"), ("2026-06-01T09:30:00Z", "grid/energy", "1002.5")],
            importedKWh: 2.5),
    ]

    /// At a fixed price every counted kWh has its money: none counted and silently dropped.
    @Test(arguments: noTimeCases)
    func aCounterRiseOverNoTimeIsPriced(_ test: NoTimeCase) throws {
        let config = Self.config(tariff: "  import: {price: 0.30}", sources: Self.meter, exchange: Self.counterExchange)
        var engine = try Self.engine(config)
        if !test.before.isEmpty {
            _ = Self.feed(&engine, test.before)
            engine = try Self.restarted(engine, into: config).0
        }
        _ = Self.feed(&engine, test.after)
        let imported = try #require(engine.accountTotals(ofWidget: "home")?[.imported])
        let money = try #require(engine.money(ofWidget: "home"))
        #expect(abs(imported - test.importedKWh) < 1e-9)
        #expect(abs(money.importCost - imported * 0.30) < 1e-9, "\(money.text), \(imported) kWh")
        #expect(money.unpricedTotalKWh == 0)
    }

    // MARK: - A reload while a counter's rise is pending

    static func reloadConfig(price: String) throws -> DaemonConfig {
        try DaemonConfig.parse(
            Self.config(tariff: "  import: {price: \(price)}", sources: Self.meter, exchange: Self.counterExchange), file: "t.yaml")
    }

    /// 0.30 until a reload at 10:20, 0.45 after it; the counter reads at 10:00, 10:10 and 10:30. The
    /// rise of 10:10–10:30 flowed half before the reload: 0.5 × 0.30 + 0.5 × 0.45 = 0.375, and the
    /// first rise 0.5 × 0.30 = 0.15: 0.525 (the whole rise at 0.45 would make 0.60). A restart
    /// between the reload and the reading keeps that.
    @Test(arguments: [false, true])
    func aReloadPricesWhatFlowedBeforeItByTheTariffInForceThen(restartAfterReload: Bool) throws {
        let folder = TemporaryFolder()
        let bridge = try Bridge.inUTC(try Self.reloadConfig(price: "0.30"), savingIn: folder)
        let monotonic = ContinuousClock.now
        func receive(_ at: String, _ value: String) {
            let instant = Self.time(at)
            bridge.receive(
                MQTTMessage(topic: "grid/energy", payload: Array(value.utf8)), at: instant,
                monotonic: monotonic.advanced(by: .seconds(instant.timeIntervalSince(Self.time("2026-06-01T10:00:00Z")))))
        }
        receive("2026-06-01T10:00:00Z", "1000")
        receive("2026-06-01T10:10:00Z", "1000.5")
        let reloaded = try Self.reloadConfig(price: "0.45")
        #expect(try bridge.replaceEngine(config: reloaded, at: Self.time("2026-06-01T10:20:00Z")).isEmpty)
        let money: MoneyReport?
        if restartAfterReload {
            let snapshot = bridge.state.withLock { $0.engine.snapshot() }
            var engine = FlowEngine(config: reloaded.flow, zone: FixedOffsetZone())
            #expect(try engine.restore(try JSONValue(parsing: Array(snapshot.description.utf8))).isEmpty)
            _ = Self.feed(&engine, [("2026-06-01T10:30:00Z", "grid/energy", "1001.5")])
            money = engine.money(ofWidget: "home")
        } else {
            receive("2026-06-01T10:30:00Z", "1001.5")
            money = bridge.state.withLock { $0.engine.money(ofWidget: "home") }
        }
        let report = try #require(money)
        #expect(abs(report.importCost - 0.525) < 1e-9, "\(report.text)")
    }
}

/// What a kill -9 finds in the state: the prices the pending stretches need, however short the
/// time since a price came, and a repeated price confirmed before the saved confirmation runs out.
@Suite struct PriceSaveTests: TariffHome {
    static let config = Self.config(
        tariff: "  import: {price: price}",
        sources: "\(MoneyIntegrityTests.meter)\n  price: {topic: market/price, unit: EUR/MWh, stale_after: 5m}",
        exchange: MoneyIntegrityTests.counterExchange)

    /// An hour through the engine and the save policy at one-second ticks: the price feed repeats
    /// its price every minute and changes it every quarter hour, the counter reads every minute. At
    /// every tick the state last saved, as a restart would read it, has the import price in force
    /// now. (Saved every ten minutes, it lacked the quarter hour's new price, and a price confirmed
    /// since the save had run out in it: stale_after is 5 minutes.)
    @Test func theSavedStateHasThePriceInForceAtEveryTick() throws {
        let flow = try DaemonConfig.parse(Self.config, file: "t.yaml").flow
        var engine = FlowEngine(config: flow, zone: FixedOffsetZone())
        var policy = SavePolicy()
        var saved: JSONValue?
        var saves = 0
        let start = Self.time("2026-06-01T10:00:00Z")
        for second in 0..<3600 {
            let now = start.addingTimeInterval(Double(second))
            _ = engine.tick(through: now)
            if second % 60 == 0 {
                let price = 300 + 100 * (second / 900)
                _ = engine.receive(topic: "market/price", payload: Array("\(price)".utf8), at: now)
                _ = engine.receive(topic: "grid/energy", payload: Array(JSONValue.format(1000 + Double(second / 60) * 0.1).utf8), at: now)
                policy.noteChange()
            }
            var snapshot: JSONValue?
            if policy.shouldSave(at: now, anchors: {
                snapshot = engine.snapshot()
                return SavePolicy.Anchors(of: snapshot!)
            }) {
                saved = try JSONValue(parsing: Array(snapshot!.description.utf8))
                saves += 1
            }
            let state = try #require(saved)
            var restored = FlowEngine(config: flow, zone: FixedOffsetZone())
            try restored.restore(state)
            let live = engine.priceOutlook(at: now).first?.pricePerKWh
            let afterRestart = restored.priceOutlook(at: now).first?.pricePerKWh
            #expect(live != nil && afterRestart == live, "at \(second) s: \(String(describing: afterRestart)) saved, \(String(describing: live)) in force")
            if afterRestart != live { break }
        }
        // A save per new price and one a half stale_after for the confirmations: 4 + 24, and the
        // first and the ten-minute saves of the counter's readings, within the hour.
        #expect(saves <= 40, "\(saves) saves")
    }
}

/// A kill -9 of `flowbridge run` right after a new price: the restart prices the counter's rise
/// as the run without the fault does. The counter stands still across the new price (the same
/// reading before and after it): the replay takes each message at the instant the test sent it,
/// the daemon at the instant it came, up to hundreds of milliseconds later on a loaded machine,
/// and a rise across the change would split at those two instants differently.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct PriceKillTests {
    @Test func killMinusNineAfterANewPriceKeepsTheMoneyOfTheFaultFreeReplay() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        let config = TariffRestartTests.config(port: broker.port, state: state)
        let log = TariffRestartTests.Published()
        func savedPrices() -> [Double] {
            guard let saved = savedState(state) else { return [] }
            // Each point is `[from, heard, price]`: the prices, to a millionth (300 EUR/MWh is 0.3).
            return (saved["prices"]?[EnergyAccount.imported.rawValue]?["points"]?.arrayValue ?? []).compactMap { $0.arrayValue?.last?.numberValue }
                .map { ($0 * 1e6).rounded() / 1e6 }
        }

        let first = try RunTests.Daemon(config: config, folder: folder, name: "first")
        #expect(await first.waitFor("subscribed to"), "\(first.text)")
        try await TariffRestartTests.publish(broker, "market/price", "300", into: log)
        try await TariffRestartTests.meters(broker, seconds: 0...3, into: log)
        #expect(await eventually { savedPrices() == [0.3] }, "\(savedPrices())")
        try await TariffRestartTests.publish(broker, "market/price", "500", into: log)  // 0.50 + 0.05 fees from here
        // The counter reads 1001.5 again at second 4: nothing flows across the change.
        try await TariffRestartTests.meters(broker, seconds: 4...6, counterKWh: 999.5, into: log)
        #expect(await first.waitFor(#""total":2.5"#), "\(first.text)")
        // The new price is in the state, and once the counter's rise passed it, the old one is not.
        #expect(await eventually { savedPrices() == [0.5] }, "\(savedPrices())")
        first.process.send(SIGKILL)
        #expect(await first.process.waitForExit(timeout: .seconds(5)))

        let second = try RunTests.Daemon(config: config, folder: folder, name: "second")
        #expect(await second.waitFor("subscribed to"), "\(second.text)")
        try await TariffRestartTests.meters(broker, seconds: 7...9, counterKWh: 999.5, into: log)
        #expect(await second.waitFor(#""total":4"#), "\(second.text)")
        await second.stop()

        let (money, faultFree) = try TariffRestartTests.moneyAgainstReplay(state: state, log: log)
        // Import: 4 kWh, 1.5 at 0.35 and 2.5 at 0.55: 1.9 (the old price after the restart: 1.4).
        #expect(abs(faultFree.importCost - 1.9) < 1e-9, "\(faultFree.text)")
        #expect(abs((money["import_cost"]?.numberValue ?? .nan) - faultFree.importCost) < 1e-6, "\(money) vs \(faultFree.text)")
    }
}
