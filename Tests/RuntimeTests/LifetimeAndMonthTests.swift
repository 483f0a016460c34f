@testable import Configuration
@testable import DayBook
@testable import Delivery
@testable import Platform
@testable import Runtime
@testable import FlowCore
import Foundation
import Mosquitto
import TestSupport
import Testing

/// What the sinks get beside today's accounts: the lifetime accounts and the month's money,
/// which never fall across a midnight or a restart; and what a start reads of them from a real
/// day book.
@Suite struct LifetimeAndMonthTests {
    static let config = """
        timezone: UTC
        billing_day: 15
        sources: {grid: {topic: g, max_gap: 10m}}
        widgets: {w: {template: flow, flow: {exchange: {rate: grid, total: import}}, policy: {min_interval: 0s, settle: 0s}}}
        tariff: {import: {price: 0.30}}
        """

    static let start = RFC3339.parse("2026-06-14T22:00:00Z")!

    /// How the daemon restarts at 00:30, after the midnight of 2026-06-15.
    enum Restart: String, CaseIterable, Sendable {
        case none
        /// From its state file: today's accounts, and the closed days' lifetime accounts.
        case withState
        /// From a state without lifetime accounts (lost, or written by an older release): they are
        /// rebuilt from the day book's sums.
        case lifetimeFromTheBook
    }

