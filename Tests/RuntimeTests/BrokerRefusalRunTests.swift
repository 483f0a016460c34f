import Foundation
import Glibc
import TestSupport
import Testing

/// What `run` and `check --listen` say when the broker refuses a topic, and what a huge message
/// does to the daemon.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct BrokerRefusalRunTests {
    /// The test home's broker, whose ACL lets anonymous clients subscribe to the solar and grid
    /// topics and nothing else (not the battery's), and publish nothing (not `flowbridge/status`).
    static func aclBroker(in folder: TemporaryFolder) async throws -> MosquittoBroker {
        try await MosquittoBroker.restricted(reading: ["solar/#", "shellypro3em-abc/#"])
    }

    /// A refused subscription is an error naming the topic and in `STATUS=`; under MQTT 5 (the
    /// default) the refused `online` is said, once.
    @Test func aRefusedSubscriptionAndARefusedPublishAreSaidNamingTheTopic() async throws {
        let folder = TemporaryFolder()
        let broker = try await Self.aclBroker(in: folder)
        let notify = try NotifySocket(in: folder)
        let daemon = try RunTests.Daemon(
            config: RunTests.config(port: broker.port, state: folder.url.appendingPathComponent("state.json").path), folder: folder,
            environment: ["NOTIFY_SOCKET": notify.path])
        #expect(await daemon.waitFor("the broker refused the subscription to 'evcc/site/battery/power'"), "\(daemon.text)")
        let status = await notify.next { $0.contains("subscription refused") }
        #expect(status == "STATUS=connected to 127.0.0.1:\(broker.port); subscription refused: evcc/site/battery/power", "\(notify.received)")
        #expect(await daemon.waitFor("the broker refused the publish to 'flowbridge/status'"), "\(daemon.text)")
        #expect(!daemon.text.contains("refused the subscription to 'solar"), "\(daemon.text)")
        await daemon.stop()
        #expect(daemon.text.components(separatedBy: "refused the publish to 'flowbridge/status'").count == 2, "\(daemon.text)")
    }

    @Test func checkListenSaysTheRefusedSubscription() async throws {
        let folder = TemporaryFolder()
        let broker = try await Self.aclBroker(in: folder)
        let config = try folder.write("config.yaml", RunTests.config(port: broker.port, state: folder.url.appendingPathComponent("s.json").path))
        let result = try runFlowbridge(["check", "--config", config, "--listen", "2s"])
        #expect(result.status == 1, "\(result.out)\(result.err)")
        #expect(result.out.contains("the broker refused the subscription to evcc/site/battery/power: "), "\(result.out)")
        #expect(result.out.contains("  battery: the broker refused the subscription to evcc/site/battery/power"), "\(result.out)")
        #expect(!result.out.contains("no message on evcc/site/battery/power"), "\(result.out)")
    }

    /// 1 MiB on a regex source that takes that much (`max_payload: 2MiB`): the pattern, which
    /// fails at every start of a run of digits, is never matched against it; the payload is refused
    /// naming the source, and the daemon goes on: the grid's next reading is pushed, the watchdog
    /// pinged.
    @Test func aHugePayloadOnARegexSourceIsRefusedAndTheDaemonGoesOn() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = RunTests.config(port: broker.port, state: folder.url.appendingPathComponent("state.json").path).replacingOccurrences(
            of: "solar: {topic: solar/ac/power, stale_after: 5m}", with: "solar: {topic: solar/ac/power, stale_after: 5m, regex: '([0-9.]+) W', max_payload: 2MiB}")
        let notify = try NotifySocket(in: folder)
        let daemon = try RunTests.Daemon(config: config, folder: folder, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"])
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        try await broker.publish(topic: "solar/ac/power", payload: Array(repeating: UInt8(ascii: "9"), count: 1 << 20))
        #expect(await daemon.waitFor("a payload of 1048576 bytes is longer than a regex source matches (1024 bytes); not read"), "\(daemon.text)")
        #expect(daemon.text.contains("solar"), "\(daemon.text)")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":-1400}"#)
        #expect(await daemon.waitFor(#""rate":-1400"#), "\(daemon.text)")
        #expect(await notify.ticks(2), "\(notify.received)")
        await daemon.stop()
    }

    /// A 40 MB retained message on a source's topic: under MQTT 5 the broker is told the largest
    /// packet and drops it, so the daemon's memory never sees it; under 3.1.1 it is left unread
    /// and said, once a minute whatever the topic (a second one on another topic is not said).
    /// Either way the daemon goes on with the next reading.
    @Test(arguments: ["5", "3.1.1"])
    func aHugeRetainedMessageNeitherTakesTheMemoryNorStopsTheDaemon(protocolVersion: String) async throws {
        let broker = try await MosquittoBroker()
        try await broker.publish(topic: "solar/ac/power", payload: Array(repeating: 0x31, count: 40_000_000), retain: true)
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: Array(repeating: 0x31, count: 100_000), retain: true)
        let daemon = try RunTests.Daemon(broker: broker, extra: ", protocol: \"\(protocolVersion)\"")
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        if protocolVersion == "5" {
            #expect(await broker.waitForLog("Dropping too large outgoing PUBLISH"), "\(broker.log)")
        } else {
            #expect(await daemon.waitFor("a message of 40000000 bytes on 'solar/ac/power' is larger than the largest max_payload (65536 bytes): not read"), "\(daemon.text)")
        }
        try await broker.publish(topic: "solar/ac/power", payload: "1234")
        #expect(await daemon.waitFor("\"rate\":1234"), "\(daemon.text)")
        if protocolVersion == "3.1.1" {
            #expect(daemon.text.components(separatedBy: "larger than the largest max_payload").count == 2, "\(daemon.text)")
        }
        let peak = try #require(daemon.peakRSSKilobytes)
        if protocolVersion == "5" { #expect(peak < 80_000, "peak RSS \(peak) kB") }
        await daemon.stop()
    }
}
