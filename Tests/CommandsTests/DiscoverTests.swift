import Commands
import Configuration
import Persistence
import Platform
import Runtime
import Discovery
import FlowCore
import Foundation
import Glibc
import TestSupport
import ReplaySupport
import Testing

/// `flowbridge discover`: from a device's traffic to a config that `check` accepts and that shows
/// the signs right.
@Suite struct DiscoverTests {
    /// Slots an example has that discovery leaves to the user, and why: a plug measures whatever
    /// is plugged in, and a Shelly EM's second clamp may be on any line.
    static let leftToTheUser: [String: Set<String>] = [
        "tasmota-plug.yaml": ["inputs"], "zigbee2mqtt-plug.yaml": ["inputs"], "shelly-em-gen1.yaml": ["inputs", "output"],
    ]

    /// Examples whose devices discovery does not know, and why: it places nothing for them (once
    /// it does, the example belongs to the check below).
    static let unknownToDiscovery: [String: String] = [
        "lg-ess-pyess.yaml": "pyess publishes magnitudes whose direction is on other topics; discovery writes no direction:",
    ]

    /// Each example's trace, heard by discovery: the config it writes reads, and replaying the
    /// same trace shows every slot it placed as the hand-written example does (rates, signs,
    /// totals, level).
    @Test(arguments: ExampleConfigTests.cases)
    func theConfigDiscoveredFromAnExamplesTrafficShowsWhatTheExampleShows(_ test: ExampleConfigTests.Case) throws {
        let lines = try test.trace()
        var discovery = Discovery()
        for line in lines {
            let message = try TraceMessage(line: Array(line.utf8))
            discovery.hear(topic: message.topic, payload: message.payload, retained: false)
        }
        let plan = discovery.plan
        if let why = Self.unknownToDiscovery[test.file] {
            #expect(plan.isEmpty, "discovery placed slots for \(test.file), said to be unknown to it (\(why)):\n\(plan)")
            return
        }
        let left = Self.leftToTheUser[test.file] ?? []
        #expect(left.isEmpty || !plan.leftOut.isEmpty, "\(plan)")
        guard !plan.isEmpty else {
            #expect(left == ["inputs"], "nothing placed for \(test.file)")
            return
        }
        let text = plan.configText(broker: BrokerSettings(host: "127.0.0.1", port: 1883), heard: Heard(messages: lines.count, topics: 10, seconds: 60))
        let (pushes, _) = try replay(config: text, trace: lines)
        let content = try #require(pushes.last?["content"], "no push:\n\(text)")
        for (path, expected) in test.expected.sorted(by: { $0.key < $1.key }) {
            let slot = String(path.prefix { $0 != "[" && $0 != "." })
            let shown = content["flow"]?.value(at: path)?.numberValue
            if left.contains(slot) {
                #expect(shown == nil, "\(path) was left to the user, yet shows \(shown.map(JSONValue.format) ?? "")")
            } else {
                #expect(shown == expected, "\(path): \(shown.map(JSONValue.format) ?? "nothing"), expected \(JSONValue.format(expected))\n\(text)")
            }
        }
    }

    @Test func discoverRefusesToOverwriteAConfig() throws {
        let folder = TemporaryFolder()
        let existing = try folder.write("config.yaml", "keep me")
        let run = try runFlowbridge(["discover", "--broker", "127.0.0.1:1", "--listen", "1s", "--out", existing])
        #expect(run.status == 73)
        #expect(run.err.contains("exists; discover writes a new file"), "\(run.err)")
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep me")
    }

    @Test(arguments: [
        (["discover"], "discover needs --broker HOST[:PORT]"), (["discover", "--broker", "host:port"], "'host:port' is not HOST or HOST:PORT"),
        (["discover", "--broker", "h:70000"], "'h:70000' is not HOST or HOST:PORT"),
        (["discover", "--broker", "h", "--password-env", "HOME"], "--password-env needs --username"),
        (["discover", "--broker", "h", "--username", "u", "--password-env", "FLOWBRIDGE_TEST_UNSET"], "the environment variable FLOWBRIDGE_TEST_UNSET is not set"),
    ])
    func discoverUsageErrors(_ arguments: [String], _ message: String) throws {
        let run = try runFlowbridge(arguments)
        #expect(run.status == 64)
        #expect(run.err.contains(message), "\(run.err)")
    }
}

