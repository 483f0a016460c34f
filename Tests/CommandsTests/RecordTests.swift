@testable import Commands
import FlowCore
import Foundation
import Glibc
import Platform
import TestSupport
import ReplaySupport
import Testing

/// `flowbridge record` against a real mosquitto: what it writes is what `replay` reads, in the
/// order the broker delivered it, retained copies marked; it ends by itself, at a signal, or with
/// an error when the broker cannot be reached; a file is never overwritten.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct RecordTests {
    /// Solar on a wildcard topic, the grid's rate and its two counters, a battery whose rate is a
    /// binary big-endian int16 (its payloads are not text, so they are written as `payload_b64`).
    /// The import counter rises 0.25 kWh within a fraction of a second in the tests: its
    /// `max_power` lets that count at once instead of waiting for a reading to confirm it.
    static func config(port: Int) -> String {
        """
        timezone: UTC
        mqtt: {host: 127.0.0.1, port: \(port)}
        sources:
          solar: {topic: "solar/+/power"}
          grid: {topic: grid/power}
          grid_in: {topic: grid/import_kwh, unit: kWh, max_power: 1000000000}
          grid_out: {topic: grid/export_kwh, unit: kWh}
          battery: {topic: battery/raw, decode: int16}
        widgets:
          power:
            template: flow
            flow:
              inputs: [{name: Solar, rate: solar, total: integrate}]
              storage: {name: Battery, rate: battery}
              exchange: {name: Grid, rate: grid, total: {counter: grid_in}, accounts: {export: {counter: grid_out}}}
              output: {name: Home, rate: balance, total: integrate}
            policy: {min_interval: 0s, settle: 0s}

        """
    }

    /// `record` and `check --listen` never push: a widget's token that cannot be read keeps
    /// neither from starting, while `check`, which checks what `run` needs, still says it.
    @Test func commandsThatNeverPushDoNotAskForTheToken() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", """
            timezone: UTC
            mqtt: {host: 127.0.0.1, port: \(broker.port)}
            sources: {grid: {topic: grid/power}}
            widgets:
              w: {template: flow, flow: {exchange: {rate: grid}}, push: {url: "https://widgets.example/w", token_file: \(folder.url.path)/missing-token}}
            """)
        let recorded = try runFlowbridge(["record", "--config", config, "--out", "-", "--duration", "1s"])
        #expect(recorded.status == 0, "\(recorded.err)")
        let listened = try runFlowbridge(["check", "--config", config, "--listen", "1s"])
        // 1: the grid never reported; not 78, a config it refuses.
        #expect(listened.status == 1, "\(listened.out)\(listened.err)")
        let checked = try runFlowbridge(["check", "--config", config])
        #expect(checked.status == 78 && checked.err.contains("missing-token"), "\(checked.err)")
    }

    /// −200 W as a big-endian int16: 0xFF38. Not UTF-8 (0xFF never is).
    static let batteryPayload: [UInt8] = [0xFF, 0x38]

    /// A `record` process: its trace and its standard error.
    struct Recording {
        let process: ChildProcess
        /// The trace: the `--out` file, or what it writes to standard output.
        let out: String
        let errors: String

        /// Records into `trace`; nil: to standard output (`--out -`).
        init(_ folder: TemporaryFolder, config: String, trace: String? = nil, extra: [String] = []) throws {
            let path = try folder.write("config.yaml", config)
            let stdout = folder.url.appendingPathComponent("stdout").path
            out = trace ?? stdout
            errors = folder.url.appendingPathComponent("stderr").path
            process = try ChildProcess(
                Repository.binary, ["record", "--config", path, "--out", trace ?? "-"] + extra, outputFile: stdout, errorFile: errors)
        }

        var errorText: String { (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "" }

        /// The trace's lines so far, the last one even without its newline.
        var lines: [String] {
            ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        func waitForLines(_ count: Int) async -> Bool { await eventually { lines.count >= count } }

        /// Stops it with `signal`; its exit code.
        func stop(_ signal: Int32 = SIGTERM) async -> Int32? {
            process.send(signal)
            await process.waitForExit(timeout: readinessTimeout)
            return process.exitCode
        }
    }

    static func subscribed(_ broker: MosquittoBroker, count: Int = 1) async -> Bool {
        await broker.waitForLog("Sending SUBACK to flowbridge-", count: count)
    }

    /// One round of every meter; the import counter at `importKWh`. A topic outside the config
    /// comes in the middle: not subscribed, so never recorded.
    static func round(_ broker: MosquittoBroker, importKWh: String) async throws {
        try await publishInOrder(broker, [
            ("solar/roof/power", "1000"), ("grid/power", "300"), ("grid/import_kwh", importKWh), ("elsewhere/power", "999"),
            ("grid/export_kwh", "50.0"),
        ])
        // QoS 1: mosquitto_pub ends once the broker took it, so it comes after the round.
        try await broker.publish(topic: "battery/raw", payload: batteryPayload, qos: 1)
    }

    /// The day as the broker delivered it, recorded until SIGTERM: every line reads back as a
    /// trace message, in order, the retained copy marked, the binary payload in base64, nothing of
    /// the topic outside the config; the summary says what the file holds. Replayed with the same
    /// config, every line is taken and the accounts are what the published rates imply, counted
    /// between the recorded times: 1000 W of solar and 200 W of discharge between the two rounds
    /// (the retained 500 W counts no energy, as live), 100.0 → 100.25 kWh on the import counter.
    @Test func aRecordedDayReplaysWithTheAccountsItsRatesImply() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        try await broker.publish(topic: "solar/roof/power", payload: "500", qos: 1, retain: true)
        let trace = folder.url.appendingPathComponent("day.ndjson").path
        let recording = try Recording(folder, config: Self.config(port: broker.port), trace: trace)
        #expect(await Self.subscribed(broker), "\(broker.log)")
        try await Self.round(broker, importKWh: "100.0")
        try await Self.round(broker, importKWh: "100.25")
        #expect(await recording.waitForLines(11), "\(recording.lines)\n\(recording.errorText)")
        #expect(await recording.stop() == 0, "\(recording.errorText)")

        let messages = try recording.lines.map { try TraceMessage(line: Array($0.utf8)) }
        func round(_ importKWh: String) -> [(String, [UInt8])] {
            [("solar/roof/power", "1000"), ("grid/power", "300"), ("grid/import_kwh", importKWh), ("grid/export_kwh", "50.0")]
                .map { ($0.0, Array($0.1.utf8)) } + [("battery/raw", Self.batteryPayload)]
        }
        let expected = [("solar/roof/power", Array("500".utf8))] + round("100.0") + round("100.25")
        #expect(messages.map(\.topic) == expected.map(\.0))
        #expect(messages.map(\.payload) == expected.map(\.1))
        #expect(messages.map(\.retained) == [true] + Array(repeating: false, count: 10))
        #expect(recording.lines.filter { $0.contains(#""payload_b64":"/zg=""#) }.count == 2, "\(recording.lines)")
        #expect(recording.lines[0].contains(#""retained":true"#) && !recording.lines[1].contains("retained"), "\(recording.lines)")
        #expect(zip(messages, messages.dropFirst()).allSatisfy { $0.at <= $1.at })
        let bytes = try #require(try FileManager.default.attributesOfItem(atPath: trace)[.size] as? Int)
        #expect(recording.errorText.contains("recorded 11 messages (1 retained) on 5 topics in "), "\(recording.errorText)")
        #expect(recording.errorText.hasSuffix(": \(bytes) bytes to \(trace)\n"), "\(recording.errorText)")

        let config = try folder.write("replay.yaml", Self.config(port: broker.port))
        let replay = try runFlowbridge(["replay", "--config", config, "--final", trace])
        #expect(replay.status == 0, "\(replay.err)")
        #expect(!replay.err.contains("skipped"), "\(replay.err)")
        let accountsLine = try #require(replay.out.split(separator: "\n").last { $0.contains(#""accounts""#) })
        let accounts = try #require(try JSONValue(parsing: Array(accountsLine.utf8))["accounts"])
        func hours(_ topic: String) -> Double {
            let times = messages.filter { $0.topic == topic && !$0.retained }.map(\.at)
            return times[1].timeIntervalSince(times[0]) / 3600
        }
        #expect(abs((accounts["production"]?.numberValue ?? -1) - 1.0 * hours("solar/roof/power")) < 1e-12, "\(accountsLine)")
        #expect(abs((accounts["discharge"]?.numberValue ?? -1) - 0.2 * hours("battery/raw")) < 1e-12, "\(accountsLine)")
        #expect(accounts["import"]?.numberValue == 0.25 && accounts["export"]?.numberValue == 0, "\(accountsLine)")
        let shown = try finalDocument(replay.out)["content"]?["flow"]
        #expect(shown?["inputs"]?.arrayValue?.first?["rate"] == .number(1000) && shown?["exchange"]?["rate"] == .number(300))
        #expect(shown?["storage"]?["rate"] == .number(-200), "\(replay.out)")
    }

    /// One recorded day, two tariffs: the import counter rises 0.5 kWh (100.0 → 100.5) while the
    /// price source says 300 EUR/MWh. Replayed with the source's price: 0.5 × 0.30 = 0.15; with a
    /// fixed 0.40 and 0.10 of fees: 0.5 × 0.50 = 0.25. The same day, two costs.
    @Test func aRecordedDayReplayedWithTwoTariffsGivesTwoCosts() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let trace = folder.url.appendingPathComponent("day.ndjson").path
        func config(_ tariff: String) -> String {
            Self.config(port: broker.port).replacingOccurrences(of: "sources:\n", with: "sources:\n  price: {topic: market/price, unit: EUR/MWh, stale_after: 1h}\n")
                + "tariff:\n  import: \(tariff)\n"
        }
        let recording = try Recording(folder, config: config("{price: price}"), trace: trace)
        #expect(await Self.subscribed(broker), "\(broker.log)")
        try await broker.publish(topic: "market/price", payload: "300", qos: 1)
        for importKWh in ["100.0", "100.25", "100.5"] { try await Self.round(broker, importKWh: importKWh) }
        #expect(await recording.waitForLines(16), "\(recording.lines)\n\(recording.errorText)")
        #expect(await recording.stop() == 0, "\(recording.errorText)")

        var costs: [Double] = []
        for (name, tariff) in [("source.yaml", "{price: price}"), ("fixed.yaml", "{price: 0.40, fees: 0.10}")] {
            let replay = try runFlowbridge(["replay", "--config", try folder.write(name, config(tariff)), "--final", trace])
            #expect(replay.status == 0, "\(replay.err)")
            let line = try #require(replay.out.split(separator: "\n").last { $0.contains(#""money""#) }, "\(replay.out)")
            costs.append(try #require(try JSONValue(parsing: Array(line.utf8))["money"]?["import_cost"]?.numberValue))
        }
        #expect(abs(costs[0] - 0.15) < 1e-9 && abs(costs[1] - 0.25) < 1e-9, "\(costs)")
    }

    /// `--duration` ends the recording by itself, cleanly, with its summary; the file is made
    /// (empty: nothing was published) and nothing waits for a signal.
    @Test func aDurationEndsTheRecordingByItself() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let trace = folder.url.appendingPathComponent("quiet.ndjson").path
        let started = ContinuousClock.now
        let recording = try Recording(folder, config: Self.config(port: broker.port), trace: trace, extra: ["--duration", "2s"])
        #expect(await recording.process.waitForExit(timeout: readinessTimeout), "\(recording.errorText)")
        #expect(ContinuousClock.now - started >= .seconds(2))
        #expect(recording.process.exitCode == 0, "\(recording.errorText)")
        #expect(recording.errorText.hasSuffix("flowbridge: recorded 0 messages on 0 topics in 2 s: 0 bytes to \(trace)\n"), "\(recording.errorText)")
        #expect(FileManager.default.fileExists(atPath: trace))
    }

    /// Ctrl-C ends a recording to standard output as SIGTERM ends one to a file: exit 0, the trace
    /// on standard output, the summary on standard error only.
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalEndsARecordingToStandardOutput(_ signal: Int32) async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        try await broker.publish(topic: "grid/power", payload: "250", qos: 1, retain: true)
        let recording = try Recording(folder, config: Self.config(port: broker.port))
        #expect(await recording.waitForLines(1), "\(recording.errorText)")
        #expect(await recording.stop(signal) == 0, "\(recording.errorText)")
        let message = try TraceMessage(line: Array(try #require(recording.lines.first).utf8))
        #expect(recording.lines.count == 1 && message.topic == "grid/power" && message.payload == Array("250".utf8) && message.retained)
        #expect(recording.errorText.contains("signal \(signal): stopping"), "\(recording.errorText)")
        #expect(recording.errorText.contains("recorded 1 message (1 retained) on 1 topic in "), "\(recording.errorText)")
        #expect(recording.errorText.hasSuffix(" bytes to standard output\n"), "\(recording.errorText)")
    }

    /// A file that is there is never overwritten: refused with what to do, untouched, before any
    /// connection (no broker is needed to be told).
    @Test func anExistingFileIsRefused() throws {
        let folder = TemporaryFolder()
        let closed = try MosquittoBroker.ClosedPort()
        let config = try folder.write("config.yaml", Self.config(port: closed.port))
        let day = try folder.write("day.ndjson", "yesterday\n")
        let run = try runFlowbridge(["record", "--config", config, "--out", day])
        #expect(run.status == ExitStatus.cannotCreate.rawValue, "\(run.err)")
        #expect(run.err == "flowbridge: \(day) exists; record writes a new file (give --append to add to it, or another --out)\n", "\(run.err)")
        #expect(try String(contentsOfFile: day, encoding: .utf8) == "yesterday\n")
    }

    /// `--append` adds to a trace whose last line was cut short (a full disk, a power cut): the
    /// cut line is ended, so replay skips it alone, by its number, and takes every line around it.
    @Test func appendingAfterACutLineLosesOnlyThatLine() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let earlier = TraceMessage(at: Date(timeIntervalSinceNow: -60), topic: "grid/power", payload: Array("100".utf8)).line
        let trace = try folder.write("day.ndjson", earlier + "\n" + #"{"t":"2026-06-01T10:00:0"#)
        try await broker.publish(topic: "grid/power", payload: "250", qos: 1, retain: true)
        let recording = try Recording(folder, config: Self.config(port: broker.port), trace: trace, extra: ["--append"])
        #expect(await recording.waitForLines(3), "\(recording.errorText)")
        #expect(await recording.stop() == 0, "\(recording.errorText)")
        let lines = recording.lines
        #expect(lines.count == 3 && lines[0] == earlier && lines[1] == #"{"t":"2026-06-01T10:00:0"#, "\(lines)")
        #expect(try TraceMessage(line: Array(lines[2].utf8)).payload == Array("250".utf8))
        let replay = try runFlowbridge(["replay", "--config", try folder.write("replay.yaml", Self.config(port: broker.port)), trace])
        #expect(replay.status == 0, "\(replay.err)")
        let skipped = replay.err.split(separator: "\n").filter { $0.contains("skipped") }
        #expect(skipped.count == 1 && skipped[0].contains("day.ndjson line 2: not JSON"), "\(replay.err)")
    }

    /// No broker at the address: a clear error within the first connection's bound, exit 69, and
    /// no empty file left behind.
    @Test func aBrokerThatIsNotThereIsAnErrorAtTheStart() async throws {
        let folder = TemporaryFolder()
        let closed = try MosquittoBroker.ClosedPort()
        let trace = folder.url.appendingPathComponent("day.ndjson").path
        let recording = try Recording(folder, config: Self.config(port: closed.port), trace: trace)
        #expect(await recording.process.waitForExit(timeout: readinessTimeout), "\(recording.errorText)")
        withExtendedLifetime(closed) {}  // closed until the recording gave up
        #expect(recording.process.exitCode == ExitStatus.unavailable.rawValue, "\(recording.errorText)")
        #expect(recording.errorText.hasSuffix("flowbridge: never connected to 127.0.0.1:\(closed.port): connection refused; nothing recorded\n"), "\(recording.errorText)")
        #expect(!FileManager.default.fileExists(atPath: trace))
    }

    /// A broker that goes away mid-recording: said, reconnected, and the recording goes on in the
    /// same file.
    @Test func aBrokerLostMidRecordingIsReconnected() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let trace = folder.url.appendingPathComponent("day.ndjson").path
        let recording = try Recording(folder, config: Self.config(port: broker.port), trace: trace)
        #expect(await Self.subscribed(broker), "\(broker.log)")
        try await publishInOrder(broker, [("grid/power", "300")])
        #expect(await recording.waitForLines(1), "\(recording.errorText)")
        try await broker.restart()
        #expect(await eventually { recording.errorText.components(separatedBy: "connected to 127.0.0.1").count - 1 >= 2 }, "\(recording.errorText)")
        #expect(await Self.subscribed(broker, count: 2), "\(broker.log)")
        try await publishInOrder(broker, [("grid/power", "320")])
        #expect(await recording.waitForLines(2), "\(recording.errorText)")
        #expect(await recording.stop() == 0, "\(recording.errorText)")
        #expect(try recording.lines.map { String(decoding: try TraceMessage(line: Array($0.utf8)).payload, as: UTF8.self) } == ["300", "320"])
        #expect(recording.errorText.contains("broker connection: "), "\(recording.errorText)")
        #expect(recording.errorText.contains("recorded 2 messages on 1 topic in "), "\(recording.errorText)")
    }

    /// A write that fails (a full disk: `/dev/full`) ends the recording at once: said, with what
    /// was written before it, exit 74.
    @Test func aFailedWriteEndsTheRecording() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        try await broker.publish(topic: "grid/power", payload: "250", qos: 1, retain: true)
        let recording = try Recording(folder, config: Self.config(port: broker.port), trace: "/dev/full", extra: ["--append"])
        #expect(await recording.process.waitForExit(timeout: readinessTimeout), "\(recording.errorText)")
        #expect(recording.process.exitCode == ExitStatus.ioError.rawValue, "\(recording.errorText)")
        #expect(recording.errorText.contains("flowbridge: recorded 0 messages on 0 topics in "), "\(recording.errorText)")
        #expect(
            recording.errorText.hasSuffix("flowbridge: the recording stopped: cannot write the trace to /dev/full: No space left on device\n"),
            "\(recording.errorText)")
    }

    /// The options reach the command: a day's duration in seconds, none without it.
    @Test func theOptionsReachTheCommand() throws {
        let words = ["-c", "c.yaml", "-o", "day.ndjson", "--append", "--duration", "24h", "--log-level", "warning"]
        let record = try RecordCommand(parsing: Arguments(parsing: words[...], for: RecordCommand.self))
        #expect(record.shared.configPath == "c.yaml" && record.out == "day.ndjson" && record.append && record.seconds == 86_400)
        #expect(record.shared.log.threshold == .warning)
        let plain = try RecordCommand(parsing: Arguments(parsing: ["--out", "-"], for: RecordCommand.self))
        #expect(plain.shared.configPath == "/etc/flowbridge/config.yaml" && plain.out == "-" && !plain.append && plain.seconds == nil)
    }

    /// What the command line cannot mean: refused as usage errors, with record's usage.
    @Test(arguments: [
        (["--config", "c.yaml"], "record needs --out FILE|-"),
        (["--out", "-", "--append"], "--append adds to a file; standard output (--out -) has none to add to"),
        (["--out", "d.ndjson", "--duration", "0s"], "--duration needs a duration from 1s to 31d, such as 90s or 24h, found '0s'"),
        (["--out", "d.ndjson", "--duration", "32d"], "--duration needs a duration from 1s to 31d, such as 90s or 24h, found '32d'"),
        (["--out", "d.ndjson", "--listen", "60s"], "record does not take --listen"),
    ])
    func aCommandLineRecordCannotMeanIsRefused(_ words: [String], message: String) throws {
        let run = try runFlowbridge(["record"] + words)
        #expect(run.status == ExitStatus.usage.rawValue)
        #expect(run.err.hasPrefix("flowbridge: \(message)\nusage: flowbridge record "), "\(run.err)")
        #expect(run.out.isEmpty)
    }
}

/// The trace's `"retained"` member, without a broker: read as written, absent in old traces and
/// in live messages' lines, and given to the engine by replay.
@Suite struct TraceRetainedTests {
    @Test(arguments: [
        (#"{"t":"2026-06-01T10:00:00Z","topic":"a","payload":"1"}"#, false),
        (#"{"t":"2026-06-01T10:00:00Z","topic":"a","payload":"1","retained":true}"#, true),
        (#"{"t":"2026-06-01T10:00:00Z","topic":"a","payload":"1","retained":false}"#, false),
    ])
    func theRetainedMemberIsRead(_ line: String, retained: Bool) throws {
        #expect(try TraceMessage(line: Array(line.utf8)).retained == retained)
    }

    @Test(arguments: [#""yes""#, "1", "null"])
    func aRetainedMemberThatIsNotABooleanIsAnError(_ value: String) {
        let line = #"{"t":"2026-06-01T10:00:00Z","topic":"a","payload":"1","retained":"# + value + "}"
        let error = #expect(throws: TraceError.self) { try TraceMessage(line: Array(line.utf8)) }
        #expect(error?.reason == #""retained" is not true or false: "# + value)
    }

    /// A live message's line is what it was before the member existed; a retained one's carries it.
    @Test func onlyARetainedMessageCarriesTheMember() throws {
        let at = try #require(RFC3339.parse("2026-06-01T10:00:00Z"))
        #expect(TraceMessage(at: at, topic: "a", payload: Array("1".utf8)).line == #"{"payload":"1","t":"2026-06-01T10:00:00Z","topic":"a"}"#)
        let retained = TraceMessage(at: at, topic: "a", payload: Array("1".utf8), retained: true)
        #expect(retained.line == #"{"payload":"1","retained":true,"t":"2026-06-01T10:00:00Z","topic":"a"}"#)
        #expect(try TraceMessage(line: Array(retained.line.utf8)) == retained)
    }

    /// Solar 500 W retained at 10:00, then 1000 W live at 10:01 and 10:02. Marked retained, the
    /// copy counts no energy, as live: 1 kW × 1 min = 1/60 kWh. Unmarked (a trace of live
    /// publishes), 10:00–10:01 counts too: (0.5 + 1) / 2 kW × 1/60 h = 0.0125 kWh more.
    @Test(arguments: [(true, 1.0 / 60), (false, 1.0 / 60 + 0.0125)])
    func replayGivesTheRetainedFlagToTheEngine(_ retained: Bool, productionKWh: Double) throws {
        let config = RecordTests.config(port: 1883)
        func line(_ time: String, _ payload: String, retained: Bool = false) -> String {
            TraceMessage(at: RFC3339.parse(time)!, topic: "solar/roof/power", payload: Array(payload.utf8), retained: retained).line
        }
        let trace = [
            line("2026-06-01T10:00:00Z", "500", retained: retained), line("2026-06-01T10:01:00Z", "1000"), line("2026-06-01T10:02:00Z", "1000"),
        ]
        let (_, engine) = try replay(config: config, trace: trace)
        let production = try #require(engine.accountTotals(ofWidget: "power")?[.production])
        #expect(abs(production - productionKWh) < 1e-12, "\(production)")
    }
}
