import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import Glibc
import TestSupport
import Testing

/// `flowbridge run` against a real mosquitto started by the test on a free loopback port.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct RunTests {
    /// A running daemon: its combined output (NDJSON pushes and log lines) in a file.
    final class Daemon {
        let process: ChildProcess
        let output: String
        let folder: TemporaryFolder

        /// `flowbridge run --config <folder>/config.yaml` plus `arguments`; its output in `<folder>/<name>.log`.
        init(
            config: String, folder: TemporaryFolder = TemporaryFolder(), arguments: [String] = [], environment: [String: String] = [:],
            name: String = "out", normalUser: Bool = false
        ) throws {
            self.folder = folder
            let path = try folder.write("config.yaml", config)
            output = folder.url.appendingPathComponent("\(name).log").path
            let command = [Repository.binary, "run", "--config", path] + arguments
            let launch = normalUser ? asNormalUser(command, in: folder) : (path: command[0], arguments: Array(command.dropFirst()))
            process = try ChildProcess(launch.path, launch.arguments, outputFile: output, environment: environment)
        }

        /// A daemon on `broker` with the test config, its state in its own folder.
        convenience init(broker: MosquittoBroker, extra: String = "", arguments: [String] = [], environment: [String: String] = [:]) throws {
            let folder = TemporaryFolder()
            try self.init(
                config: RunTests.config(port: broker.port, state: folder.url.appendingPathComponent("state.json").path, extra: extra),
                folder: folder, arguments: arguments, environment: environment)
        }

        var statePath: String { folder.url.appendingPathComponent("state.json").path }

        var text: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        var pushes: [JSONValue] { text.split(separator: "\n").filter { $0.hasPrefix("{") }.compactMap { try? JSONValue(parsing: String($0)) } }

        /// Waits until the output holds `needle` (`count` times; bounded, and no longer than the
        /// daemon runs).
        func waitFor(_ needle: String, count: Int = 1, timeout: Duration = readinessTimeout) async -> Bool {
            func found() -> Bool { text.components(separatedBy: needle).count - 1 >= count }
            _ = await eventually(timeout: timeout) { found() || !process.isRunning }
            return found()
        }

        /// The port the window listens on, from the daemon's line `window at http://HOST:PORT/`;
        /// nil when the window did not start. A test's window listens on port 0, so the kernel
        /// picks a free port as it binds it: a port picked free beforehand could be taken by a
        /// test running beside it before the daemon binds it.
        func windowPort() async -> Int? {
            let marker = "window at http://"
            guard await waitFor(marker), let start = text.range(of: marker)?.upperBound else { return nil }
            let address = text[start...].prefix { $0 != "/" }
            return address.lastIndex(of: ":").flatMap { Int(address[address.index(after: $0)...]) }
        }

        /// SIGTERM, and the daemon is gone within 4 s with status 0: its stop's own bounds add up to
        /// about 3 s at worst (300 ms for the sinks, 1.5 s for the broker to take `offline`, up to
        /// 1 s for the network thread to notice), which a loaded machine must not turn into a failure.
        func stop() async {
            process.send(SIGTERM)
            #expect(await process.waitForExit(timeout: .seconds(4)))
            #expect(process.exitCode == 0)
        }

        /// Peak resident memory (kB) so far.
        var peakRSSKilobytes: Int? { statusKilobytes("VmHWM:", of: process.pid) }
        /// Resident memory (kB) now.
        var residentKilobytes: Int? { statusKilobytes("VmRSS:", of: process.pid) }
    }

    /// The test home; `stdout`: its pushes as NDJSON on standard output (the daemon's output file).
    static func config(port: Int, state: String, extra: String = "", stdout: Bool = true) -> String {
        """
        mqtt: {host: 127.0.0.1, port: \(port), client_id: flowbridge-test\(extra)}
        state_file: \(state)
        output: {stdout: \(stdout)}
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
            policy: {min_interval: 0s, settle: 0s, rate_step: 1, rate_deadband: 0}
        """
    }

    @Test func messagesInPatchesOutAndSIGTERMWritesStateAndOffline() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
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
        #expect(await daemon.waitFor("subscribed to"))
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":100}"#)
        #expect(await daemon.waitFor(#""rate":100"#))
        await broker.kill()
        #expect(await daemon.waitFor("broker connection:"), "\(daemon.text)")
        try await broker.restart()
        // One SUBSCRIBE (and SUBACK) for all topics per connection: the second connection has subscribed.
        #expect(await broker.waitForLog("Sending SUBACK to flowbridge-test", count: 2, timeout: .seconds(20)), "\(daemon.text)")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":-777}"#)
        #expect(await daemon.waitFor(#""rate":-777"#), "\(daemon.text)")
        // Counted once the reading shows the second connection has all its topics.
        #expect(broker.logCount("Received SUBSCRIBE from flowbridge-test") == 2, "\(broker.log)")
        await daemon.stop()
    }

    @Test func aFloodOfGarbageNeitherCrashesNorGrowsMemory() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("subscribed to"))
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

    /// Ready means configured and running: a broker still down at boot must not make systemd time
    /// the start out. The status line follows the connection.
    @Test func readyAtOnceWithTheBrokerDownThenStatusFollowsTheConnection() async throws {
        let broker = try await MosquittoBroker()
        await broker.stop()
        let folder = TemporaryFolder()
        let notify = try NotifySocket(in: folder)
        // A fourth source on a topic nobody publishes, quickly due.
        let config = Self.config(port: broker.port, state: folder.url.appendingPathComponent("state.json").path)
            .replacingOccurrences(of: "sources:\n", with: "sources:\n  ghost: {topic: nobody/publishes/here, stale_after: 2s}\n")
        let daemon = try Daemon(config: config, folder: folder, environment: ["NOTIFY_SOCKET": notify.path])
        let ready = try #require(await notify.next { $0.contains("READY=1") }, "\(daemon.text)")
        #expect(ready.contains("STATUS=connecting to broker 127.0.0.1:\(broker.port)"), "\(ready)")
        #expect(!daemon.text.contains("connected to"))
        let waiting = await notify.next { $0.contains("STATUS=waiting") }
        #expect(waiting == "STATUS=waiting for broker 127.0.0.1:\(broker.port): connection refused", "\(notify.received)")
        try await broker.start()
        let connected = await notify.next(timeout: .seconds(20)) { $0.contains("STATUS=connected") }
        #expect(connected == "STATUS=connected to 127.0.0.1:\(broker.port)", "\(notify.received)")
        #expect(daemon.text.contains("connected to 127.0.0.1:\(broker.port)"))
        // Past its grace, the silent source is named; once it reports, the line is clear again.
        let silent = await notify.next { $0.contains("silent") }
        #expect(silent == "STATUS=connected to 127.0.0.1:\(broker.port); 1 of 4 sources silent: ghost", "\(notify.received)")
        try await broker.publish(topic: "nobody/publishes/here", payload: "1")
        let allHeard = await notify.next { $0.hasPrefix("STATUS=connected") && !$0.contains("silent") }
        #expect(allHeard == "STATUS=connected to 127.0.0.1:\(broker.port)", "\(notify.received)")
        daemon.process.send(SIGTERM)
        #expect(await notify.next { $0.contains("STOPPING=1") } != nil)
        #expect(await daemon.process.waitForExit(timeout: .seconds(2)))
    }

    /// A notify socket whose reader is behind (its datagram queue full) blocks nothing: the daemon
    /// connects, pushes and stops in time, and the status lines it could not send are dropped.
    @Test func aNotifySocketNobodyReadsBlocksNothing() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let notify = try NotifySocket(in: folder)
        #expect(notify.fillQueue() > 0)
        let daemon = try Daemon(
            config: Self.config(port: broker.port, state: folder.url.appendingPathComponent("state.json").path), folder: folder,
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"])
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":321}"#)
        #expect(await daemon.waitFor(#""rate":321"#), "\(daemon.text)")
        await daemon.stop()
        #expect(daemon.text.contains("state written to"), "\(daemon.text)")
    }

    @Test func passwordFromAFileAndTLSWithItsCA() async throws {
        let broker = try await MosquittoBroker(users: ["meter": "s3cret pass"], tls: true)
        let tls = try #require(broker.tlsFiles)
        let folder = TemporaryFolder()
        let password = try folder.write("mqtt-password", "s3cret pass\n")
        let extra = ", username: meter, password_file: \(password), tls: {ca_file: \(tls.caFile)}"
        let daemon = try Daemon(broker: broker, extra: extra)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
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
        #expect(await daemon.waitFor("subscribed to"))
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
            + "\nkeepalive:\n  - {topic: \(keepalive), interval: 60s}\n"
        // One at once on connecting (Venus OS waits for it), the next only after 60 s: a window of
        // 20 s holds the daemon's start, however slow, and exactly one keepalive.
        let subscriber = try await broker.subscriber(topic: keepalive, count: 2, timeout: 20)
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
        #expect(await daemon.waitFor("<6>subscribed to"), "\(daemon.text)")
        try await broker.publish(topic: "solar/ac/power", payload: "garbage")
        #expect(await daemon.waitFor("<4>source 'solar'"), "\(daemon.text)")
        #expect(!daemon.text.contains("flowbridge: info"))
        await daemon.stop()
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
        // A pipe whose reader is gone before the daemon starts: its reading end is closed at
        // once, not after the spawn. A child that another test spawned meanwhile took it along
        // and held it open, and the daemon's writes found a reader and went through.
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        close(ends[0])
        let output = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        try process.run()
        defer { kill(process.processIdentifier, SIGKILL) }
        try output.close()
        func log() -> String { (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "" }
        #expect(await eventually { log().contains("subscribed to") }, "\(log())")
        for watts in [100, 200, 300] {
            try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":\#(watts)}"#)
        }
        #expect(await eventually { log().contains("standard output does not take") }, "\(log())")
        #expect(process.isRunning)
        // Said once: counted after a stop, when the sink has had every push.
        process.terminate()
        #expect(await eventually { !process.isRunning }, "\(log())")
        #expect(log().contains("stopped (dry run"), "\(log())")
        #expect(log().components(separatedBy: "standard output does not take").count == 2, "\(log())")
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
        let process = try ChildProcess(Repository.binary, ["run", "--config", config], outputFile: fifo, errorFile: errors)
        func log() -> String { (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "" }
        #expect(await eventually { log().contains("subscribed to") }, "\(log())")
        // More push lines than a pipe holds (64 KiB, some 400 lines): readings one by one, each
        // its own push (a backlog read in one go would be one), until the sink says it coalesces.
        var published = 0
        while !log().contains("standard output is not keeping up"), published < 3000 {
            try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":\#(published % 1000 + 1)}"#, qos: 1)
            published += 1
        }
        #expect(await eventually { log().contains("standard output is not keeping up") }, "\(published) readings: \(log())")
        // Still ingesting while stdout is stuck: a last reading reaches the saved state.
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":4242}"#)
        func savedGrid() -> JSONValue? {
            savedState(state)?["readings"]?["grid"]?["value"]
        }
        // A reading is saved within a minute (see `SavePolicy`).
        #expect(await eventually(timeout: .seconds(90)) { savedGrid() == 4242 }, "\(log())")
        process.send(SIGTERM)
        #expect(await process.waitForExit(timeout: .seconds(2)), "\(log())")
        #expect(process.exitCode == 0)
        #expect(log().contains("state written to"), "\(log())")
    }

    // MARK: One owner, dry runs, normal users

    @Test func aSecondDaemonOnTheSameStateIsRefused() async throws {
        let broker = try await MosquittoBroker()
        let first = try Daemon(broker: broker)
        #expect(await first.waitFor("subscribed to"), "\(first.text)")
        let config = Self.config(port: broker.port, state: first.statePath).replacingOccurrences(of: "client_id: flowbridge-test", with: "client_id: flowbridge-second")
        let second = try Daemon(config: config, folder: first.folder, name: "second")
        #expect(await second.process.waitForExit(timeout: .seconds(5)))
        #expect(second.process.exitCode == 75)
        #expect(second.text.contains("the state is in use by another flowbridge (pid \(first.process.pid)"), "\(second.text)")
        #expect(!second.text.contains("connected to"))
        #expect(first.process.isRunning)
        await first.stop()
    }

    /// A dry run beside the service: it reads the service's state (its totals are right), and
    /// writes nothing, publishes nothing, takes no lock.
    @Test func aDryRunLeavesTheStateByteIdenticalAndPublishesNothing() async throws {
        let broker = try await MosquittoBroker()
        let service = try Daemon(broker: broker)
        #expect(await service.waitFor("subscribed to"))
        try await broker.publish(topic: "solar/ac/power", payload: "3000")
        #expect(await service.waitFor(#""rate":3000"#), "\(service.text)")
        await service.stop()
        let state = try Data(contentsOf: URL(fileURLWithPath: service.statePath))
        let lock = try Data(contentsOf: URL(fileURLWithPath: service.statePath + ".lock"))
        #expect(try await broker.receive(topic: "flowbridge/status").first?.text == "offline")

        // Its clock's ticks are seen as systemd's watchdog pings: each tick is when a run saves.
        let notify = try NotifySocket(in: service.folder)
        let dry = try Daemon(
            config: Self.config(port: broker.port, state: service.statePath), folder: service.folder, arguments: ["--dry-run"],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"], name: "dry")
        #expect(await dry.waitFor("subscribed to"), "\(dry.text)")
        #expect(dry.text.contains("continuing the day"), "\(dry.text)")
        try await broker.publish(topic: "solar/ac/power", payload: "2500")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":-500}"#)
        #expect(await dry.waitFor(#""rate":2500"#), "\(dry.text)")
        // Six ticks since: past the interval of a state save (5 s).
        #expect(await notify.ticks(6), "\(notify.received)")
        #expect(try await broker.receive(topic: "flowbridge/status").first?.text == "offline")  // no "online"
        #expect(!broker.log.contains("Client flowbridge-test already connected"))
        await dry.stop()
        #expect(dry.text.contains("stopped (dry run: nothing delivered, no state written)"), "\(dry.text)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: service.statePath)) == state)
        #expect(try Data(contentsOf: URL(fileURLWithPath: service.statePath + ".lock")) == lock)
        #expect(try await broker.receive(topic: "flowbridge/status").first?.text == "offline")
        let files = try FileManager.default.contentsOfDirectory(atPath: service.folder.url.path)
        #expect(files.filter { $0.hasPrefix("state.json") }.sorted() == ["state.json", "state.json.lock"], "\(files)")
    }

    /// Started by a normal user without a state_file, `run` keeps its day in ~/.local/state.
    @Test func aNormalUsersRunKeepsItsStateInItsHome() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let home = folder.url.appendingPathComponent("home").path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        giveToNormalUser(folder.url.path)
        let config = Self.config(port: broker.port, state: "").replacingOccurrences(of: "state_file: \n", with: "")
        #expect(!config.contains("state_file"))
        let daemon = try Daemon(
            config: config, folder: folder, environment: ["HOME": home, "XDG_STATE_HOME": "", "STATE_DIRECTORY": ""], normalUser: true)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        let state = "\(home)/.local/state/flowbridge/state.json"
        #expect(daemon.text.contains("state \(state)"), "\(daemon.text)")
        try await broker.publish(topic: "solar/ac/power", payload: "1234")
        #expect(await daemon.waitFor(#""rate":1234"#), "\(daemon.text)")
        await daemon.stop()
        #expect(daemon.text.contains("state written to \(state)"), "\(daemon.text)")
        var info = stat()
        #expect(stat(state, &info) == 0)
        #expect(getuid() != 0 || info.st_uid == 65534)
    }

    /// A folder the daemon cannot write is said at start, not minutes later at the first save; and
    /// a stop that cannot save the day fails.
    @Test func aStateThatCannotBeSavedWarnsAtStartAndFailsTheStop() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let locked = folder.url.appendingPathComponent("root-only").path
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: true)
        chmod(locked, 0o755)
        let daemon = try Daemon(config: Self.config(port: broker.port, state: "\(locked)/state.json"), folder: folder, normalUser: getuid() == 0)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(daemon.text.contains("warning: the state folder \(locked) is not writable (Permission denied)"), "\(daemon.text)")
        try await broker.publish(topic: "solar/ac/power", payload: "1234")
        #expect(await daemon.waitFor("cannot write the state"), "\(daemon.text)")
        daemon.process.send(SIGTERM)
        #expect(await daemon.process.waitForExit(timeout: .seconds(3)))
        #expect(daemon.process.exitCode == 73)
        #expect(daemon.text.contains("the state could not be written"), "\(daemon.text)")
    }

    // MARK: Reload, reconnects, bounds

    /// SIGHUP after a topic changed: the source reads the new topic at once, not after a restart.
    @Test func aReloadThatChangesATopicFeedsTheSourceFromTheNewTopic() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("subscribed to"))
        _ = try daemon.folder.write("config.yaml", Self.config(port: broker.port, state: daemon.statePath)
            .replacingOccurrences(of: "shellypro3em-abc/status/em:0", with: "shellypro3em-def/status/em:0"))
        daemon.process.send(SIGHUP)
        #expect(await daemon.waitFor("loaded"), "\(daemon.text)")
        #expect(daemon.text.contains("reload: topics + shellypro3em-def/status/em:0, - shellypro3em-abc/status/em:0"), "\(daemon.text)")
        #expect(!daemon.text.contains("next restart"), "\(daemon.text)")
        #expect(await broker.waitForLog("Received UNSUBSCRIBE from flowbridge-test"), "\(broker.log)")
        #expect(await broker.waitForLog("Sending SUBACK to flowbridge-test", count: 2))
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":111}"#)
        try await broker.publish(topic: "shellypro3em-def/status/em:0", payload: #"{"total_act_power":222}"#)
        #expect(await daemon.waitFor(#""rate":222"#), "\(daemon.text)")
        #expect(!daemon.text.contains(#""rate":111"#))
        await daemon.stop()
    }

    /// The reconnect delay is capped: after a long outage the broker is reached within seconds.
    @Test(.timeLimit(.minutes(3))) func resumesWithinSecondsAfterALongBrokerOutage() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("subscribed to"))
        await broker.stop()
        #expect(await daemon.waitFor("broker connection:"), "\(daemon.text)")
        try await Task.sleep(for: .seconds(65))  // time passing: an outage long enough for the reconnect delay to reach its cap
        try await broker.start()
        #expect(await daemon.waitFor("subscribed to", count: 2, timeout: .seconds(20)), "\(daemon.text)")
        try await broker.publish(topic: "solar/ac/power", payload: "65")
        #expect(await daemon.waitFor(#""rate":65"#), "\(daemon.text)")
        await daemon.stop()
    }

    /// Huge payloads (60 of 8 MB) wait in the client's buffer by bytes, not by count: memory stays
    /// near a few of them, not all of them (647 MB before the byte cap).
    @Test func oversizePayloadsKeepMemoryFlat() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("subscribed to"))
        let big = try daemon.folder.write("big.bin", String(repeating: "x", count: 8 << 20))
        let before = daemon.peakRSSKilobytes ?? 0
        let publisher = try ChildProcess(
            "/usr/bin/mosquitto_pub", broker.clientArguments + ["-t", "solar/ac/power", "-f", big, "-q", "1", "--repeat", "60"],
            outputFile: daemon.folder.url.appendingPathComponent("pub.log").path)
        #expect(await publisher.waitForExit(timeout: .seconds(120)))
        try await broker.publish(topic: "solar/ac/power", payload: "4242")
        #expect(await daemon.waitFor(#""rate":4242"#, timeout: .seconds(60)), "\(daemon.text.suffix(2000))")
        let after = daemon.peakRSSKilobytes ?? 0
        print("60 payloads of 8 MB: peak RSS \(before) kB before, \(after) kB after")
        #expect(after - before < 100_000)
        await daemon.stop()
    }

    /// flowbridge's own publishes (here a Victron keepalive while the broker is gone) that fail
    /// are logged, once a minute, not swallowed.
    @Test func aPublishThatFailsIsLoggedOnceAMinute() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = Self.config(port: broker.port, state: folder.url.appendingPathComponent("s.json").path)
            + "\nkeepalive:\n  - {topic: R/c0619ab1d2e3/keepalive, interval: 1s}\n"
        // Its clock's ticks are seen as systemd's watchdog pings: a keepalive goes out after each.
        let notify = try NotifySocket(in: folder)
        let daemon = try Daemon(config: config, folder: folder, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"])
        #expect(await daemon.waitFor("subscribed to"))
        await broker.kill()
        #expect(await daemon.waitFor("publish to 'R/c0619ab1d2e3/keepalive' failed"), "\(daemon.text)")
        // Three ticks since: two more keepalives (each sent after its tick's ping) have failed too.
        #expect(await notify.ticks(3), "\(notify.received)")
        #expect(daemon.text.components(separatedBy: "publish to 'R/c0619ab1d2e3/keepalive' failed").count - 1 == 1, "\(daemon.text)")
        await daemon.stop()
    }

    @Test func systemdUnitVerifies() throws {
        let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let tool = try #require(analyze, "systemd-analyze is missing: make test installs systemd")
        let folder = TemporaryFolder()
        // The unit names the installed binary; verify it against the one just built.
        let unit = try String(contentsOf: Repository.root.appendingPathComponent("deploy/flowbridge.service"), encoding: .utf8)
        let path = try folder.write("flowbridge.service", unit.replacingOccurrences(of: "/usr/local/bin/flowbridge", with: Repository.binary))
        let verify = try runProgram(tool, ["verify", path])
        let output = verify.out + verify.err
        #expect(verify.status == 0, "\(output)")
        #expect(output.isEmpty, "\(output)")
        #expect(unit.contains("Type=notify") && unit.contains("DynamicUser=yes") && unit.contains("ProtectSystem=strict"))
    }
}

