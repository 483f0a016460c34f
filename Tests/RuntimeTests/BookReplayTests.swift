import Commands
import Configuration
import DayBook
import FlowCore
import Foundation
import Glibc
import Platform
import TestSupport
import ReplaySupport
import Testing

/// The day book written from traffic: `simulate --trace --days N` (the devices' counters carrying
/// on across midnight), `replay --book`, and `history` reading it back.
@Suite struct BookReplayTests {
    static let zone = SystemTimeZone(identifier: "Europe/Berlin")!
    static let tariff = """

        timezone: Europe/Berlin
        tariff:
          currency: EUR
          import:
            zones:
              - {days: daily, from: "07:00", to: "22:00", price: 0.30}
              - {price: 0.20}
          export: {price: 0.08}
          standing_charge: 0.40
        """

    /// The demo home (Config/demo.yaml) in Berlin, priced.
    static func config(extra: String = "") throws -> String {
        try String(contentsOfFile: Repository.root.appendingPathComponent("Config/demo.yaml").path, encoding: .utf8) + tariff + "\n" + extra
    }

    /// `simulate --trace` of `days` days from `date`, in Berlin.
    static func trace(from date: CivilDate, days: Int, in folder: TemporaryFolder) throws -> String {
        let path = folder.url.appendingPathComponent("trace-\(date)-\(days).ndjson").path
        let made = try runFlowbridge(
            ["simulate", "--trace", path, "--date", date.description, "--days", String(days), "--speed", "60"],
            environment: ["TZ": "Europe/Berlin"])
        #expect(made.status == 0, "\(made.err)")
        return path
    }