/// `discover` against a real mosquitto fed with device traffic.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct DiscoverBrokerTests {
    /// Starts `discover` on the broker, writing `<folder>/found.yaml`.
    static func discover(_ broker: MosquittoBroker, seconds: Int, folder: TemporaryFolder) throws -> (ChildProcess, out: String, log: String) {
        let out = folder.url.appendingPathComponent("found.yaml").path
        let log = folder.url.appendingPathComponent("discover.log").path
        let process = try ChildProcess(
            Repository.binary, ["discover", "--broker", "127.0.0.1:\(broker.port)", "--listen", "\(seconds)s", "--out", out], outputFile: log)
        return (process, out, log)
    }

    /// All inside the listen window (of 12 s), however busy the machine.
    static func publish(_ broker: MosquittoBroker, _ messages: [(String, String)]) async throws {
        try await publishInOrder(broker, messages)
    }

    /// The discovered config passes `check` and, replaying `messages`, shows `expected`.
    static func verify(out: String, messages: [(String, String)], expected: [String: Double]) throws {
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let check = try runFlowbridge(["check", "--config", out])
        #expect(check.status == 0, "\(check.err)\n\(text)")
        var trace = ExampleConfigTests.Trace()
        for round in 0..<3 {
            for (topic, payload) in messages { trace.at(round * 10, topic, payload) }
        }
        let (pushes, _) = try replay(config: text, trace: trace.lines)
        let content = try #require(pushes.last?["content"], "no push:\n\(text)")
        for (path, value) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(content["flow"]?.value(at: path)?.numberValue == value, "\(path)\n\(text)")
        }
    }

    /// Hoymiles through OpenDTU, a Shelly Pro 3EM on the grid, a battery through evcc: exporting
    /// 300 W while the battery fills 1200 W (−1200 in evcc's sign).
    @Test func openDTUShellyAndEvcc() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let messages: [(String, String)] = [
            ("solar/dtu/status", "online"), ("solar/114190641177/name", "HM-800"), ("solar/114190641177/0/power", "2500.0"),
            ("solar/ac/power", "2500.0"), ("solar/ac/yieldtotal", "13.338"), ("solar/ac/yieldday", "216"),
            ("shellypro3em-abc/status/em:0", try Repository.payload("shellypro3em-abc/status/em:0").replacingOccurrences(of: "3039.524", with: "-300.0")),
            ("shellypro3em-abc/status/emdata:0", try Repository.payload("shellypro3em-abc/status/emdata:0")), ("shellypro3em-abc/online", "true"),
            ("evcc/site/pvPower", "2500"), ("evcc/site/grid/power", "-300"), ("evcc/site/homePower", "1000"),
            ("evcc/site/battery/power", "-1200"), ("evcc/site/battery/soc", "57"),
        ]
        let (process, out, log) = try Self.discover(broker, seconds: 12, folder: folder)
        #expect(await broker.waitForLog("Sending SUBACK to flowbridge-discover-"), "\(broker.log)")
        try await Self.publish(broker, messages)
        #expect(await process.waitForExit(timeout: .seconds(20)))
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(process.exitCode == 0, "\(said)")
        #expect(said.contains("wrote \(out)"), "\(said)")
        #expect(said.contains("placed: Solar ← solar/ac/power; Battery ← evcc/site/battery/power; Grid ← shellypro3em-abc/status/em:0"), "\(said)")
        try Self.verify(out: out, messages: messages, expected: [
            "inputs[0].rate": 2500, "exchange.rate": -300, "storage.rate": 1200, "storage.level": 57, "output.rate": 1000,
        ])
    }

    /// Venus OS alone: its retained serial shows the portal, discover asks it to publish
    /// (`R/<portal>/keepalive`), and only then do the readings come.
    @Test func victronAlone() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let portal = "N/c0619ab1d2e3"
        try await broker.publish(topic: "\(portal)/system/0/Serial", payload: #"{"value": "c0619ab1d2e3"}"#, retain: true)
        let keepalive = try await broker.subscriber(topic: "R/+/keepalive", count: 1, timeout: 10)
        let (process, out, log) = try Self.discover(broker, seconds: 12, folder: folder)
        let asked = await keepalive.messages(timeout: .seconds(12))
        #expect(asked.map(\.topic) == ["R/c0619ab1d2e3/keepalive"])
        // What Venus OS publishes once asked: charging 800 W, exporting 400 W, phase 2 absent.
        let messages: [(String, String)] = [
            ("\(portal)/system/0/Dc/Battery/Power", #"{"value": 800}"#), ("\(portal)/system/0/Dc/Battery/Soc", #"{"value": 76.5}"#),
            ("\(portal)/system/0/Dc/Pv/Power", #"{"value": 2000}"#), ("\(portal)/system/0/Ac/Grid/L1/Power", #"{"value": -400}"#),
            ("\(portal)/system/0/Ac/Grid/L2/Power", #"{"value": null}"#), ("\(portal)/full_publish_completed", #"{"value": 1702459522}"#),
        ]
        try await Self.publish(broker, messages)
        #expect(await process.waitForExit(timeout: .seconds(20)))
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(process.exitCode == 0, "\(said)")
        #expect(said.contains("Victron Venus OS found: asking it to publish (R/c0619ab1d2e3/keepalive)"), "\(said)")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(text.contains("keepalive:\n  - {topic: R/c0619ab1d2e3/keepalive, interval: 30s}"), "\(text)")
        #expect(!text.contains("L2"), "a phase that only said null is no source:\n\(text)")
        try Self.verify(out: out, messages: messages, expected: [
            "inputs[0].rate": 2000, "exchange.rate": -400, "storage.rate": 800, "storage.level": 77, "output.rate": 800,
        ])
    }

    /// A huge retained message on the broker: `discover` takes the cap `run` takes (under MQTT 5
    /// the broker is told the largest message and drops it), and hears the rest.
    @Test func aHugeRetainedMessageIsNotTakenWhole() async throws {
        let broker = try await MosquittoBroker()
        try await broker.publish(topic: "junk/huge", payload: Array(repeating: 0x31, count: 40_000_000), retain: true)
        try await broker.publish(topic: "evcc/site/battery/power", payload: "-1200", retain: true)
        try await broker.publish(topic: "evcc/site/battery/soc", payload: "57", retain: true)
        let discovered = try runFlowbridge(["discover", "--broker", "127.0.0.1:\(broker.port)", "--listen", "2s"])
        #expect(await broker.waitForLog("Dropping too large outgoing PUBLISH"), "\(broker.log)")
        #expect(discovered.status == 0 && discovered.out.contains("evcc/site/battery/soc"), "\(discovered.err)")
    }

    /// A broker with a login: the password comes from the environment, and the config written
    /// refers to the same variable (never holds the password); a wrong one is said as such.
    @Test func aLoginFromTheEnvironment() async throws {
        let broker = try await MosquittoBroker(users: ["flow": "s3cret"])
        let folder = TemporaryFolder()
        let out = folder.url.appendingPathComponent("found.yaml").path
        let arguments = ["discover", "--broker", "127.0.0.1:\(broker.port)", "--username", "flow", "--password-env", "FLOWBRIDGE_TEST_PASSWORD", "--listen", "12s", "--out", out]
        let process = try ChildProcess(Repository.binary, arguments, outputFile: folder.url.appendingPathComponent("log").path, environment: ["FLOWBRIDGE_TEST_PASSWORD": "s3cret"])
        #expect(await broker.waitForLog("Sending SUBACK to flowbridge-discover-"), "\(broker.log)")
        try await Self.publish(broker, [("evcc/site/battery/power", "-1200"), ("evcc/site/battery/soc", "57")])
        #expect(await process.waitForExit(timeout: .seconds(20)))
        #expect(process.exitCode == 0)
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(text.contains("mqtt: {host: 127.0.0.1, port: \(broker.port), username: flow, password_env: FLOWBRIDGE_TEST_PASSWORD}"), "\(text)")
        #expect(!text.contains("s3cret"))
        let check = try runFlowbridgeMeasured(["check", "--config", out], environment: ["FLOWBRIDGE_TEST_PASSWORD": "s3cret"])
        #expect(check.status == 0, "\(check.err)")

        let wrong = try runFlowbridgeMeasured(
            ["discover", "--broker", "127.0.0.1:\(broker.port)", "--username", "flow", "--password-env", "FLOWBRIDGE_TEST_PASSWORD", "--listen", "2s"],
            environment: ["FLOWBRIDGE_TEST_PASSWORD": "wrong"])
        #expect(wrong.status == 69)
        #expect(wrong.err.contains("never connected to 127.0.0.1:\(broker.port): "), "\(wrong.err)")
        #expect(!wrong.err.contains("wrong"), "the password is never said")
    }

    /// A Zigbee plug alone: recognized, but what it feeds is unknown, so nothing is written; the
    /// line that would add it is said.
    @Test func aPlugAloneWritesNothingAndSaysWhy() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let (process, out, log) = try Self.discover(broker, seconds: 12, folder: folder)
        #expect(await broker.waitForLog("Sending SUBACK to flowbridge-discover-"), "\(broker.log)")
        try await Self.publish(broker, [
            ("zigbee2mqtt/plug_zigbee23", try Repository.payload("zigbee2mqtt/plug_zigbee23")), ("zigbee2mqtt/plug_zigbee23/availability", #"{"state":"online"}"#),
        ])
        #expect(await process.waitForExit(timeout: .seconds(20)))
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(process.exitCode == 1, "\(said)")
        #expect(said.contains(#"heard Zigbee2MQTT plug "plug_zigbee23" in 2 messages on 2 topics"#), "\(said)")
        #expect(said.contains("    balcony: {topic: zigbee2mqtt/plug_zigbee23, json: power}"), "\(said)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// A broker that is not there: said, no file written.
    @Test func anUnreachableBrokerWritesNothing() throws {
        let folder = TemporaryFolder()
        let out = folder.url.appendingPathComponent("found.yaml").path
        let closed = try MosquittoBroker.ClosedPort()
        let run = try withExtendedLifetime(closed) {
            try runFlowbridge(["discover", "--broker", "127.0.0.1:\(closed.port)", "--listen", "2s", "--out", out])
        }
        #expect(run.status == 69)
        #expect(run.err.contains("never connected to 127.0.0.1:"), "\(run.err)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
