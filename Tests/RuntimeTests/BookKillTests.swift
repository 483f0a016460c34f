import DayBook
import FlowCore
import Foundation
import Glibc
import TestSupport
import Testing

/// `kill -9` of a live daemon at random moments while the simulated home publishes, both on one
/// clock at 3600x (a simulated hour a second, so a day and its midnight pass within the test): the
/// book it keeps through the kills holds each 15-minute slot once, and each closed day's slots add
/// up to the day's row, and every slot from the first to the last is there (a first start killed
/// between the book's first write and the state's first save once left its downtime's slots out).
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct BookKillTests {
    static let speed = 3600

    /// The simulated home's devices, as `Config/demo.yaml` reads them, with durations for a reading
    /// an hour (3600x) and a fixed tariff so that the slots carry money.
    static func config(port: Int, folder: TemporaryFolder) -> String {
        let path = folder.url.path
        return """
            timezone: UTC
            mqtt: {host: 127.0.0.1, port: \(port), client_id: flowbridge-book-kill}
            state_file: \(path)/state.json
            book_file: \(path)/book.sqlite
            sources:
              solar:     {topic: solar/ac/power, stale_after: 3h, max_gap: 3h}
              solar_day: {topic: solar/ac/yieldday, unit: Wh, stale_after: 3h}
              grid:      {topic: shellypro3em-08f9e0e5a1c4/status/em:0, json: total_act_power, stale_after: 3h, max_gap: 3h}
              grid_in:   {topic: shellypro3em-08f9e0e5a1c4/status/emdata:0, json: total_act, unit: Wh, stale_after: 3h}
              grid_out:  {topic: shellypro3em-08f9e0e5a1c4/status/emdata:0, json: total_act_ret, unit: Wh, stale_after: 3h}
              battery:   {topic: evcc/site/battery/power, invert: true, stale_after: 3h, max_gap: 3h}
            widgets:
              power:
                template: flow
                flow:
                  inputs: [{name: Solar, rate: solar, total: {daily: solar_day}}]
                  storage: {name: Battery, rate: battery, total: charge}
                  exchange: {name: Grid, rate: grid, total: {counter: grid_in}, accounts: {export: {counter: grid_out}}}
                  output: {name: Home, rate: balance, total: integrate}
            tariff: {import: {price: 0.30}, export: {price: 0.08}, standing_charge: 0.40}
            """
    }

    @Test func killMinusNineLeavesNoSlotTwiceAndNoneMissing() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = Self.config(port: broker.port, folder: folder)
        let origin = String(Int(Date().timeIntervalSince1970) + 3)
        let clock = ["--speed", String(Self.speed), "--origin", origin]
        let home = try ChildProcess(
            Repository.binary, ["simulate", "--broker", "127.0.0.1:\(broker.port)", "--log-level", "warning"] + clock,
            outputFile: folder.url.appendingPathComponent("simulate.log").path)
        defer { home.send(SIGKILL) }
        var generator = SystemRandomNumberGenerator()
        var moments: [Int] = []
        for round in 0..<4 {
            let daemon = try RunTests.Daemon(config: config, folder: folder, arguments: clock, name: "run\(round)")
            #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
            // The fault: a power cut at a moment nobody chose, 1 to 6 s (simulated hours) in.
            let moment = Int.random(in: 1000...6000, using: &generator)
            moments.append(moment)
            try await Task.sleep(for: .milliseconds(moment))
            daemon.process.send(SIGKILL)
            #expect(await daemon.process.waitForExit(timeout: .seconds(10)))
        }
        // The last run goes on until the book holds a closed day, then stops as the service does.
        let last = try RunTests.Daemon(config: config, folder: folder, arguments: clock, name: "last")
        let bookPath = folder.url.appendingPathComponent("book.sqlite").path
        func closedDays() -> [BookDay] {
            (try? DayBook(path: bookPath, create: false, readOnly: true).days(from: CivilDate(year: 2000, month: 1, day: 1), through: CivilDate(year: 2100, month: 1, day: 1))) ?? []
        }
        // Up first (its signals taken over: a stop sent earlier would meet the default action),
        // then on until the book holds a closed day (the kills' runs may have closed one).
        #expect(await last.waitFor("subscribed to"), "\(last.text)")
        #expect(await eventually(timeout: .seconds(90)) { !closedDays().isEmpty || !last.process.isRunning }, "killed at \(moments) ms: \(last.text)")
        await last.stop()

        let book = try DayBook(path: bookPath, create: false, readOnly: true)
        let slots = try book.slots(from: Date(timeIntervalSince1970: 0), to: Date(timeIntervalSince1970: 4e9))
        let starts = slots.map { $0.start.timeIntervalSince1970 }
        #expect(!starts.isEmpty)
        #expect(Set(starts).count == starts.count, "a slot twice (killed at \(moments) ms)")
        if let first = starts.first, let final = starts.last {
            let expected = Array(stride(from: ClosedSlot.start(of: Date(timeIntervalSince1970: first)).timeIntervalSince1970, through: final, by: ClosedSlot.seconds))
            let missing = Set(expected).subtracting(starts.map { ClosedSlot.start(of: Date(timeIntervalSince1970: $0)).timeIntervalSince1970 })
            #expect(missing.isEmpty, "\(missing.count) slots missing between the first and the last (killed at \(moments) ms)")
        }
        let days = closedDays()
        #expect(!days.isEmpty)
        for day in days {
            let inDay = try book.slots(from: day.start, to: day.end)
            for account in EnergyAccount.allCases {
                let summed = inDay.map { BookMoney.sum($0.energyKWh.values)[account] ?? 0 }.reduce(0, +)
                #expect(abs(summed - (day.accountsKWh[account] ?? 0)) < 1e-6, "\(day.date) \(account): slots \(summed), row \(day.accountsKWh[account] ?? 0)")
            }
        }
    }
}