    /// The closed days the engine hands out over the trace: the totals and money at each midnight,
    /// as amended by the counters' rises across it (a closed day goes out again with them).
    static func closedDays(config: String, trace: String) throws -> [FlowEngine.ClosedDay] {
        let parsed = try DaemonConfig.parse(config, file: "config.yaml")
        var replay = Replay(config: parsed.flow, zone: zone)
        var days: [FlowEngine.ClosedDay] = []
        func take(_ outputs: [FlowEngine.Output]) {
            for case .closedDay(let day) in outputs {
                if days.last?.date == day.date { days.removeLast() }
                days.append(day)
            }
        }
        for line in try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n") {
            take(replay.feed(try TraceMessage(line: Array(line.utf8))))
        }
        take(replay.finish())
        return days
    }

    /// A simulated week across a clock change: each day row of the book is the day the engine
    /// closed at midnight, to the Wh and the cent; each day's slots add up to its row; a day of 25
    /// hours has 100 slots, one of 23 hours 92.
    @Test(arguments: [(CivilDate(year: 2026, month: 10, day: 22), 7, CivilDate(year: 2026, month: 10, day: 25), 100),
        (CivilDate(year: 2026, month: 3, day: 26), 7, CivilDate(year: 2026, month: 3, day: 29), 92)])
    func aReplayedWeekIsItsMidnightsToTheWhAndTheCent(first: CivilDate, days: Int, changeDay: CivilDate, changeSlots: Int) throws {
        let folder = TemporaryFolder()
        let config = try Self.config()
        let configPath = try folder.write("config.yaml", config)
        let trace = try Self.trace(from: first, days: days, in: folder)
        let bookPath = folder.url.appendingPathComponent("book.sqlite").path
        let replayed = try runFlowbridge(["replay", "--config", configPath, "--book", bookPath, trace])
        #expect(replayed.status == 0, "\(replayed.err)")

        let closed = try Self.closedDays(config: config, trace: trace)
        #expect(closed.count == days - 1, "\(closed.map(\.date))")  // the last day is still open at the trace's end
        let book = try DayBook(path: bookPath, create: false, readOnly: true)
        for midnight in closed {
            let rows = try book.days(from: midnight.date, through: midnight.date)
            let row = try #require(rows.first, "no row for \(midnight.date)")
            #expect(rows.count == 1)
            #expect(row.hours == midnight.hours)
            for (node, accounts) in midnight.nodeAccountsKWh["power"] ?? [:] {
                for (account, energy) in accounts {
                    #expect(abs((row.nodeAccountsKWh[node]?[account] ?? -1) - energy) < 0.0005, "\(midnight.date) \(node) \(account)")
                }
            }
            let money = try #require(midnight.money["power"])
            let booked = try #require(row.money)
            #expect(abs(booked.netCost - money.netCost) < 0.005 && abs(booked.importCost - money.importCost) < 0.005, "\(midnight.date)")
            #expect(abs(booked.standingCharge - 0.40) < 1e-9)
            // The day's slots add up to its row.
            let slots = try book.slots(from: row.start, to: row.end)
            #expect(slots.count == (midnight.date == changeDay ? changeSlots : 96), "\(midnight.date)")
            for account in EnergyAccount.allCases {
                let summed = slots.map { BookMoney.sum($0.energyKWh.values)[account] ?? 0 }.reduce(0, +)
                #expect(abs(summed - (row.accountsKWh[account] ?? 0)) < 1e-6, "\(midnight.date) \(account)")
            }
            let slotNet = slots.compactMap { $0.money?.netCost }.reduce(0, +)
            #expect(abs(slotNet - booked.netCost) < 1e-6, "\(midnight.date)")
        }

        // Replayed again: the same rows, none twice.
        let before = try Self.dump(bookPath)
        #expect(try runFlowbridge(["replay", "--config", configPath, "--book", bookPath, trace]).status == 0)
        #expect(try Self.dump(bookPath) == before)
    }

    /// `replay --book` killed at random moments, then run to its end: the book equals the one
    /// written without a fault (no slot twice, none missing).
    @Test func aReplayKilledAtRandomMomentsLeavesTheBookOfAFaultFreeOne() async throws {
        let folder = TemporaryFolder()
        let configPath = try folder.write("config.yaml", try Self.config())
        let trace = try Self.trace(from: CivilDate(year: 2026, month: 10, day: 24), days: 3, in: folder)
        let clean = folder.url.appendingPathComponent("clean.sqlite").path
        #expect(try runFlowbridge(["replay", "--config", configPath, "--book", clean, trace]).status == 0)
        let faulty = folder.url.appendingPathComponent("faulty.sqlite").path
        var generator = SystemRandomNumberGenerator()
        var killed = 0
        for _ in 0..<4 {
            let child = try ChildProcess(Repository.binary, ["replay", "--config", configPath, "--book", faulty, trace], outputFile: "/dev/null")
            // Killed once the book has rows, at a random moment after.
            _ = await eventually(timeout: .seconds(60)) { FileManager.default.fileExists(atPath: faulty) || !child.isRunning }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...400, using: &generator)))  // a random moment, not a wait for a condition
            if child.isRunning {
                child.send(SIGKILL)
                killed += 1
            }
            _ = await child.waitForExit(timeout: .seconds(60))
        }
        #expect(try runFlowbridge(["replay", "--config", configPath, "--book", faulty, trace]).status == 0)
        #expect(try Self.dump(clean) == Self.dump(faulty), "after \(killed) kills")
    }

    /// Every row of every table, as text.
    static func dump(_ path: String) throws -> String {
        let out = try runProgram(
            "/usr/bin/env",
            ["python3", "-c", "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nfor t in ['days','day_nodes','slots','slot_nodes']:\n  for r in c.execute('select * from '+t+' order by 1,2,3'): print(t, r)", path])
        #expect(out.status == 0, "\(out.err)")
        return out.out
    }

    /// `history` of a book built by replay: yesterday, the week, the billing month from the 15th,
    /// a year by month; its CSV read back by Python to the same numbers as its JSON.
    @Test func historyReadsPeriodsOfAReplayedBook() throws {
        let folder = TemporaryFolder()
        let today = Self.zone.localDate(at: Date())
        let configPath = try folder.write("config.yaml", try Self.config(extra: "billing_day: 15\nbook_file: \(folder.url.path)/book.sqlite\n"))
        // The 8 days through today, and the 14th to the 16th of last month.
        let recent = try Self.trace(from: CivilDate(daysSinceEpoch: today.daysSinceEpoch - 7), days: 8, in: folder)
        let billing = BookPeriod.billing(holding: today, billingDay: 15)
        let aroundBillingDay = try Self.trace(from: CivilDate(daysSinceEpoch: billing.first.daysSinceEpoch - 1), days: 3, in: folder)
        for trace in [recent, aroundBillingDay] {
            let replayed = try runFlowbridge(["replay", "--config", configPath, "--book", "\(folder.url.path)/book.sqlite", trace])
            #expect(replayed.status == 0, "\(replayed.err)")
        }
        func history(_ arguments: [String]) throws -> String {
            let run = try runFlowbridge(["history", "--config", configPath] + arguments)
            #expect(run.status == 0, "\(run.err)")
            return run.out
        }
        let book = try DayBook(path: "\(folder.url.path)/book.sqlite", create: false, readOnly: true)

        // Yesterday: one row, the day row.
        let yesterday = CivilDate(daysSinceEpoch: today.daysSinceEpoch - 1)
        let yesterdayJSON = try JSONValue(parsing: try history(["--period", "yesterday", "--format", "json"]))
        let rows = try #require(yesterdayJSON["rows"]?.arrayValue)
        #expect(rows.count == 1)
        let row = try #require(try book.days(from: yesterday, through: yesterday).first)
        #expect(rows.first?["accounts_kWh"]?["import"]?.numberValue == row.accountsKWh[.imported])
        #expect(rows.first?["money"]?["net_cost"]?.numberValue == row.money?.netCost)

        // The week: Monday through today, one row a day.
        let weekJSON = try JSONValue(parsing: try history(["--period", "week", "--format", "json"]))
        #expect(weekJSON["rows"]?.arrayValue?.count == Weekday(of: today).rawValue + 1, "\(weekJSON)")

        // The billing month from the 15th: its first two days are in the book, the 14th is not in it.
        let billingJSON = try JSONValue(parsing: try history(["--period", "billing", "--format", "json"]))
        let labels = billingJSON["rows"]?.arrayValue?.compactMap { $0["label"]?.stringValue } ?? []
        #expect(labels.first == billing.first.description, "\(labels)")
        #expect(!labels.contains(CivilDate(daysSinceEpoch: billing.first.daysSinceEpoch - 1).description))

        // Month rows over a year: each the sum of its days.
        let yearCSV = try history(["--period", "\(today.year - 1)-01-01..\(today)", "--by", "month", "--format", "csv"])
        let yearJSON = try JSONValue(parsing: try history(["--period", "\(today.year - 1)-01-01..\(today)", "--by", "month", "--format", "json"]))
        let read = try runProgram(
            "/usr/bin/env",
            ["python3", "-c", "import csv,sys,json\nrows=list(csv.DictReader(open(sys.argv[1])))\nprint(json.dumps([[r['start'],float(r['import_kWh']),float(r['net_cost_EUR'])] for r in rows]))",
                try folder.write("year.csv", yearCSV)])
        #expect(read.status == 0, "\(read.err)")
        let fromCSV = try JSONValue(parsing: read.out)
        let fromJSON = JSONValue.array(
            (yearJSON["rows"]?.arrayValue ?? []).map { row in
                .array([row["start"]!, row["accounts_kWh"]!["import"]!, row["money"]!["net_cost"]!])
            })
        #expect(fromCSV == fromJSON)
        #expect((fromCSV.arrayValue?.count ?? 0) >= 1)

        // The table a person reads: a total line.
        #expect(try history(["--period", "last 30d"]).contains("total"))
    }
}