    /// 1 kW imported from 22:00 to 01:00, read every minute, at 0.30: 3 kWh, 0.90. Every
    /// accounts item the sink gets has a lifetime import and a month's cost that never fell, and
    /// the last ones are the whole run's: 3 kWh, 0.90 for the month, and for the billing month
    /// from the 15th the hour after midnight alone, 0.30.
    @Test(arguments: Restart.allCases)
    func neverFallingAcrossMidnightAndARestart(_ restart: Restart) throws {
        let config = try DaemonConfig.parse(Self.config, file: "c.yaml")
        let zone = try #require(SystemTimeZone(identifier: "UTC"))
        let folder = TemporaryFolder()
        let bookPath = folder.url.appendingPathComponent("book.sqlite").path
        let recorder = BridgeAccountsTests.Recorder()
        var bridge = Bridge(
            engine: FlowEngine(config: config.flow, zone: zone), config: config, zone: zone, sinks: [recorder], store: nil,
            log: Logger(threshold: .error))
        let monotonic = ContinuousClock.now
        for minute in 0...180 {
            let seconds = Double(minute) * 60
            if minute == 150, restart != .none {
                let (snapshot, lifetime, closed) = bridge.state.withLock { ($0.engine.snapshot(), $0.lifetime, $0.engine.lastClosedDay) }
                // The book has the closed day, as the daemon's writer put it there.
                try DayBook(path: bookPath).write(slots: [], days: BookDay.rows(of: try #require(closed), zone: zone))
                var engine = FlowEngine(config: config.flow, zone: zone)
                _ = try engine.restore(snapshot)
                var kept = restart == .withState ? LifetimeAccounts(json: lifetime.json) : LifetimeAccounts()
                BookTotals.seed(&engine, lifetime: &kept, bookPath: bookPath, queue: BookQueue(), zone: zone, now: Self.start + seconds)
                #expect(kept == lifetime, "the lifetime accounts after the restart")
                bridge = Bridge(engine: engine, lifetime: kept, config: config, zone: zone, sinks: [recorder], store: nil, log: Logger(threshold: .error))
            }
            bridge.receive(MQTTMessage(topic: "g", payload: Array("1000".utf8)), at: Self.start + seconds, monotonic: monotonic.advanced(by: .seconds(seconds)))
        }
        let items = recorder.accounts.withLock { $0 }
        let lifetime = items.compactMap { $0.lifetimeKWh?[.imported] }
        let month = items.compactMap { $0.periodMoney[.month]?.importCost }
        #expect(lifetime.count == items.count && month.count == items.count && items.count > 30)
        for (earlier, later) in zip(lifetime, lifetime.dropFirst()) { #expect(later >= earlier - 1e-12, "\(lifetime)") }
        for (earlier, later) in zip(month, month.dropFirst()) { #expect(later >= earlier - 1e-12, "\(month)") }
        // The last item is at most a minute's reading behind: 3 kWh, 0.90, 0.30.
        #expect(abs((lifetime.last ?? 0) - 3) <= 1.0 / 60 + 1e-9, "\(lifetime.last ?? 0)")
        #expect(abs((month.last ?? 0) - 0.90) <= 0.30 / 60 + 1e-9, "\(month.last ?? 0)")
        let billing = try #require(items.last?.periodMoney[.billing])
        #expect(abs(billing.importCost - 0.30) <= 0.30 / 60 + 1e-9, "\(billing.importCost)")
        #expect(billing.dayStart == RFC3339.parse("2026-06-15T00:00:00Z"))
        #expect(items.last?.periodMoney[.month]?.dayStart == RFC3339.parse("2026-06-01T00:00:00Z"))
    }

    /// The book's closed days before today (2026-12-16) from a real SQLite book, with one day
    /// that waits in the queue (a book that could not be written) and one the queue still holds
    /// though the book has it: the month from the 1st, the billing month from the 15th, and the
    /// lifetime since the book's first day, each day counted once.
    @Test func periodsAndLifetimeFromABook() throws {
        let zone = try #require(SystemTimeZone(identifier: "Europe/Berlin"))
        let folder = TemporaryFolder()
        let bookPath = folder.url.appendingPathComponent("book.sqlite").path
        // 2026-11-28 … 2026-12-15, each 1.00 of import (3.3 kWh), 0.50 standing.
        let days = (0...17).map { offset in
            let date = CivilDate(daysSinceEpoch: CivilDate(year: 2026, month: 11, day: 28).daysSinceEpoch + offset)
            let closed = FlowEngine.ClosedDay(
                date: date, totalsKWh: [:], accountsKWh: ["w": [.imported: 3.3]],
                money: ["w": MoneyReport(currency: .euro, importCost: 1, exportEarnings: 0, standingCharge: 0.5, gridOnlyCost: nil)],
                nodeAccountsKWh: ["w": ["exchange": [.imported: 3.3]]])
            return BookDay.rows(of: closed, zone: zone)
        }
        try DayBook(path: bookPath).write(slots: [], days: days.dropLast().flatMap { $0 })
        var queue = BookQueue()
        for day in days.suffix(2).flatMap({ $0 }) { queue.add(day) }
        var engine = FlowEngine(config: FlowConfig(sources: [], widgets: [], billingDay: 15), zone: zone)
        var lifetime = LifetimeAccounts()
        BookTotals.seed(&engine, lifetime: &lifetime, bookPath: bookPath, queue: queue, zone: zone, now: RFC3339.parse("2026-12-16T12:00:00+01:00")!)
        let today = MoneyReport(currency: .euro, importCost: 0.25, exportEarnings: 0, standingCharge: 0, gridOnlyCost: nil)
        let date = CivilDate(year: 2026, month: 12, day: 16)
        // The month: the 1st to the 15th, 15 × 1.50 net; the billing month the 15th alone.
        #expect(engine.periods.money(.month, of: "w", today: today, on: date, zone: zone)?.netCost == 15 * 1.5 + 0.25)
        #expect(engine.periods.money(.billing, of: "w", today: today, on: date, zone: zone)?.netCost == 1.5 + 0.25)
        #expect(lifetime.throughDay == CivilDate(year: 2026, month: 12, day: 15))
        #expect(abs((lifetime.closedKWh["w"]?[.imported] ?? 0) - 18 * 3.3) < 1e-9)
        #expect(lifetime.closedMoney["w"]?.importCost == 18)
    }
}
