import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import TestSupport
import Testing

/// `check` agrees with `run`: every problem `run` can find from the config (and what it refers to
/// in this environment) is found by `check`, with its line, and `run` refuses it the same way.
@Suite struct CheckTests {
    static let sources = """
        sources:
          a: {topic: x}
        widgets:
          w: {template: flow, flow: {output: {rate: a}}}
        """

    /// A config problem, the words both commands say, and the environment they run in.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// The config; `STATE` stands for a state file in the test's folder, `FOLDER` for the folder.
        var config: String
        var expected: String
        var environment: [String: String] = [:]
        /// Files to create in the folder first: name → content (nil: a directory).
        var files: [String: String?] = [:]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "empty host", config: "mqtt: {host: \"\"}\n" + sources, expected: "line 1: mqtt.host: must be a host name or address"),
        Case(name: "keepalive 0 s", config: "mqtt: {keepalive: 0s}\n" + sources, expected: "line 1: mqtt.keepalive: must be whole seconds from 5s to 65535s"),
        Case(name: "keepalive 100,000 s", config: "mqtt: {keepalive: 100000}\n" + sources, expected: "line 1: mqtt.keepalive: must be whole seconds from 5s to 65535s"),
        Case(name: "missing password_file", config: "mqtt: {username: u, password_file: FOLDER/nope}\n" + sources,
             expected: "line 1: mqtt.password_file: cannot read FOLDER/nope: No such file or directory"),
        Case(name: "empty password_file", config: "mqtt: {username: u, password_file: FOLDER/empty}\n" + sources,
             expected: "line 1: mqtt.password_file: FOLDER/empty is empty", files: ["empty": "\n"]),
        Case(name: "password_file outside systemd", config: "mqtt: {username: u, password_file: mqtt-password}\n" + sources,
             expected: "line 1: mqtt.password_file: 'mqtt-password' is a credential name, and $CREDENTIALS_DIRECTORY is unset"),
        Case(name: "unset password_env", config: "mqtt: {username: u, password_env: FLOWBRIDGE_TEST_UNSET}\n" + sources,
             expected: "line 1: mqtt.password_env: the environment variable FLOWBRIDGE_TEST_UNSET is not set"),
        Case(name: "password without username", config: "mqtt: {password_env: HOME}\n" + sources,
             expected: "line 1: mqtt.password_env: a password needs a username"),
        Case(name: "unreadable TLS CA", config: "mqtt: {tls: {ca_file: FOLDER/ca.pem}}\n" + sources,
             expected: "line 1: mqtt.tls.ca_file: cannot read FOLDER/ca.pem: No such file or directory"),
        Case(name: "Victron keepalive with a wildcard", config: "keepalive: [{topic: R/+/keepalive}]\n" + sources,
             expected: "line 1: keepalive[0].topic: 'R/+/keepalive' is not a topic to publish to"),
        Case(name: "empty Victron keepalive", config: "keepalive:\n  - {topic: \"\"}\n" + sources,
             expected: "line 2: keepalive[0].topic: '' is not a topic to publish to"),
        Case(name: "state_file a directory", config: "state_file: FOLDER/dir\n" + sources,
             expected: "line 1: state_file: FOLDER/dir is a directory", files: ["dir": nil]),
        Case(name: "state_file the config", config: "state_file: FOLDER/config.yaml\n" + sources,
             expected: "line 1: state_file: FOLDER/config.yaml is the config file"),
        Case(name: "state_file another program's file", config: "state_file: FOLDER/notes.json\n" + sources,
             expected: "line 1: state_file: FOLDER/notes.json is not a flowbridge state", files: ["notes.json": #"{"todo": []}"#]),
        Case(name: "default state another program's file", config: sources,
             expected: "state file FOLDER/state/state.json is not a flowbridge state", environment: ["STATE_DIRECTORY": "FOLDER/state"],
             files: ["state": nil, "state/state.json": "hello"]),
        Case(name: "unknown direction flag",
             config: "sources:\n  battery: {topic: ess/battery, direction: {positive: charging, negative: discharging}}\n  discharging: {topic: ess/discharging}\nwidgets:\n  w: {template: flow, flow: {storage: {rate: battery}}}\n",
             expected: "line 2: sources.battery.direction.positive: unknown source 'charging' (sources: battery, discharging)"),
    ]

    @Test(arguments: cases)
    func checkFindsWhatRunRefuses(_ test: Case) throws {
        let folder = TemporaryFolder()
        func resolved(_ text: String) -> String { text.replacingOccurrences(of: "FOLDER", with: folder.url.path) }
        for (name, content) in test.files.sorted(by: { $0.key < $1.key }) {
            if let content { _ = try folder.write(name, content) } else {
                try FileManager.default.createDirectory(at: folder.url.appendingPathComponent(name), withIntermediateDirectories: true)
            }
        }
        let config = try folder.write("config.yaml", resolved(test.config))
        let before = try Self.listing(folder)
        let environment = test.environment.mapValues(resolved)
        let expected = "config.yaml: \(resolved(test.expected))"
        for command in ["check", "run"] {
            let result = try runFlowbridgeMeasured([command, "--config", config], environment: environment)
            #expect(result.status == 78, "\(command): \(result.err)")
            #expect(result.err.contains(expected), "\(command): \(result.err)")
            #expect(!result.err.contains("OK"))
        }
        // Nothing was renamed, moved or written.
        #expect(try Self.listing(folder) == before)
    }

    /// Every file under the folder with its bytes.
    static func listing(_ folder: TemporaryFolder) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for item in FileManager.default.subpaths(atPath: folder.url.path) ?? [] {
            let url = folder.url.appendingPathComponent(item)
            files[item] = (try? Data(contentsOf: url)) ?? Data("<dir>".utf8)
        }
        return files
    }

    /// A regex that repeats a repetition (its time doubles with each character of a payload that
    /// nearly matches) is a warning naming the source and the group; the config is still valid.
    @Test(arguments: [(#"^(\d+)+$"#, #"(\d+)+"#), (#"P: ([0-9.]+) W"#, nil)] as [(String, String?)])
    func aSlowRegexIsAWarning(pattern: String, nested: String?) throws {
        let folder = TemporaryFolder()
        let config = try folder.write("c.yaml", """
            sources: {grid: {topic: g, regex: '\(pattern)'}}
            widgets: {w: {template: flow, flow: {exchange: {rate: grid}}}}
            """)
        let result = try runFlowbridge(["check", "--config", config])
        #expect(result.status == 0, "\(result.err)")
        let warning = "warning: source 'grid': the regex '\(pattern)' repeats a repetition"
        if let nested {
            #expect(result.out.contains("\(warning) (\(nested)): "), "\(result.out)")
        } else {
            #expect(!result.out.contains("repeats a repetition"), "\(result.out)")
        }
    }

    @Test func aMissingTemplateIsOneProblem() throws {
        let text = "sources:\n  a: {topic: x}\nwidgets:\n  w:\n    label: Power\n    unit: W\n    flow: {output: {rate: a}}\n    policy: {min_interval: 1s}\n"
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "c.yaml") }
        #expect(error?.problems.map(\.description) == ["line 5: widgets.w.template: is required"])
    }

    /// YAML reads `[` in a plain value as the start of a list: in a flow mapping the line is a
    /// syntax error, elsewhere the path becomes a list. Both say to quote it.
    @Test(arguments: [
        ("sources:\n  a: {topic: x, json: ENERGY.Power[1]}\n", "line 2: did not find expected ',' or '}'"),
        ("sources:\n  a: {topic: x, json: [\"em:0\"].x}\n", "line 2: did not find expected ',' or '}'"),
        ("sources:\n  a: {topic: x, json: [\"\"]}\n", "line 2: sources.a.json: expected a text, found a list"),
        ("sources:\n  a:\n    topic: x\n    json: [\"em:0\"].x\n", "line 4: did not find expected key"),
    ])
    func aJSONPathWithBracketsGetsAHintToQuoteIt(text: String, expected: String) {
        let config = text + "widgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n"
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(config, file: "c.yaml") }
        let description = error?.description ?? ""
        #expect(description.contains(expected), "\(description)")
        #expect(description.contains(#"put it in quotes, e.g. json: '["em:0"].x'"#), "\(description)")
        // Quoted, the same path is fine.
        let quoted = config.replacingOccurrences(of: "json: ", with: "json: '").replacingOccurrences(of: "}\nwidgets", with: "'}\nwidgets")
        if text.contains("{topic") { #expect(throws: Never.self) { try DaemonConfig.parse(quoted, file: "c.yaml") } }
    }

    /// `--config /dev/zero` or a huge file: refused after 1 MiB, memory flat.
    @Test(arguments: ["/dev/zero", "big"])
    func anOversizeConfigIsRefusedWithFlatMemory(path: String) throws {
        let folder = TemporaryFolder()
        let config = path == "big" ? try folder.write("big.yaml", String(repeating: "# a comment line that goes on and on\n", count: 60_000)) : path
        let baseline = try runFlowbridgeMeasured(["check", "--config", try folder.write("small.yaml", Self.sources)])
        #expect(baseline.status == 0, "\(baseline.err)")
        for command in ["check", "run"] {
            let result = try runFlowbridgeMeasured([command, "--config", config])
            #expect(result.status == 78)
            #expect(result.err.contains("cannot read: larger than 1 MiB"), "\(result.err)")
            print("\(command) --config \(path): peak RSS \(result.peakRSSKilobytes) kB (a small config: \(baseline.peakRSSKilobytes) kB; this process at the spawn: \(result.floorKilobytes) kB)")
            // Each figure against what it counts of this process, which other tests grow meanwhile.
            #expect(result.peakRSSKilobytes - result.floorKilobytes < baseline.peakRSSKilobytes - baseline.floorKilobytes + 8_000)
        }
    }

    @Test func versionIsTheOneInTheCode() throws {
        let run = try runFlowbridge(["--version"])
        #expect(run.status == 0)
        #expect(run.out == "flowbridge \(Flowbridge.version)\n")
        #expect(try runFlowbridge(["help"]).out.contains("--dry-run"))
        #expect(try runFlowbridge(["help"]).out.contains("--state FILE"))
    }

    /// `--help` (or `-h`) after a command is a question, not a mistake: that command's usage on
    /// standard output, status 0, and nothing run.
    @Test(arguments: [["check", "--help"], ["run", "-h"], ["discover", "--help"], ["replay", "--config", "/nonexistent.yaml", "--help"], ["simulate", "--help"]])
    func helpAfterACommandPrintsTheUsage(_ words: [String]) throws {
        let run = try runFlowbridge(words)
        #expect(run.status == 0, "\(run.err)")
        #expect(run.out.hasPrefix("usage: flowbridge \(words[0]) "), "\(run.out)")
        #expect(run.err.isEmpty, "\(run.err)")
    }

    /// A config that is not there (a first start) is answered with where one comes from; one that
    /// cannot be read for another reason names only that reason.
    @Test(arguments: [("/nonexistent.yaml", true), ("/", false)])
    func aMissingConfigSaysWhereOneComesFrom(path: String, hinted: Bool) throws {
        let run = try runFlowbridge(["check", "--config", path])
        #expect(run.status == 78)  // EX_CONFIG
        #expect(run.err.hasPrefix("\(path): cannot read: "), "\(run.err)")
        #expect(run.err.contains("Config/examples/") == hinted, "\(run.err)")
    }
}