/// `replay --state` without `--book` keeps its closed slots in the state, as the daemon does, and
/// the next writer of the book (here `replay --state --book`) takes them: a restart replayed
/// loses none of the day's slots.
@Suite struct BookStateQueueTests {
    @Test func closedSlotsWaitInTheStateUntilABookTakesThem() throws {
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        let book = folder.url.appendingPathComponent("book.sqlite").path
        let config = try folder.write("config.yaml", BookFailureRunTests.config(port: 1883, state: state, book: book))
        let start = BookFailureRunTests.zone.day(on: CivilDate(year: 2026, month: 6, day: 10))!.start
        func lines(_ minutes: ClosedRange<Int>) -> String {
            minutes.map { minute in
                TraceMessage(at: start.addingTimeInterval(Double(minute) * 60), topic: "grid/energy", payload: Array(JSONValue.format(1000 + Double(minute) * 0.01).utf8)).line
            }.joined(separator: "\n")
        }
        // 00:00 to 06:00: 24 slots close.
        #expect(try runFlowbridge(["replay", "--config", config, "--state", state, try folder.write("a.ndjson", lines(0...360))]).status == 0)
        let saved = try #require(savedState(state))
        #expect(BookQueue(state: saved).slots.count == 24)
        #expect(!FileManager.default.fileExists(atPath: book))
        // 06:00 to 07:00 with the book: the 24 that waited, and 4 more.
        #expect(try runFlowbridge(["replay", "--config", config, "--state", state, "--book", book, try folder.write("b.ndjson", lines(360...420))]).status == 0)
        let slots = try DayBook(path: book, create: false, readOnly: true).slots(from: start, to: start.addingTimeInterval(86_400))
        #expect(slots.count == 28)
        let importKWh = slots.map { $0.energyKWh["exchange"]?[.imported] ?? 0 }.reduce(0, +)
        // 06:59's minute is counted at the 07:00 reading, once 07:00's slot is open: 4.19 closed.
        #expect(abs(importKWh - 4.19) < 1e-6)
        let after = try #require(savedState(state))
        #expect(after["book"] == nil)
    }
}
