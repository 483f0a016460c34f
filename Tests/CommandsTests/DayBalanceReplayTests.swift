import Commands
import Configuration
import FlowCore
import FoundationEssentials
import Glibc
import Platform
import TestSupport
import ReplaySupport
import Testing

/// A day that adds up whatever order the meters report in, through `replay`: the derived home's day
/// is the balance of the other accounts, at every push and at midnight; a daily counter's first
/// step counts; the money of a day of slow meters.
@Suite struct DayBalanceReplayTests {
    static func config(tariff: String = "", daily: String? = nil) -> String {
        """
        timezone: UTC
        mqtt: {host: 127.0.0.1}
        sources:
          solar: {topic: home/solar, max_gap: 2h, stale_after: 2h}
          grid: {topic: home/grid, max_gap: 2h, stale_after: 2h}
          battery: {topic: home/battery, max_gap: 2h, stale_after: 2h}
        \(daily.map { "  solar_day: {topic: home/solar_day, \($0)}" } ?? "")
        widgets:
          home:
            template: flow
            flow:
              inputs: [{name: Solar, rate: solar, total: \(daily == nil ? "integrate" : "{daily: solar_day}")}]
              storage: {name: Battery, rate: battery, total: charge}
              exchange: {name: Grid, rate: grid, total: import}
              output: {name: Home, rate: balance, total: integrate}
        \(tariff)
        """
    }

    /// Runs `lines` through replay; returns every output and the engine at the end.
    static func run(_ text: String, _ lines: [String]) throws -> (outputs: [FlowEngine.Output], engine: FlowEngine) {
        let config = try DaemonConfig.parse(text, file: "test.yaml")
        var replay = Replay(config: config.flow, zone: SystemTimeZone(identifier: "UTC")!)
        var outputs: [FlowEngine.Output] = []
        for line in lines { outputs += replay.feed(try TraceMessage(line: Array(line.utf8))) }
        return (outputs + replay.finish(), replay.engine)
    }

    /// 2026-06-01T00:00:00Z.
    static let midnight = 1_780_272_000.0

    /// The three meters' readings at `t` (seconds into the day): the sun's arc, a grid that turns
    /// from import to export, a battery that charges at noon and drains in the evening.
    static func readings(at t: Double) -> [(topic: String, watts: Double)] {
        let hour = t / 3600
        let solar = max(0, 3000 * sin((hour - 6) / 12 * .pi))
        let battery = (10...15).contains(hour) ? 800.0 : (18...22).contains(hour) ? -600 : 0
        let home = 400 + 300 * sin(hour / 3)
        return [("home/solar", solar.rounded()), ("home/grid", (home - solar + battery).rounded()), ("home/battery", battery)]
    }

    struct OrderCase: Sendable, CustomTestStringConvertible {
        var name: String
        /// Seconds between two rounds of readings.
        var interval: Double
        /// The order the three meters' readings of a round arrive in.
        var order: [Int]
        /// Seconds between the meters of one round (0: the same instant).
        var apart: Double
        var testDescription: String { name }
    }

    static let orders: [OrderCase] = [5.0, 300, 3600].flatMap { interval in
        [[0, 1, 2], [2, 1, 0], [1, 0, 2], [1, 2, 0]].flatMap { order in
            [0.0, 1].map { apart in
                OrderCase(name: "every \(Int(interval)) s, order \(order), \(Int(apart)) s apart", interval: interval, order: order, apart: apart)
            }
        }
    }

    /// The day's accounts by direction, summed over the nodes.
    static func dayAccounts(_ outputs: [FlowEngine.Output]) throws -> [EnergyAccount: Double] {
        let day = try #require(outputs.compactMap { if case .closedDay(let day) = $0 { day } else { nil } }.first)
        return try #require(day.accountsKWh["home"])
    }

    static func balanceGap(_ accounts: [EnergyAccount: Double]) -> Double {
        AccountBalance(accountsKWh: accounts).gapKWh
    }

    /// A day of the three meters every `interval` seconds, in `order`, `apart` seconds apart.
    static func day(interval: Double, order: [Int], apart: Double) -> [String] {
        var lines: [String] = []
        var t = 0.0
        while t <= 86_400 + interval {
            let round = Self.readings(at: t.truncatingRemainder(dividingBy: 86_400))
            for (rank, meter) in order.enumerated() {
                let at = Date(timeIntervalSince1970: Self.midnight + t + Double(rank) * apart)
                lines.append(traceLine(RFC3339.format(at), round[meter].topic, "\(round[meter].watts)"))
            }
            t += interval
        }
        return lines
    }

