import Commands
import Configuration
import FlowCore
import FoundationEssentials
import Platform
import TestSupport
import Testing

/// What the day book is handed through `replay`: each closed day with its accounts by node, its
/// length and its battery's range, and its 15-minute slots (UTC-aligned: 92 on the day the clocks
/// go forward, 100 on the day they go back), which add up to the day.
@Suite struct ClosedSlotReplayTests {
    static let config = """
        timezone: Europe/Berlin
        mqtt: {host: 127.0.0.1}
        sources:
          solar: {topic: home/solar}
          grid: {topic: home/grid}
          battery: {topic: home/battery}
          soc: {topic: home/soc, unit: "%"}
        widgets:
          home:
            template: flow
            flow:
              inputs: [{name: Solar, rate: solar, total: integrate}]
              storage: {name: Battery, rate: battery, level: soc, total: charge}
              exchange: {name: Grid, rate: grid, total: import}
              output: {name: Home, rate: balance, total: integrate}
        tariff:
          import: {price: 0.30}
          export: {price: 0.08}
          standing_charge: 0.48
        """

    /// Every output of a replay of `lines`.
    static func outputs(_ lines: [String], config text: String = config) throws -> [FlowEngine.Output] {
        let config = try DaemonConfig.parse(text, file: "test.yaml")
        var replay = Replay(config: config.flow, zone: SystemTimeZone(identifier: "Europe/Berlin")!)
        var outputs: [FlowEngine.Output] = []
        for line in lines { outputs += replay.feed(try TraceMessage(line: Array(line.utf8))) }
        return outputs + replay.finish()
    }

    /// Four meters every 5 minutes from `from` to `to` (seconds since 1970), a day's shape: the sun
    /// by the hour, the grid and the battery taking turns, the level moving with the battery.
    static func trace(from: Double, to: Double) -> [String] {
        var lines: [String] = []
        var t = from
        while t <= to {
            let hour = Int(t / 3600) % 24
            let solar = (6...17).contains(hour) ? Double(200 * (hour - 5)) : 0
            let grid = hour % 3 == 0 ? -400.0 : 600
            let battery = hour % 2 == 0 ? 300.0 : -250
            let soc = 40 + Double(hour)
            let time = RFC3339.format(Date(timeIntervalSince1970: t))
            lines.append(traceLine(time, "home/solar", "\(solar)"))
            lines.append(traceLine(time, "home/grid", "\(grid)"))
            lines.append(traceLine(time, "home/battery", "\(battery)"))
            lines.append(traceLine(time, "home/soc", "\(soc)"))
            t += 300
        }
        return lines
    }

    struct DayCase: Sendable, CustomTestStringConvertible {
        var date: String
        /// Local midnight to midnight, in UTC.
        var start: String
        var end: String
        var hours: Double
        var slots: Int
        var testDescription: String { "\(date): \(slots) slots" }
    }

    static let days: [DayCase] = [
        DayCase(date: "2026-03-29", start: "2026-03-28T23:00:00Z", end: "2026-03-29T22:00:00Z", hours: 23, slots: 92),
        DayCase(date: "2026-06-21", start: "2026-06-20T22:00:00Z", end: "2026-06-21T22:00:00Z", hours: 24, slots: 96),
        DayCase(date: "2026-10-25", start: "2026-10-24T22:00:00Z", end: "2026-10-25T23:00:00Z", hours: 25, slots: 100),
    ]

    @Test(arguments: days)
    func theSlotsOfADayAddUpToIt(_ test: DayCase) throws {
        let start = RFC3339.parse(test.start)!.timeIntervalSince1970
        let end = RFC3339.parse(test.end)!.timeIntervalSince1970
        // From an hour before the day to just after it: the day is closed by the next one's first reading.
        let outputs = try Self.outputs(Self.trace(from: start - 3600, to: end + 300))
        let days = outputs.compactMap { if case .closedDay(let day) = $0 { day } else { nil } }
        let day = try #require(days.first { $0.date.description == test.date })
        #expect(day.hours == test.hours)
        let slots = outputs.compactMap { if case .closedSlot(let slot) = $0 { slot } else { nil } }
            .filter { $0.start.timeIntervalSince1970 >= start && $0.start.timeIntervalSince1970 < end }
        #expect(slots.count == test.slots)
        #expect(slots.allSatisfy { $0.start.timeIntervalSince1970.truncatingRemainder(dividingBy: 900) == 0 })
        #expect(Set(slots.map(\.start)).count == slots.count, "a slot twice")
        let byNode = try #require(day.nodeAccountsKWh["home"])
        for (place, accounts) in byNode {
            for (account, kWh) in accounts {
                let summed = slots.reduce(0.0) { $0 + ($1.energyKWh[place]?[account] ?? 0) }
                #expect(abs(summed - kWh) < 1e-9, "\(place) \(account): slots \(summed), day \(kWh)")
            }
        }
        // The money too: the slots' amounts and standing charges are the day's.
        let money = try #require(day.money["home"])
        let slotMoney = slots.compactMap(\.money)
        #expect(slotMoney.count == test.slots)
        #expect(abs(slotMoney.reduce(0) { $0 + $1.importCost } - money.importCost) < 1e-9)
        #expect(abs(slotMoney.reduce(0) { $0 + $1.exportEarnings } - money.exportEarnings) < 1e-9)
        #expect(abs(slotMoney.reduce(0) { $0 + $1.standingCharge } - 0.48) < 1e-9)
        // Where energy was imported, the billed price is the tariff's.
        #expect(slotMoney.filter { $0.importCost > 0 }.allSatisfy { abs(($0.importPricePerKWh ?? 0) - 0.30) < 1e-9 })
        // The level rose from 40 % at local midnight's hour (UTC) through the day.
        let levels = try #require(day.levelRangePercent["home"])
        #expect(levels.lowerBound == 40 && levels.upperBound == 63)
    }
}
