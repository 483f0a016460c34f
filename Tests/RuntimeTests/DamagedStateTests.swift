import FlowCore
import Foundation
import TestSupport
import Testing

/// `flowbridge run` on a state file that a power cut, a full SD card or an editor left damaged:
/// the daemon starts, moves the file aside (or reads it), logs what it did and writes a fresh
/// state. Only a file that is clearly another program's keeps it from starting.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct DamagedStateTests {
    /// Today's day in UTC, with a solar total of 2.5 kWh: a good state, as flowbridge writes it.
    static func goodState() -> String {
        let dayStart = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400
        let date = CivilDate(daysSinceEpoch: Int(dayStart / 86_400))
        return #"{"format":"flowbridge-state","day":"\#(date)","day_start":\#(Int(dayStart)),"readings":{},"totals":{"power/inputs[0]":{"kind":"integrate","kwh":2.5}},"version":1}"#
    }

    static func config(broker: MosquittoBroker, state: String) -> String {
        "timezone: UTC\n" + RunTests.config(port: broker.port, state: state)
    }

    /// The daemon on `content` as its state: it runs, takes a message, and writes a fresh state.
    func run(on content: [UInt8], expecting log: String) async throws -> (text: String, saved: JSONValue, folder: TemporaryFolder) {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        try Data(content).write(to: URL(fileURLWithPath: state))
        let daemon = try RunTests.Daemon(config: Self.config(broker: broker, state: state), folder: folder)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(daemon.text.contains(log), "\(daemon.text)")
        try await broker.publish(topic: "solar/ac/power", payload: "3200")
        #expect(await daemon.waitFor(#""rate":3200"#), "\(daemon.text)")
        await daemon.stop()
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: state)))
        #expect(bytes.starts(with: Array(#"{"format":"flowbridge-state","#.utf8)))
        return (daemon.text, try JSONValue(parsing: bytes), folder)
    }

    /// A kind of damage, named for the test's report.
    struct Damage: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var bytes: [UInt8]
    }

    /// Each kind of damage: moved aside, said in the log, and the day starts fresh.
    @Test(arguments: [
        Damage(testDescription: "an empty file", bytes: []),
        Damage(testDescription: "a file of NUL bytes (a power cut on an SD card)", bytes: [UInt8](repeating: 0, count: 4096)),
        Damage(testDescription: "a torn prefix of the marker", bytes: Array(#"{"format":"flowbr"#.utf8)),
        Damage(testDescription: "a torn prefix of a state", bytes: Array(Self.goodState().utf8.prefix(60))),
    ])
    func aDamagedStateIsMovedAsideAndTheDayStartsFresh(damage: Damage) async throws {
        let kind = damage.testDescription
        let (text, saved, folder) = try await run(on: damage.bytes, expecting: "starting a fresh day")
        #expect(text.contains("cannot be used ("), "\(kind): \(text)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.hasPrefix("state.json.corrupt-") }
        #expect(kept.count == 1, "\(kind)")
        #expect(saved["readings"]?["solar"]?["value"] == 3200)
    }

    /// A good state behind a UTF-8 byte order mark (an editor saved it): read, and the day goes on.
    @Test func aStateBehindAByteOrderMarkIsRead() async throws {
        let (text, saved, folder) = try await run(on: [0xEF, 0xBB, 0xBF] + Array(Self.goodState().utf8), expecting: "continuing the day")
        #expect(!text.contains("cannot be used"), "\(text)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains("corrupt") }.isEmpty)
        #expect((saved["totals"]?["power/inputs[0]"]?["kwh"]?.numberValue ?? 0) >= 2.5)
    }

    /// Another program's file at the state path still stops the daemon, and stays as it is.
    @Test func anotherProgramsFileIsStillRefused() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let state = try folder.write("state.json", #"{"settings":{"volume":3}}"#)
        let daemon = try RunTests.Daemon(config: Self.config(broker: broker, state: state), folder: folder)
        #expect(await daemon.process.waitForExit(timeout: .seconds(10)))
        #expect(daemon.process.exitCode == 78, "\(daemon.text)")
        #expect(daemon.text.contains("is not a flowbridge state"), "\(daemon.text)")
        #expect(try String(contentsOfFile: state, encoding: .utf8) == #"{"settings":{"volume":3}}"#)
    }
}