    @Test(arguments: orders)
    func everyOrderGivesTheSameDay(_ test: OrderCase) throws {
        let (outputs, _) = try Self.run(Self.config(), Self.day(interval: test.interval, order: test.order, apart: test.apart))
        let day = try Self.dayAccounts(outputs)
        // The identity to the Wh at midnight…
        #expect(abs(Self.balanceGap(day)) < 0.0005, "\(day)")
        // …and at every accounts output (each push's), whatever came first.
        for case .accounts(_, _, let accounts, _) in outputs {
            let summed = FlowEngine.summed(accounts)
            #expect(abs(Self.balanceGap(summed)) < 0.0005, "\(summed)")
        }
        // The same day in the reference order, to the Wh.
        let reference = try Self.dayAccounts(Self.run(Self.config(), Self.day(interval: test.interval, order: [0, 1, 2], apart: 0)).outputs)
        for (account, kWh) in reference {
            // A second apart moves each meter's own trapezoids by a second's worth, no more.
            #expect(abs((day[account] ?? -1) - kWh) < (test.apart == 0 ? 0.0005 : 0.01), "\(account): \(day[account] ?? -1) against \(kWh)")
        }
    }

    struct CounterCase: Sendable, CustomTestStringConvertible {
        var name: String
        var source: String
        var values: [String]
        var expectedKWh: Double
        var testDescription: String { name }
    }

    static let counters: [CounterCase] = [
        // hoymiles-mqtt, OpenDTU's yieldday: whole Wh. The first step of one Wh counts.
        CounterCase(name: "Wh 431 → 432", source: "unit: Wh", values: ["431", "432"], expectedKWh: 0.432),
        // Tasmota's Today: kWh to three decimals.
        CounterCase(name: "kWh 0.431 → 0.432", source: "unit: kWh", values: ["0.431", "0.432"], expectedKWh: 0.432),
        // A device reset right after the first step keeps the day: 0.432 + 0.001 after the reset.
        CounterCase(name: "a reset after the first step", source: "unit: Wh", values: ["431", "432", "0", "1"], expectedKWh: 0.433),
        // A counter that never moves is yesterday's, left over: nothing.
        CounterCase(name: "a counter that never moves", source: "unit: Wh", values: ["431", "431"], expectedKWh: 0),
    ]

    @Test(arguments: counters)
    func aDailyCountersFirstStepCounts(_ test: CounterCase) throws {
        let lines = test.values.enumerated().map { index, value in
            traceLine(RFC3339.format(Date(timeIntervalSince1970: Self.midnight + 36_000 + Double(index) * 300)), "home/solar_day", value)
        }
        let (_, engine) = try Self.run(Self.config(daily: test.source), lines)
        let production = try #require(engine.accountTotals(ofWidget: "home")?[.production])
        #expect(abs(production - test.expectedKWh) < 1e-9, "\(production)")
    }

    /// Hourly meters from 08:00 to 12:00 UTC: solar 2 kW, the battery charging at 0.5 kW, the grid
    /// exporting 0.5 kW, all constant. Production 8 kWh, charge 2, export 2: the home used
    /// 8 − 2 − 2 = 4 kWh. Money at import 0.30, export 0.08, standing 0.48 a day (about half a day
    /// by 12:00: 0.24): import 0, export earnings 2 × 0.08 = 0.16, net 0 − 0.16 + 0.24 = 0.08; the
    /// grid alone would have cost 4 × 0.30 + 0.24 = 1.44, so saved = 1.44 − 0.08 = 1.36 (the
    /// standing charge is in both and cancels).
    @Test(arguments: [[0, 1, 2], [2, 0, 1], [1, 2, 0]])
    func theMoneyOfADayOfSlowMeters(order: [Int]) throws {
        let tariff = "tariff: {import: {price: 0.30}, export: {price: 0.08}, standing_charge: 0.48}"
        var lines: [String] = []
        for hour in 8...12 {
            let at = RFC3339.format(Date(timeIntervalSince1970: Self.midnight + Double(hour) * 3600))
            let round = [("home/solar", "2000"), ("home/grid", "-500"), ("home/battery", "500")]
            for meter in order { lines.append(traceLine(at, round[meter].0, round[meter].1)) }
        }
        let (_, engine) = try Self.run(Self.config(tariff: tariff), lines)
        let accounts = try #require(engine.accountTotals(ofWidget: "home"))
        #expect(abs((accounts[.consumption] ?? 0) - 4) < 1e-9, "\(accounts)")
        let money = try #require(engine.money(ofWidget: "home"))
        // Replay runs 12 s past the last message (the default settle and min_interval): the
        // standing charge is accrued to 12:00:12.
        let standing = 0.48 * (43_200 + 12) / 86_400
        #expect(abs(money.standingCharge - standing) < 1e-9)
        #expect(abs(money.netCost - (standing - 0.16)) < 1e-9, "\(money.text)")
        #expect(abs((money.saved ?? .nan) - 1.36) < 1e-9, "\(money.text)")
        // saved = consumption at the import price + standing charge − net cost.
        #expect(abs((money.saved ?? .nan) - (4 * 0.30 + money.standingCharge - money.netCost)) < 1e-9)
    }

