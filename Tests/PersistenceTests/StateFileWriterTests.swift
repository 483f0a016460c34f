@testable import Persistence
import FlowCore
import Foundation
import Glibc
import TestSupport
import Testing

/// The state is rewritten into a spare beside it and the two names exchanged: each save leaves
/// the whole new state at the state's path, reuses the two files instead of making a new one,
/// and the stop leaves the state alone in its folder.
@Suite struct StateFileWriterTests {
    static func inode(_ path: String) -> UInt64? {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    static func names(in folder: TemporaryFolder) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()
    }

    /// (what, how many saves while running, whether the stop's save follows, the files left, how
    /// many files the state's path ever named)
    static let runs: [(String, Int, Bool, [String], Int)] = [
        ("a replay's one save", 0, true, ["state.json"], 1),
        ("the first save of a run", 1, false, ["state.json"], 1),
        ("a run that saved twice", 2, false, ["state.json", "state.json.spare"], 2),
        ("a long run", 30, false, ["state.json", "state.json.spare"], 2),
        ("a long run, then the stop", 30, true, ["state.json"], 2),
    ]

    @Test(arguments: runs)
    func everySaveLeavesTheWholeStateAndReusesTwoFiles(
        what: String, saves: Int, stop: Bool, files: [String], inodes: Int
    ) throws {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("state.json").path
        let store = StateStore(path: path)
        var seen: Set<UInt64> = []
        for save in 0..<(saves + (stop ? 1 : 0)) {
            // The state grows a little from save to save, as a day's numbers do.
            let state: JSONValue = ["version": 1, "readings": [:], "totals": ["w/inputs[0]": ["kind": "integrate", "kwh": .number(Double(save) / 7)]]]
            try store.save(state, last: save == saves)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            var saved = try JSONValue(parsing: bytes).objectValue ?? [:]
            #expect(saved.removeValue(forKey: "format") == "flowbridge-state", "\(what), save \(save)")
            #expect(JSONValue.object(saved) == state, "\(what), save \(save)")
            var info = stat()
            #expect(stat(path, &info) == 0 && bytes.count % Int(info.st_blksize) == 0, "\(what): \(bytes.count) bytes")
            #expect(bytes.last == 0x0A)
            guard case .state = store.inspect() else {
                Issue.record("\(what), save \(save): not read back as a state")
                return
            }
            Self.inode(path).map { _ = seen.insert($0) }
        }
        #expect(try Self.names(in: folder) == files, "\(what)")
        #expect(seen.count == inodes, "\(what): the state's path named \(seen.count) files")
    }

    /// Something at the spare's name that is not a plain file of its own is left as it is: the save
    /// is then a new file, renamed (`FileIO.writeAtomically`).
    @Test(arguments: ["a folder", "a link to another file", "a second name of another file"])
    func aSpareThatIsNotAPlainFileOfItsOwnIsLeftAlone(what: String) throws {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("state.json").path
        let other = try folder.write("other.txt", "not the state\n")
        switch what {
        case "a folder": try FileManager.default.createDirectory(atPath: path + ".spare", withIntermediateDirectories: false)
        case "a link to another file": try FileManager.default.createSymbolicLink(atPath: path + ".spare", withDestinationPath: other)
        default: #expect(link(other, path + ".spare") == 0)
        }
        let store = StateStore(path: path)
        for save in 0..<3 {
            try store.save(["version": 1, "readings": [:], "totals": [:], "n": .number(Double(save))], last: false)
            #expect(try JSONValue(parsing: [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))["n"] == .number(Double(save)), "\(what)")
        }
        #expect(try String(contentsOfFile: other, encoding: .utf8) == "not the state\n", "\(what)")
        #expect(try Self.names(in: folder).filter { $0.hasPrefix("state.json.tmp-") }.isEmpty)
    }

    /// A spare torn by a power cut (longer than the state, garbage at its end) is overwritten and
    /// cut to the new state's blocks: nothing of it stays behind the JSON.
    @Test func aTornSpareIsOverwrittenWhole() throws {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("state.json").path
        let store = StateStore(path: path)
        try store.save(["version": 1, "readings": [:], "totals": [:]], last: false)
        _ = try folder.write("state.json.spare", #"{"format":"flowbridge-state","tor"# + String(repeating: "x", count: 20_000))
        try store.save(["version": 1, "readings": [:], "totals": [:], "n": 2], last: false)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.count < 20_000)
        #expect(try JSONValue(parsing: bytes)["n"] == 2)
    }

    /// (bytes, the file system's block, the padded length)
    @Test(arguments: [(1_751, 4_096, 4_096), (4_095, 4_096, 4_096), (4_096, 4_096, 4_096), (4_097, 4_096, 8_192), (700, 0, 1_024), (70_000, 1 << 20, 131_072)])
    func theStateIsPaddedToWholeBlocks(count: Int, blockSize: Int, padded: Int) throws {
        let bytes = [UInt8](repeating: UInt8(ascii: "1"), count: count - 1) + [0x0A]
        let result = StateFileWriter.padded(bytes, blockSize: blockSize)
        #expect(result.count == padded)
        #expect(Array(result.prefix(count)) == bytes)
        #expect(result.dropFirst(count).allSatisfy { $0 == UInt8(ascii: " ") || $0 == 0x0A })
        #expect(result.last == 0x0A)
    }
}
