import Daemon
import FlowCore
import Foundation
import Glibc
import TestSupport
import Testing

/// `flowbridge run` against a real mosquitto started by the test on a free loopback port.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason))
struct RunTests {
    /// A running daemon: its combined output (NDJSON pushes and log lines) in a file.
    final class Daemon {
        let process: ChildProcess
        let output: String
        let folder: TemporaryFolder

        /// `dryRun`: with `--dry-run` (pushes on standard output, delivered nowhere).
        init(config: String, folder: TemporaryFolder = TemporaryFolder(), environment: [String: String] = [:], dryRun: Bool = true) throws {
            self.folder = folder
            let path = try folder.write("config.yaml", config)
            output = folder.url.appendingPathComponent("out.log").path
            process = try ChildProcess(
                Repository.binary, ["run", "--config", path] + (dryRun ? ["--dry-run"] : []), outputFile: output, environment: environment)
        }

        /// A daemon on `broker` with the test config, its state in its own folder.
        convenience init(broker: MosquittoBroker, extra: String = "", environment: [String: String] = [:]) throws {
            let folder = TemporaryFolder()
            try self.init(
                config: RunTests.config(port: broker.port, state: folder.url.appendingPathComponent("state.json").path, extra: extra),
                folder: folder, environment: environment)
        }

        var statePath: String { folder.url.appendingPathComponent("state.json").path }

        var text: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        var pushes: [JSONValue] { text.split(separator: "\n").filter { $0.hasPrefix("{") }.compactMap { try? JSONValue(parsing: String($0)) } }

