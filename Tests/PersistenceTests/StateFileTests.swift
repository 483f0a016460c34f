import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import Glibc
import ReplaySupport
import TestSupport
import Testing

/// The state file says what it is, has one owner, and is never confused with another file.
@Suite struct StateFileTests {
    static let trace = [
        traceLine("2026-06-01T12:00:00+02:00", "pv/power", "1000"), traceLine("2026-06-01T12:00:00+02:00", "grid/power", "100"),
        traceLine("2026-06-01T12:30:00+02:00", "pv/power", "1000"), traceLine("2026-06-01T12:30:00+02:00", "grid/power", "100"),
    ]

    @Test func aSavedStateCarriesItsFormatMarkerFirst() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let state = folder.url.appendingPathComponent("state.json").path
        let run = try runFlowbridge(["replay", "--config", config, "--state", state, try folder.write("t.ndjson", Self.trace.joined(separator: "\n"))])
        #expect(run.status == 0, "\(run.err)")
        let text = try String(contentsOfFile: state, encoding: .utf8)
        #expect(text.hasPrefix(#"{"format":"flowbridge-state","#), "\(text)")
        let json = try JSONValue(parsing: text)
        #expect(json["format"] == "flowbridge-state")
        #expect(json["totals"]?.objectValue != nil && json["readings"]?.objectValue != nil && json["version"] == 1)
        #expect(!FileManager.default.fileExists(atPath: state + ".tmp"))
    }

    /// A state written by the release before the marker is still a state: the day continues.
    @Test func aStateOfThePreviousLayoutContinuesTheDay() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let state = try folder.write("state.json", #"{"version":1,"day":"2026-06-01","day_start":1780264800,"readings":{},"totals":{"home/inputs[0]":{"kind":"integrate","kwh":2.5}}}"#)
        let run = try runFlowbridge(["replay", "--config", config, "--state", state, "--final", try folder.write("t.ndjson", Self.trace[..<2].joined(separator: "\n"))])
        #expect(run.status == 0, "\(run.err)")
        #expect(run.err.contains("continuing the day 2026-06-01"), "\(run.err)")
        let final = try finalDocument(run.out)
        #expect(final["content"]?["flow"]?["inputs"]?.arrayValue?.first?["total"] == 2.5)
        #expect(try String(contentsOfFile: state, encoding: .utf8).hasPrefix(#"{"format":"flowbridge-state","#))
    }

    /// Only a file that is recognizably a flowbridge state is ever moved aside; anything else
    /// stops the command, and the file stays byte for byte.
    @Test(arguments: [
        ("not JSON at all", "kein JSON"),
        ("another program's JSON", #"{"version":1,"readings":[1,2],"totals":{}}"#),
        ("a state of another format", #"{"format":"other-state","version":1,"readings":{},"totals":{}}"#),
    ])
    func aFileThatIsNoFlowbridgeStateIsLeftAlone(name: String, content: String) throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let state = try folder.write("state.json", content)
        let run = try runFlowbridge(["replay", "--config", config, "--state", state, try folder.write("t.ndjson", Self.trace.joined(separator: "\n"))])
        #expect(run.status == 78, "\(run.err)")
        #expect(run.err.contains("state file \(state) is not a flowbridge state"), "\(run.err)")
        #expect(run.out.isEmpty)
        #expect(try String(contentsOfFile: state, encoding: .utf8) == content)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains("corrupt") }.isEmpty)
    }

    /// A state this user may not read is an error, never a fresh day over the saved one.
    @Test func aStateThatCannotBeReadIsAnErrorNotAFreshDay() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let state = folder.url.appendingPathComponent("state.json").path
        #expect(try runFlowbridge(["replay", "--config", config, "--state", state, try folder.write("t.ndjson", Self.trace.joined(separator: "\n"))]).status == 0)
        let saved = try Data(contentsOf: URL(fileURLWithPath: state))
        chmod(state, 0o600)  // root's; the normal user may not read it
        chmod(folder.url.path, 0o777)
        let command = asNormalUser([Repository.binary, "check", "--config", config, "--state", state], in: folder)
        let checked = try runProgram(command.path, command.arguments)
        let text = checked.err
        #expect(checked.status == 78, "\(text)")
        #expect(text.contains("--state: state file \(state) cannot be read (Permission denied)"), "\(text)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: state)) == saved)
    }

    /// A writer that finds something at the old fixed temporary name (`state.json.tmp`) is not
    /// stopped by it: every write has a temporary file of its own.
    @Test func writesUseATemporaryFileOfTheirOwn() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let state = folder.url.appendingPathComponent("state.json").path
        try FileManager.default.createDirectory(atPath: state + ".tmp", withIntermediateDirectories: true)
        let run = try runFlowbridge(["replay", "--config", config, "--state", state, try folder.write("t.ndjson", Self.trace.joined(separator: "\n"))])
        #expect(run.status == 0, "\(run.err)")
        #expect(FileManager.default.fileExists(atPath: state))
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.hasPrefix("state.json.tmp-") }
        #expect(left.isEmpty, "\(left)")
    }

    /// `replay --state` on a state another process owns is refused, naming its PID.
    @Test func aStateWithAnOwnerIsRefused() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let state = folder.url.appendingPathComponent("state.json").path
        let fd = open(state + ".lock", O_RDWR | O_CREAT, 0o600)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        _ = Array("\(getpid())\n".utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let trace = try folder.write("t.ndjson", Self.trace.joined(separator: "\n"))
        let refused = try runFlowbridge(["replay", "--config", config, "--state", state, trace])
        #expect(refused.status == 75)
        #expect(refused.err.contains("the state is in use by another flowbridge (pid \(getpid())"), "\(refused.err)")
        #expect(!FileManager.default.fileExists(atPath: state))
        flock(fd, LOCK_UN)
        #expect(try runFlowbridge(["replay", "--config", config, "--state", state, trace]).status == 0)
    }

    @Test(arguments: [
        (["STATE_DIRECTORY": "/var/lib/private/flowbridge:/var/lib/other", "HOME": "/home/x"], "/var/lib/private/flowbridge/state.json"),
        (["STATE_DIRECTORY": "/run/fb"], "/run/fb/state.json"),
    ])
    func theDefaultStateFileUnderSystemd(environment: [String: String], expected: String) {
        #expect(StateStore.defaultPath(environment: environment) == expected)
    }

    /// A normal user cannot write /var/lib: the state goes to $XDG_STATE_HOME, else ~/.local/state.
    @Test(arguments: [(["XDG_STATE_HOME": "XDG"], "XDG/flowbridge/state.json"), (["HOME": "HOME"], "HOME/.local/state/flowbridge/state.json")])
    func theDefaultStateFileOfANormalUser(environment: [String: String], expected: String) throws {
        let folder = TemporaryFolder()
        giveToNormalUser(folder.url.path)
        let config = try folder.write("config.yaml", BerlinDay.config)
        func resolved(_ text: String) -> String { text.replacingOccurrences(of: "XDG", with: folder.url.path + "/xdg").replacingOccurrences(of: "HOME", with: folder.url.path + "/home") }
        let command = asNormalUser(["/usr/bin/env", "-u", "STATE_DIRECTORY", "-u", "XDG_STATE_HOME"]
            + environment.map { "\($0.key)=\(resolved($0.value))" } + [Repository.binary, "check", "--config", config], in: folder)
        let checked = try runProgram(command.path, command.arguments)
        let text = checked.out + checked.err
        #expect(checked.status == 0, "\(text)")
        #expect(text.contains("state kept in \(resolved(expected))"), "\(text)")
    }
}
