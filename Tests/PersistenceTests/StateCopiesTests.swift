@testable import Persistence
import FlowCore
import Foundation
import ReplaySupport
import TestSupport
import Testing

/// The state's two copies through `flowbridge replay --state`, which restores and saves as the
/// daemon does: a save torn by a power cut in either copy leaves the other one, the save before,
/// which is read and named in the log; a state of the release before the two copies is read as it
/// was.
@Suite struct StateCopiesTests {
    /// The day of `BerlinDay.trace`'s first readings, the solar total at `kWh`.
    static func day(solarKWh: Double) -> JSONValue {
        [
            "version": 1, "day": "2026-06-01", "day_start": 1_780_264_800, "readings": [:],
            "totals": ["home/inputs[0]": ["kind": "integrate", "kwh": .number(solarKWh)]],
        ]
    }

    /// Replays the first minute of `BerlinDay` on the state at `state`: the log, and the solar
    /// total the day continued with.
    static func replay(_ folder: TemporaryFolder, state: String) throws -> (log: String, solarKWh: JSONValue?) {
        let config = try folder.write("config.yaml", BerlinDay.config)
        let trace = try folder.write("t.ndjson", BerlinDay.trace()[..<2].joined(separator: "\n"))
        let run = try runFlowbridge(["replay", "--config", config, "--state", state, "--final", trace])
        #expect(run.status == 0, "\(run.err)")
        return (run.err, try finalDocument(run.out)["content"]?["flow"]?["inputs"]?.arrayValue?.first?["total"])
    }

    static func stateFiles(in folder: TemporaryFolder) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.hasPrefix("state.json") }.sorted()
    }

    /// (what a power cut left of the newer copy, the damage)
    static let damages: [(String, @Sendable ([UInt8]) -> [UInt8])] = [
        ("cut short", { Array($0.prefix(90)) }),
        ("a total's sector torn, still JSON", { bytes in
            Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: #""kwh":3.5"#, with: #""kwh":8.5"#).utf8)
        }),
        ("zeroed", { [UInt8](repeating: 0, count: $0.count) }),
    ]

    /// The newer copy (`state.json` or `state.json.alt`) torn three ways: the older one is read,
    /// and the log names both. The replay's save then leaves one whole state at the state's path.
    @Test(arguments: ["state.json", "state.json.alt"], damages)
    func aTornCopyLeavesTheSaveBeforeIt(newer: String, damage: (String, @Sendable ([UInt8]) -> [UInt8])) throws {
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        let store = StateStore(path: state)
        // Saves go to state.json, then the alternate, then state.json again: the last two the older and the newer.
        let saves = newer == "state.json" ? [0.5, 2.5, 3.5] : [2.5, 3.5]
        for kWh in saves { try store.save(Self.day(solarKWh: kWh), last: false) }
        let newerPath = folder.url.appendingPathComponent(newer).path
        let older = newer == "state.json" ? state + ".alt" : state
        #expect(store.newest()?.file == newerPath)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: newerPath)))
        try Data(damage.1(bytes)).write(to: URL(fileURLWithPath: newerPath))

        let (log, solarKWh) = try Self.replay(folder, state: state)
        #expect(solarKWh == 2.5, "\(damage.0): \(log)")
        #expect(log.contains("state \(newerPath) "), "\(damage.0): \(log)")
        #expect(log.contains("continuing the day 2026-06-01 from \(older)"), "\(damage.0): \(log)")
        #expect(!log.contains("starting a fresh day"), "\(damage.0): \(log)")
        #expect(try Self.stateFiles(in: folder) == ["state.json", "state.json.lock"], "\(damage.0)")
        // The replay's save is newer than any copy read.
        #expect((StateStore(path: state).newest()?.sequence ?? 0) >= UInt64(saves.count))
    }

    /// The one state of a release before the two copies (no seal), its spare beside it (the state
    /// before it), and an alternate copy left by a later release before a downgrade: the old state
    /// is the state, the day continues from it, and the stop leaves it sealed and alone.
    @Test(arguments: [false, true])
    func anUpgradeContinuesFromTheSingleStateFile(withStaleAlternate: Bool) throws {
        let folder = TemporaryFolder()
        let state = try folder.write(
            "state.json",
            #"{"format":"flowbridge-state","day":"2026-06-01","day_start":1780264800,"readings":{},"totals":{"home/inputs[0]":{"kind":"integrate","kwh":2.5}},"version":1}"#
                + String(repeating: " ", count: 3000) + "\n")
        _ = try folder.write(
            "state.json.spare",
            #"{"format":"flowbridge-state","day":"2026-06-01","day_start":1780264800,"readings":{},"totals":{"home/inputs[0]":{"kind":"integrate","kwh":1.5}},"version":1}"#)
        if withStaleAlternate {
            _ = try folder.write("state.json.alt", String(decoding: StateSeal.sealed(Self.day(solarKWh: 9.5).encoded(), sequence: 40), as: UTF8.self))
        }
        let (log, solarKWh) = try Self.replay(folder, state: state)
        #expect(solarKWh == 2.5, "\(log)")
        #expect(log.contains("continuing the day 2026-06-01 from \(state)"), "\(log)")
        #expect(try Self.stateFiles(in: folder) == ["state.json", "state.json.lock"])
        let saved = try String(contentsOfFile: state, encoding: .utf8)
        #expect(saved.hasPrefix(#"{"format":"flowbridge-state","sequence":"#), "\(saved)")
        #expect(StateStore(path: state).newest()?.file == state)
    }

    /// A sealed state a person edited (its checksum no longer matches) and no other copy: read as
    /// it is, with a warning; the edit is not lost.
    @Test func anEditedStateWithoutAnotherCopyIsReadWithAWarning() throws {
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        try StateStore(path: state).save(Self.day(solarKWh: 2.5))
        let text = try String(contentsOfFile: state, encoding: .utf8).replacingOccurrences(of: #""kwh":2.5"#, with: #""kwh":4"#)
        try text.write(toFile: state, atomically: false, encoding: .utf8)
        let (log, solarKWh) = try Self.replay(folder, state: state)
        #expect(solarKWh == 4, "\(log)")
        #expect(log.contains("state \(state): its checksum does not match (edited by hand?)"), "\(log)")
    }
}