        /// Waits until the output holds `text` (bounded).
        func waitFor(_ needle: String, timeout: Duration = .seconds(10)) async -> Bool {
            let clock = ContinuousClock()
            let deadline = clock.now + timeout
            while !text.contains(needle) {
                if clock.now >= deadline || !process.isRunning { return text.contains(needle) }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return true
        }

        /// SIGTERM, and the daemon is gone within 2 s with status 0.
        func stop() async {
            process.send(SIGTERM)
            #expect(await process.waitForExit(timeout: .seconds(2)))
            #expect(process.exitCode == 0)
        }

        /// Peak resident memory (kB) so far.
        var peakRSSKilobytes: Int? {
            guard let status = try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8) else { return nil }
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
            return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true)[1]) }
        }
    }

    static func config(port: Int, state: String, extra: String = "") -> String {
        """
        mqtt: {host: 127.0.0.1, port: \(port), client_id: flowbridge-test\(extra)}
        state_file: \(state)
        sources:
          solar: {topic: solar/ac/power, stale_after: 5m}
          grid: {topic: "shellypro3em-abc/status/em:0", json: total_act_power}
          battery: {topic: evcc/site/battery/power, invert: true}
        widgets:
          power:
            template: flow
            flow:
              inputs: [{name: Solar, rate: solar, total: integrate}]
              storage: {name: Battery, rate: battery}
              exchange: {name: Grid, rate: grid, total: import}
              output: {name: Home, rate: balance}
            policy: {min_interval: 0s, rate_step: 1, rate_deadband: 0}
        """
    }

    @Test func messagesInPatchesOutAndSIGTERMWritesStateAndOffline() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("connected to"), "\(daemon.text)")
        #expect(try await broker.receive(topic: "flowbridge/status").first?.text == "online")
        try await broker.publish(topic: "solar/ac/power", payload: "3200")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":-1400}"#)
        try await broker.publish(topic: "evcc/site/battery/power", payload: "-800")
        #expect(await daemon.waitFor(#""rate":1000"#), "\(daemon.text)")
        let content = daemon.pushes.reduce(JSONValue.null) { MergePatch.apply($1["patch"]!["content"]!, to: $0) }
        #expect(content["flow"]?["exchange"]?["rate"] == -1400)
        #expect(content["flow"]?["storage"]?["rate"] == 800)
        #expect(content["flow"]?["output"]?["rate"] == 1000)

        await daemon.stop()
        let saved = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: daemon.statePath))))
        #expect(saved["readings"]?["grid"]?["value"] == -1400)
        #expect(try await broker.receive(topic: "flowbridge/status").first?.text == "offline")
    }

    @Test func reconnectsAndResubscribesAfterTheBrokerRestarts() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("connected to"))
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":100}"#)
        #expect(await daemon.waitFor(#""rate":100"#))
        await broker.kill()
        #expect(await daemon.waitFor("broker connection:"), "\(daemon.text)")
        try await broker.restart()
        // One SUBACK per topic (3) per connection: the second connection has subscribed.
        #expect(await broker.waitForLog("Sending SUBACK to flowbridge-test", count: 6, timeout: .seconds(15)), "\(daemon.text)")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":-777}"#)
        #expect(await daemon.waitFor(#""rate":-777"#), "\(daemon.text)")
        await daemon.stop()
    }

    @Test func aFloodOfGarbageNeitherCrashesNorGrowsMemory() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("connected to"))
        // 100,000 garbage payloads, published by one mosquitto_pub reading lines from a file.
        let lines = (0..<100_000).map { index in ["nan", "{broken", "\"W\"", "1e999", "", "☀️", "-", "{\"total_act_power\":\"x\"}"][index % 8] }
        let file = try daemon.folder.write("garbage.txt", lines.joined(separator: "\n") + "\n")
        let before = daemon.peakRSSKilobytes ?? 0
        let publisher = try ChildProcess(
            "/usr/bin/mosquitto_pub", broker.clientArguments + ["-t", "shellypro3em-abc/status/em:0", "-l", "-q", "1"],
            outputFile: daemon.folder.url.appendingPathComponent("pub.log").path, standardInput: file)
        #expect(await publisher.waitForExit(timeout: .seconds(60)))
        // A last good reading gets through, so everything before it was processed.
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":4242}"#)
        #expect(await daemon.waitFor(#""rate":4242"#, timeout: .seconds(60)), "\(daemon.text.suffix(2000))")
        #expect(daemon.process.isRunning)
        let after = daemon.peakRSSKilobytes ?? 0
        print("garbage flood: peak RSS \(before) kB before, \(after) kB after 100,000 bad payloads")
        #expect(after - before < 20_000)
        // Rate-limited: a handful of log lines, not 100,000.
        let logLines = daemon.text.split(separator: "\n").filter { $0.contains("source 'grid'") }
        #expect(logLines.count >= 1 && logLines.count < 10)
        await daemon.stop()
    }

    @Test func readyArrivesOnTheNotifySocketAfterTheFirstSubscription() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let socketPath = folder.url.appendingPathComponent("notify.sock").path
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in socketPath.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let daemon = try Daemon(broker: broker, environment: ["NOTIFY_SOCKET": socketPath])
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = recv(fd, &buffer, buffer.count, 0)
        let message = count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : ""
        #expect(message.contains("READY=1"), "\(daemon.text)")
        #expect(await broker.waitForLog("Sending SUBACK to flowbridge-test"))  // subscribed before READY
        daemon.process.send(SIGTERM)
        let stopping = recv(fd, &buffer, buffer.count, 0)
        #expect(stopping > 0 && String(decoding: buffer[..<stopping], as: UTF8.self).contains("STOPPING=1"))
        #expect(await daemon.process.waitForExit(timeout: .seconds(2)))
    }

    @Test func passwordFromAFileAndTLSWithItsCA() async throws {
        let broker = try await MosquittoBroker(users: ["meter": "s3cret pass"], tls: true)
        let tls = try #require(broker.tlsFiles)
        let folder = TemporaryFolder()
        let password = try folder.write("mqtt-password", "s3cret pass\n")
        let extra = ", username: meter, password_file: \(password), tls: {ca_file: \(tls.caFile)}"
        let daemon = try Daemon(broker: broker, extra: extra)
        #expect(await daemon.waitFor("connected to"), "\(daemon.text)")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":321}"#)
        #expect(await daemon.waitFor(#""rate":321"#), "\(daemon.text)")
        #expect(!daemon.text.contains("s3cret"))  // never logged
        await daemon.stop()

        // The wrong CA: refused, and the log says why; nothing is received.
        let wrongExtra = ", username: meter, password_file: \(password), tls: {ca_file: \(tls.wrongCAFile)}"
        let refused = try Daemon(broker: broker, extra: wrongExtra)
        #expect(await refused.waitFor("certificate verify failed"), "\(refused.text)")
        #expect(!refused.text.contains("connected to"))
        await refused.stop()
    }

    @Test func sighupReloadsAndABrokenConfigKeepsTheOldOne() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("connected to"))
        let path = try daemon.folder.write("config.yaml", "sources: [broken")
        daemon.process.send(SIGHUP)
        #expect(await daemon.waitFor("the running config stays"), "\(daemon.text)")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":250}"#)
        try await broker.publish(topic: "evcc/site/battery/power", payload: "-300")
        #expect(await daemon.waitFor(#""rate":300"#))
        // A good config with a new label and no storage takes over, and the day goes on; the widget
        // gets the patch from what it shows (the storage slot cleared), not a new full document.
        let reloaded = Self.config(port: broker.port, state: daemon.statePath)
            .replacingOccurrences(of: "name: Grid", with: "name: Netz")
            .replacingOccurrences(of: "      storage: {name: Battery, rate: battery}\n", with: "")
        #expect(!reloaded.contains("storage"))
        _ = try daemon.folder.write("config.yaml", reloaded)
        daemon.process.send(SIGHUP)
        #expect(await daemon.waitFor("reload: \(path) loaded"), "\(daemon.text)")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":260}"#)
        #expect(await daemon.waitFor(#""name":"Netz""#), "\(daemon.text)")
        let patch = try #require(daemon.pushes.compactMap { $0["patch"]?["content"] }.first { $0["flow"]?["exchange"]?["name"] == "Netz" })
        #expect(patch["template"] == nil, "\(patch)")  // a patch, not a full document
        #expect(patch["flow"]?["storage"] == .null, "\(patch)")  // the slot the new config dropped
        await daemon.stop()
    }

    @Test func victronKeepaliveGoesOutAtOnceOnConnecting() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let keepalive = "R/c0619ab1d2e3/keepalive"
        let config = Self.config(port: broker.port, state: folder.url.appendingPathComponent("s.json").path)
            + "\nkeepalive:\n  - {topic: \(keepalive), interval: 30s}\n"
        // One at once on connecting (Venus OS waits for it), the next only after 30 s.
        let subscriber = try await broker.subscriber(topic: keepalive, count: 2, timeout: 4)
        let daemon = try Daemon(config: config, folder: folder)
        let received = await subscriber.messages()
        #expect(received.count == 1, "\(daemon.text)")
        #expect(received.allSatisfy { $0.topic == keepalive })
        await daemon.stop()
    }

    /// Under systemd (JOURNAL_STREAM names standard error) every line carries its syslog priority.
    @Test func logLinesCarryTheSyslogPriorityInTheJournal() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let output = folder.url.appendingPathComponent("out.log").path
        #expect(FileManager.default.createFile(atPath: output, contents: nil))
        var info = stat()
        #expect(stat(output, &info) == 0)
        let daemon = try Daemon(
            config: Self.config(port: broker.port, state: folder.url.appendingPathComponent("s.json").path), folder: folder,
            environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"])
        #expect(await daemon.waitFor("<6>connected to"), "\(daemon.text)")
        try await broker.publish(topic: "solar/ac/power", payload: "garbage")
        #expect(await daemon.waitFor("<4>source 'solar'"), "\(daemon.text)")
        #expect(!daemon.text.contains("flowbridge: info"))
        await daemon.stop()
    }

    /// While a graceful stop waits (here on a frozen broker), a second signal ends it at once.
    @Test func aSecondSignalExitsAtOnce() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("connected to"))
        let brokerPID = try #require(broker.processIdentifier)
        kill(brokerPID, SIGSTOP)
        defer { kill(brokerPID, SIGCONT) }
        daemon.process.send(SIGTERM)
        #expect(await daemon.waitFor("stopping"))
        try await Task.sleep(for: .milliseconds(200))
        #expect(daemon.process.isRunning)  // still waiting for the broker to take "offline"
        daemon.process.send(SIGTERM)
        #expect(await daemon.process.waitForExit(timeout: .milliseconds(500)))
        #expect(daemon.process.exitCode == 1)
    }

    /// The reader of standard output goes away: said once in the log, and the daemon runs on.
    @Test func aVanishedStdoutReaderIsReportedOnce() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", Self.config(port: broker.port, state: folder.url.appendingPathComponent("s.json").path))
        let errors = folder.url.appendingPathComponent("err.log").path
        #expect(FileManager.default.createFile(atPath: errors, contents: nil))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repository.binary)
        process.arguments = ["run", "--config", config, "--dry-run"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        try process.run()
        defer { kill(process.processIdentifier, SIGKILL) }
        try output.fileHandleForReading.close()
        func log() -> String { (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "" }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while !log().contains("connected to"), clock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        for watts in [100, 200, 300] {
            try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":\#(watts)}"#)
        }
        while !log().contains("standard output does not take"), clock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(log().components(separatedBy: "standard output does not take").count == 2, "\(log())")
        #expect(process.isRunning)
    }

    /// `run --dry-run > fifo` with a reader that never reads: the pipe fills, the stdout sink
    /// stalls and coalesces, but messages, state saves and signals go on; SIGTERM ends it within
    /// 2 s with the latest reading saved.
    @Test func aStdoutReaderThatStopsReadingBlocksNothing() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("s.json").path
        let config = try folder.write("config.yaml", Self.config(port: broker.port, state: state))
        let fifo = folder.url.appendingPathComponent("out.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)  // opened, never read
        defer { close(reader) }
        let errors = folder.url.appendingPathComponent("err.log").path
        let process = try ChildProcess(Repository.binary, ["run", "--config", config, "--dry-run"], outputFile: fifo, errorFile: errors)
        func log() -> String { (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "" }
        let clock = ContinuousClock()
        var deadline = clock.now + .seconds(10)
        while !log().contains("connected to"), clock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        // Far more push lines than a pipe holds (64 KiB): one push per message.
        let lines = (0..<5000).map { #"{"total_act_power":\#($0 % 1000 + 1)}"# }
        let file = try folder.write("readings.txt", lines.joined(separator: "\n") + "\n")
        let publisher = try ChildProcess(
            "/usr/bin/mosquitto_pub", broker.clientArguments + ["-t", "shellypro3em-abc/status/em:0", "-l", "-q", "1"],
            standardInput: file)
        #expect(await publisher.waitForExit(timeout: .seconds(60)))
        deadline = clock.now + .seconds(10)
        while !log().contains("not keeping up"), clock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(log().contains("standard output is not keeping up"), "\(log())")
        // Still ingesting while stdout is stuck: a last reading reaches the saved state.
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":4242}"#)
        deadline = clock.now + .seconds(15)
        func savedGrid() -> JSONValue? {
            (try? Data(contentsOf: URL(fileURLWithPath: state))).flatMap { try? JSONValue(parsing: Array($0)) }?["readings"]?["grid"]?["value"]
        }
        while savedGrid() != 4242, clock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(savedGrid() == 4242, "\(log())")
        process.send(SIGTERM)
        #expect(await process.waitForExit(timeout: .seconds(2)), "\(log())")
        #expect(process.exitCode == 0)
        #expect(log().contains("state written to"), "\(log())")
    }

    @Test func systemdUnitVerifies() throws {
        let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let tool = try #require(analyze, "systemd-analyze is missing: make test installs systemd")
        let folder = TemporaryFolder()
        // The unit names the installed binary; verify it against the one just built.
        let unit = try String(contentsOf: Repository.root.appendingPathComponent("deploy/flowbridge.service"), encoding: .utf8)
        let path = try folder.write("flowbridge.service", unit.replacingOccurrences(of: "/usr/local/bin/flowbridge", with: Repository.binary))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["verify", path]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output.isEmpty, "\(output)")
        #expect(unit.contains("Type=notify") && unit.contains("DynamicUser=yes") && unit.contains("ProtectSystem=strict"))
    }
}