    /// The grid's import counter reads at 22:00 and 23:00, then not until 01:00: its rise of 2 kWh
    /// covers an hour of each day. The closed day goes out again with its hour (and its home's,
    /// and its money at the price then), its slots still adding up to it; the new day keeps the
    /// other hour.
    @Test func aCounterSilentAcrossMidnightSplitsItsRise() throws {
        let config = """
            timezone: UTC
            mqtt: {host: 127.0.0.1}
            sources:
              grid: {topic: home/grid, max_gap: 2h, stale_after: 3h}
              grid_in: {topic: home/grid_in, unit: kWh, max_gap: 3h, stale_after: 3h}
            widgets:
              home:
                template: flow
                flow:
                  exchange: {name: Grid, rate: grid, total: {counter: grid_in}}
                  output: {name: Home, rate: balance, total: integrate}
            tariff: {import: {price: 0.30}}
            """
        func at(_ seconds: Double) -> String { RFC3339.format(Date(timeIntervalSince1970: Self.midnight + seconds)) }
        var readings: [(seconds: Double, topic: String, value: String)] = [(79_200, "home/grid_in", "99"), (82_800, "home/grid_in", "100")]
        for quarter in stride(from: 79_200.0, through: 90_000, by: 900) { readings.append((quarter, "home/grid", "1000")) }
        readings.append((90_000, "home/grid_in", "102"))
        let lines = readings.sorted { $0.seconds < $1.seconds }.map { traceLine(at($0.seconds), $0.topic, $0.value) }
        let (outputs, engine) = try Self.run(config, lines)
        let days = outputs.compactMap { if case .closedDay(let day) = $0 { day } else { nil } }
        let closed = try #require(days.last)
        #expect(days.count == 2 && days.allSatisfy { $0.date == closed.date }, "the closed day, then amended")
        let accounts = try #require(closed.accountsKWh["home"])
        #expect(abs((accounts[.imported] ?? 0) - 2) < 1e-9, "\(accounts)")
        #expect(abs((accounts[.consumption] ?? 0) - 2) < 1e-9, "\(accounts)")
        #expect(abs((closed.totalsKWh["home/exchange"] ?? 0) - 2) < 1e-9)
        #expect(abs((closed.money["home"]?.importCost ?? 0) - 0.60) < 1e-9)
        // The closed day's slots, the last one as amended, add up to it.
        var slots: [Date: ClosedSlot] = [:]
        for case .closedSlot(let slot) in outputs { slots[slot.start] = slot }
        let dayEnd = Date(timeIntervalSince1970: Self.midnight + 86_400)
        let imported = slots.values.filter { $0.start < dayEnd }.map { $0.energyKWh["exchange"]?[.imported] ?? 0 }.reduce(0, +)
        #expect(abs(imported - 2) < 1e-9, "\(imported)")
        let today = try #require(engine.accountTotals(ofWidget: "home"))
        #expect(abs((today[.imported] ?? 0) - 1) < 1e-9, "\(today)")
        #expect(abs((today[.consumption] ?? 0) - 1) < 1e-9, "\(today)")
        #expect(abs((engine.money(ofWidget: "home")?.importCost ?? 0) - 0.30) < 1e-9)
    }
}
