@testable import Persistence
import FlowCore
import Foundation
import Glibc
import TestSupport
import Testing

/// The state is kept in two copies rewritten in turn, in place: each save leaves the whole new
/// state as the newest copy, no name changes while the daemon runs, and the stop leaves the
/// state alone at its path.
@Suite struct StateFileWriterTests {
    static func inode(_ path: String) -> UInt64? {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    static func names(in folder: TemporaryFolder) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()
    }

    /// (what, how many saves while running, whether the stop's save follows, the files left)
    static let runs: [(String, Int, Bool, [String])] = [
        ("a replay's one save", 0, true, ["state.json"]),
        ("the first save of a run", 1, false, ["state.json"]),
        ("a run that saved twice", 2, false, ["state.json", "state.json.alt"]),
        ("a long run", 30, false, ["state.json", "state.json.alt"]),
        ("a long run, then the stop into the state's path", 30, true, ["state.json"]),
        ("three saves, then the stop into the alternate copy", 3, true, ["state.json"]),
    ]

    @Test(arguments: runs)
    func everySaveLeavesTheWholeStateInPlace(what: String, saves: Int, stop: Bool, files: [String]) throws {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("state.json").path
        let store = StateStore(path: path)
        var inodes: [String: UInt64] = [:]
        for save in 0..<(saves + (stop ? 1 : 0)) {
            // The state grows a little from save to save, as a day's numbers do.
            let state: JSONValue = ["version": 1, "readings": [:], "totals": ["w/inputs[0]": ["kind": "integrate", "kwh": .number(Double(save) / 7)]]]
            try store.save(state, last: save == saves)
            guard case .state(let saved) = store.inspect(), var members = saved.objectValue else {
                Issue.record("\(what), save \(save): not read back as a state")
                return
            }
            #expect(members.removeValue(forKey: "format") == "flowbridge-state", "\(what), save \(save)")
            #expect(JSONValue.object(members) == state, "\(what), save \(save)")
            let newest = try #require(store.newest(), "\(what)")
            #expect(newest.sequence == UInt64(save + 1), "\(what)")
            // The newest copy: whole blocks, the seal last, the marker and its sequence first.
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: newest.file)))
            var info = stat()
            #expect(stat(newest.file, &info) == 0 && bytes.count % Int(info.st_blksize) == 0, "\(what): \(bytes.count) bytes")
            #expect(bytes.last == 0x0A)
            #expect(String(decoding: bytes, as: UTF8.self).hasPrefix(#"{"format":"flowbridge-state","sequence":\#(save + 1),"#))
            // Rewritten in place while running: a copy keeps its file.
            if save < saves {
                #expect(inodes[newest.file].map { $0 == Self.inode(newest.file) } ?? true, "\(what): \(newest.file) was replaced")
                inodes[newest.file] = Self.inode(newest.file)
            }
        }
        #expect(try Self.names(in: folder) == files, "\(what)")
    }

    /// Something at the alternate copy's name that is not a plain file of its own is left as it
    /// is, and never read: each save is then a new file renamed over the state
    /// (`FileIO.writeAtomically`).
    @Test(arguments: ["a folder", "a link to another file", "a second name of another file"])
    func anAlternateThatIsNotAPlainFileOfItsOwnIsLeftAlone(what: String) throws {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("state.json").path
        let other = try folder.write("other.txt", "not the state\n")
        switch what {
        case "a folder": try FileManager.default.createDirectory(atPath: path + ".alt", withIntermediateDirectories: false)
        case "a link to another file": try FileManager.default.createSymbolicLink(atPath: path + ".alt", withDestinationPath: other)
        default: #expect(link(other, path + ".alt") == 0)
        }
        let store = StateStore(path: path)
        for save in 0..<3 {
            try store.save(["version": 1, "readings": [:], "totals": [:], "n": .number(Double(save))], last: false)
            #expect(try JSONValue(parsing: [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))["n"] == .number(Double(save)), "\(what)")
            guard case .state(let saved) = store.inspect() else {
                Issue.record("\(what): not read back")
                return
            }
            #expect(saved["n"] == .number(Double(save)), "\(what)")
        }
        try store.save(["version": 1, "readings": [:], "totals": [:]], last: true)
        #expect(try String(contentsOfFile: other, encoding: .utf8) == "not the state\n", "\(what)")
        #expect(FileManager.default.fileExists(atPath: path + ".alt") || what == "a link to another file", "\(what)")
        #expect(try Self.names(in: folder).filter { $0.hasPrefix("state.json.tmp-") }.isEmpty)
    }

    /// A copy torn by a power cut (longer than the state, garbage at its end) is overwritten and
    /// cut to the new state's blocks: nothing of it stays behind the JSON.
    @Test func aTornCopyIsOverwrittenWhole() throws {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("state.json").path
        let store = StateStore(path: path)
        try store.save(["version": 1, "readings": [:], "totals": [:]], last: false)
        _ = try folder.write("state.json.alt", #"{"format":"flowbridge-state","tor"# + String(repeating: "x", count: 20_000))
        try store.save(["version": 1, "readings": [:], "totals": [:], "n": 2], last: false)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + ".alt")))
        #expect(bytes.count < 20_000)
        #expect(try JSONValue(parsing: bytes)["n"] == 2)
        guard case .state(let saved) = store.inspect() else {
            Issue.record("not read back")
            return
        }
        #expect(saved["n"] == 2)
    }

    /// The first save after an upgrade replaces the state of the release before whole (renamed
    /// over it, as that release saved), and removes that release's spare (an older state) and an
    /// alternate copy a later release left before it; the saves after it take turns in place.
    @Test func theFirstSaveAfterAnUpgradeReplacesTheUnsealedState() throws {
        let folder = TemporaryFolder()
        let path = try folder.write("state.json", #"{"format":"flowbridge-state","readings":{},"totals":{},"version":1}"#)
        _ = try folder.write("state.json.spare", #"{"format":"flowbridge-state","readings":{},"totals":{},"version":1,"n":0}"#)
        _ = try folder.write("state.json.alt", String(decoding: StateSeal.sealed(Array(#"{"n":-1}"#.utf8), sequence: 40), as: UTF8.self))
        let store = StateStore(path: path)
        #expect(store.newest().map { [$0.file, "\($0.sequence)", "\($0.sealed)"] } == [path, "0", "false"])
        for save in 1...3 {
            try store.save(["version": 1, "readings": [:], "totals": [:], "n": .number(Double(save))], last: false)
            #expect(store.newest().map { [$0.file, "\($0.sequence)", "\($0.sealed)"] } == [save == 2 ? path + ".alt" : path, "\(save)", "true"])
            guard case .state(let saved) = store.inspect() else {
                Issue.record("save \(save): not read back")
                return
            }
            #expect(saved["n"] == .number(Double(save)))
            #expect(try Self.names(in: folder) == (save == 1 ? ["state.json"] : ["state.json", "state.json.alt"]), "save \(save)")
        }
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
