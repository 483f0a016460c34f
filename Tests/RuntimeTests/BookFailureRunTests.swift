import Commands
@testable import DayBook
import FlowCore
import Foundation
import Glibc
import Platform
import TestSupport
import ReplaySupport
import Testing

/// A day book that cannot be written stops nothing: `flowbridge run` (a child process, a real
/// mosquitto) keeps pushing, says so once, keeps the closed slots in its state, and writes them
/// when the cause is gone, losing nothing.
///
/// The rows to write come from a day that closes at the start: a state of yesterday's last minutes,
/// made by `replay --state` from a grid meter's counter, which the daemon closes at its first tick
/// (yesterday's last slot, and the day).
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason))
struct BookFailureRunTests {
    /// How the book is kept from being written, and how that ends.
    enum Fault: String, CaseIterable, CustomTestStringConvertible {
        /// A folder where the book file should be.
        case folderAtBookPath
        /// A file that is not SQLite.
        case damagedFile
        /// A folder nobody may write, not even root (`chattr +i`).
        case readOnlyFolder
        /// A full file system (a small tmpfs, filled).
        case fullDisk
        /// Another program's transaction (SQLite's write lock, held): each try waits for it.
        case lockedByAnotherProgram

        var testDescription: String { rawValue }
    }

    static let zone = SystemTimeZone(identifier: "Europe/Berlin")!

    /// The kill test's home (a grid meter's counter, a solar rate) in Berlin, with a book.
    static func config(port: Int, state: String, book: String) -> String {
        StateSaveKillTests.config(port: port, state: state).replacing("timezone: UTC", with: "timezone: Europe/Berlin") + "\nbook_file: \(book)\n"
    }

    /// Yesterday from 23:50 to 23:59, inside its last slot: the meter rises 0.01 kWh a minute.
    static func yesterdayTrace() -> (lines: [String], importKWh: Double, date: CivilDate) {
        let today = zone.localDate(at: Date())
        let date = CivilDate(daysSinceEpoch: today.daysSinceEpoch - 1)
        let start = zone.day(on: date)!.end.addingTimeInterval(-600)
        let lines = (0...9).map { minute in
            TraceMessage(at: start.addingTimeInterval(Double(minute) * 60), topic: "grid/energy", payload: Array(JSONValue.format(1000 + Double(minute) * 0.01).utf8)).line
        }
        return (lines, 0.09, date)
    }

    @Test(arguments: Fault.allCases)
    func theDaemonPushesOnAndCatchesUpOnceTheBookCanBeWritten(fault: Fault) async throws {
        let folder = TemporaryFolder()
        let bookFolder = folder.url.appendingPathComponent("book").path
        try FileManager.default.createDirectory(atPath: bookFolder, withIntermediateDirectories: true)
        if fault == .fullDisk {
            guard mount("tmpfs", bookFolder, "tmpfs", 0, "size=256k") == 0 else {
                Issue.record("cannot mount a small tmpfs here (\(String(cString: strerror(errno)))): the full disk is not tested")
                return
            }
        }
        defer { if fault == .fullDisk { umount(bookFolder) } }
        let book = "\(bookFolder)/book.sqlite"
        let broker = try await MosquittoBroker()
        let state = folder.url.appendingPathComponent("state.json").path
        let config = Self.config(port: broker.port, state: state, book: book)
        let trace = Self.yesterdayTrace()
        let made = try runFlowbridge(
            ["replay", "--config", try folder.write("config.yaml", config), "--state", state, try folder.write("day.ndjson", trace.lines.joined(separator: "\n"))])
        #expect(made.status == 0, "\(made.err)")

        // The fault, and the daemon.
        let filler = "\(bookFolder)/filler"
        var holder: SQLiteDatabase?
        switch fault {
        case .folderAtBookPath: try FileManager.default.createDirectory(atPath: book, withIntermediateDirectories: false)
        case .damagedFile: try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: book))
        case .readOnlyFolder: #expect(try runProgram("/usr/bin/chattr", ["+i", bookFolder]).status == 0)
        case .fullDisk: _ = try runProgram("/bin/dd", ["if=/dev/zero", "of=\(filler)", "bs=4k"])  // until the disk is full
        case .lockedByAnotherProgram:
            _ = try DayBook(path: book)
            holder = try SQLiteDatabase(path: book, create: false)
            try holder?.execute("BEGIN IMMEDIATE")
        }
        defer { if fault == .readOnlyFolder { _ = try? runProgram("/usr/bin/chattr", ["-i", bookFolder]) } }
        let daemon = try RunTests.Daemon(config: config, folder: folder)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        if fault == .lockedByAnotherProgram {
            // The write waits for the lock in SQLite's busy handler (its sleeps, up to 2 s a try),
            // on the book's own thread: the thread of the daemon's other tasks (a reload, the
            // stop) is not held meanwhile.
            let pid = daemon.process.pid
            var waiting: [ProcessThread] = []
            #expect(await eventually(timeout: .seconds(30)) {
                waiting = ProcessThread.all(of: pid).values.filter(\.sleeps)
                return !waiting.isEmpty
            }, "\(daemon.text)")
            #expect(waiting.map(\.name) == ["day book"], "\(waiting)")
        }
        #expect(await daemon.waitFor("the closed slots wait in the state"), "\(daemon.text)")
        // Pushes go on: a reading of today moves the widget.
        try await broker.publish(topic: "grid/power", payload: "1234")
        #expect(await daemon.waitFor(#""rate":1234"#), "\(daemon.text)")
        // The queue reaches the state file while the book is out (the daemon saves it a minute
        // apart at most; `check` reads it from there).
        #expect(await eventually(timeout: .seconds(90)) { savedState(state)?["book"] != nil })
        let checked = try runFlowbridge(["check", "--config", "\(folder.url.path)/config.yaml"])
        #expect(checked.out.contains("wait in the state for the day book"), "\(checked.out)\(checked.err)")

        // The cause goes away: within a retry the book is written, and the log says so once.
        switch fault {
        case .folderAtBookPath: try FileManager.default.removeItem(atPath: book)
        case .damagedFile: try FileManager.default.removeItem(atPath: book)
        case .readOnlyFolder: #expect(try runProgram("/usr/bin/chattr", ["-i", bookFolder]).status == 0)
        case .fullDisk: try FileManager.default.removeItem(atPath: filler)
        case .lockedByAnotherProgram: try holder?.execute("ROLLBACK")
        }
        #expect(await daemon.waitFor("is written again", timeout: .seconds(60)), "\(daemon.text)")
        #expect(daemon.text.components(separatedBy: "the closed slots wait in the state").count == 2, "said more than once:\n\(daemon.text)")
        await daemon.stop()

        let written = try DayBook(path: book, create: false, readOnly: true)
        let days = try written.days(from: trace.date, through: trace.date)
        let day = try #require(days.first, "no day row for \(trace.date)")
        #expect(abs((day.accountsKWh[.imported] ?? 0) - trace.importKWh) < 0.0005, "\(day)")
        let slots = try written.slots(from: day.start, to: day.end)
        #expect(slots.map(\.start) == [day.end.addingTimeInterval(-ClosedSlot.seconds)])
        let summed = slots.map { $0.energyKWh["exchange"]?[.imported] ?? 0 }.reduce(0, +)
        #expect(abs(summed - (day.accountsKWh[.imported] ?? 0)) < 1e-9)
        // Nothing waits any more.
        let saved = try #require(savedState(state))
        #expect(saved["book"] == nil, "\(saved["book"] ?? .null)")
    }
}
