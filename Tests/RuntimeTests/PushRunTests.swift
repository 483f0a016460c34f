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

/// `flowbridge run` delivering to the widget stand-in (a real HTTP server) from a real mosquitto:
/// the widget shows what the daemon computed, through failures and restarts.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct PushRunTests {
    /// The RunTests config, plus the widget's `push:` to `service` with the token as a systemd
    /// credential, and standard output (which shows what the daemon computed).
    static func config(broker: MosquittoBroker, service: WidgetStandIn, state: String, stdout: Bool = true) -> String {
        RunTests.config(port: broker.port, state: state, stdout: stdout)
            + "\n    push: {url: \"\(service.url)\", token_file: widget-token, timeout: 2s, retry: {min: 100ms, max: 1s}}\n"
    }

    /// A daemon that delivers (no `--dry-run`), its token in `credentials`.
    static func daemon(_ config: String, credentials: TemporaryFolder, folder: TemporaryFolder = TemporaryFolder()) throws -> RunTests.Daemon {
        try RunTests.Daemon(config: config, folder: folder, environment: ["CREDENTIALS_DIRECTORY": credentials.url.path])
    }

    /// What the widget should show: the daemon's NDJSON patches, applied in order.
    static func computed(_ daemon: RunTests.Daemon) -> JSONValue {
        daemon.pushes.reduce(JSONValue.null) { MergePatch.apply($1["patch"]?["content"] ?? .null, to: $0) }
    }

    static func publishBalance(_ broker: MosquittoBroker, grid: Int) async throws {
        try await broker.publish(topic: "solar/ac/power", payload: "3200")
        try await broker.publish(topic: "evcc/site/battery/power", payload: "-800")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":\#(grid)}"#)
    }

    @Test func theWidgetShowsWhatTheDaemonComputedAndARestartGoesOnWithAPatch() async throws {
        let broker = try await MosquittoBroker()
        let service = try await WidgetStandIn()
        let folder = TemporaryFolder()
        _ = try folder.write("widget-token", service.token + "\n")
        let state = folder.url.appendingPathComponent("state.json").path
        let config = Self.config(broker: broker, service: service, state: state)

        let daemon = try Self.daemon(config, credentials: folder, folder: folder)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(daemon.text.contains("pushes go to stdout, push:power (\(service.url))"), "\(daemon.text)")
        // Running, it gave back what it read only to start (libcurl's loading among it); what the
        // widget shows below is computed and pushed by code read again after.
        #expect(await daemon.waitFor("running: gave back"), "\(daemon.text)")
        try await Self.publishBalance(broker, grid: -1400)
        #expect(await daemon.waitFor(#""rate":1000"#), "\(daemon.text)")
        let computed = Self.computed(daemon)
        let seen = try #require(await service.waitUntil { $0.document == computed }, "\(daemon.text)")
        #expect(seen.requests.first?.method == "PUT")
        #expect(seen.requests.dropFirst().allSatisfy { $0.method == "PATCH" && $0.succeeded })
        #expect(seen.maxInFlight == 1)
        await daemon.stop()
        #expect(!daemon.text.contains(service.token))
        let saved = try #require(savedState(state))
        #expect(saved["sinks"]?["push:power"]?["shown"] == computed)
        #expect(saved["sinks"]?["push:power"]?["in_doubt"] == false)

        // The restarted daemon's first push is whole content; the widget gets a patch.
        let before = try service.snapshot().requests.count
        let restarted = try Self.daemon(config, credentials: folder)
        #expect(await restarted.waitFor("subscribed to"), "\(restarted.text)")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":-900}"#)
        #expect(await restarted.waitFor(#""rate":-900"#), "\(restarted.text)")
        let now = Self.computed(restarted)
        let after = try #require(await service.waitUntil { $0.document == now }, "\(restarted.text)")
        #expect(after.requests.dropFirst(before).first?.method == "PATCH", "\(after.requests.map(\.method))")
        #expect(after.requests.dropFirst(before).allSatisfy { $0.method == "PATCH" })
        await restarted.stop()
    }

    /// The API away (a real outage): ingestion and the other sink go on, and afterwards one patch
    /// brings the widget to what the daemon computed meanwhile.
    @Test func anOutageOfTheAPIStopsNeitherIngestionNorStandardOutput() async throws {
        let broker = try await MosquittoBroker()
        let service = try await WidgetStandIn()
        let folder = TemporaryFolder()
        _ = try folder.write("widget-token", service.token)
        let daemon = try Self.daemon(
            Self.config(broker: broker, service: service, state: folder.url.appendingPathComponent("s.json").path),
            credentials: folder, folder: folder)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        try await Self.publishBalance(broker, grid: -1400)
        #expect(await daemon.waitFor(#""rate":1000"#))
        let first = Self.computed(daemon)
        #expect(await service.waitUntil { $0.document == first } != nil, "\(daemon.text)")
        let before = try service.snapshot().requests.count

        try await service.outage(seconds: 3)
        // All four inside the outage, however busy the machine.
        try await publishInOrder(broker, [-1000, -600, -200, 300].map { ("shellypro3em-abc/status/em:0", #"{"total_act_power":\#($0)}"#) })
        #expect(await daemon.waitFor(#""rate":300"#), "standard output stalled: \(daemon.text)")
        let computed = Self.computed(daemon)
        let seen = try #require(await service.waitUntil(timeout: .seconds(15)) { $0.document == computed }, "\(daemon.text)")
        let afterOutage = seen.requests.dropFirst(before)
        #expect(afterOutage.count == 1, "\(afterOutage.map(\.method))")
        #expect(afterOutage.first?.method == "PATCH")
        #expect(seen.maxInFlight == 1)
        #expect(daemon.text.contains("push:power: the patch did not go through"), "\(daemon.text)")
        // Said once the daemon has read the answer, which may be a moment after the stand-in had it.
        #expect(await daemon.waitFor("push:power: delivered again"), "\(daemon.text)")
        await daemon.stop()
    }

    @Test func aDryRunDeliversNothing() async throws {
        let broker = try await MosquittoBroker()
        let service = try await WidgetStandIn()
        let folder = TemporaryFolder()
        _ = try folder.write("widget-token", service.token)
        let config = Self.config(broker: broker, service: service, state: folder.url.appendingPathComponent("s.json").path, stdout: false)
        let daemon = try RunTests.Daemon(
            config: config, folder: folder, arguments: ["--dry-run"], environment: ["CREDENTIALS_DIRECTORY": folder.url.path])
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(daemon.text.contains("dry run: pushes go to standard output; push:power gets nothing"), "\(daemon.text)")
        try await Self.publishBalance(broker, grid: -1400)
        #expect(await daemon.waitFor(#""rate":1000"#))
        // A delivery would start with the push just printed: time for its request to arrive.
        #expect(await consistently(for: .milliseconds(500)) { (try? service.snapshot().requests.isEmpty) == true })
        await daemon.stop()
    }

    @Test func aDaemonWithoutASinkSaysSo() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = RunTests.config(port: broker.port, state: folder.url.appendingPathComponent("s.json").path, stdout: false)
        let daemon = try RunTests.Daemon(config: config, folder: folder)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(daemon.text.contains("warning: no sink configured: pushes are computed but go nowhere"), "\(daemon.text)")
        await daemon.stop()
    }

    /// A token that cannot be read stops the start with a config error naming the key, not the
    /// token's content.
    @Test func anUnreadableTokenIsAConfigError() async throws {
        let service = try await WidgetStandIn()
        let folder = TemporaryFolder()
        let config = try folder.write("c.yaml", RunTests.config(port: 1, state: folder.url.appendingPathComponent("s.json").path)
            + "\n    push: {url: \"\(service.url)\", token_file: missing-token}\n")
        let output = folder.url.appendingPathComponent("out.log").path
        let process = try ChildProcess(Repository.binary, ["run", "--config", config], outputFile: output,
                                       environment: ["CREDENTIALS_DIRECTORY": folder.url.path])
        #expect(await process.waitForExit(timeout: .seconds(5)))
        #expect(process.exitCode == 78)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(text.contains("widgets.power.push.token_file: cannot read \(folder.url.path)/missing-token"), "\(text)")
    }
}