/// A socket where the daemon's sd_notify datagrams arrive, as systemd's would.
final class NotifySocket {
    let path: String
    private let fd: Int32
    /// Every datagram so far.
    private(set) var received: [String] = []
    private var consumed = 0

    init(in folder: TemporaryFolder) throws {
        path = folder.url.appendingPathComponent("notify.sock").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    }

    deinit { close(fd) }

    /// Fills the socket's datagram queue without reading it, as a reader that fell behind leaves it;
    /// returns how many datagrams it took.
    func fillQueue() -> Int {
        let sender = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
        }
        var sent = 0
        while withUnsafePointer(to: &address, {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(sender, "X=1", 3, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }) == 3 {
            sent += 1
        }
        return sent
    }

    /// The next datagram (in order) that matches, polling without blocking a thread; nil on timeout.
    func next(timeout: Duration = readinessTimeout, where matches: (String) -> Bool) async -> String? {
        await poll(timeout: timeout) {
            readPending()
            while consumed < received.count {
                consumed += 1
                if matches(received[consumed - 1]) { return received[consumed - 1] }
            }
            return nil
        }
    }

    /// Waits for `count` watchdog pings sent from now on (the daemon pings after each tick of its
    /// clock), the ones already sent set aside.
    func ticks(_ count: Int) async -> Bool {
        readPending()
        consumed = received.count
        for _ in 0..<count where await next(where: { $0 == "WATCHDOG=1" }) == nil { return false }
        return true
    }

    /// Takes the datagrams that have come.
    private func readPending() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)), count > 0 {
            received.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
    }
}
