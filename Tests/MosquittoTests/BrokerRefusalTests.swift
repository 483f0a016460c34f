import Foundation
import Glibc
import Mosquitto
import TestSupport
import Testing
import Threads

/// What the broker refuses, and what it must not send: a subscription its ACL forbids (SUBACK
/// 0x80), a publish it forbids (an MQTT 5 PUBACK), a message larger than the client takes (MQTT 5
/// Maximum Packet Size; under 3.1.1 left unread), and MQTT 5 itself (a 3.1.1-only broker).
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .timeLimit(.minutes(1)), .ownThread)
struct BrokerRefusalTests {
    /// A broker that lets anonymous clients subscribe to `meters/#` and nothing else, and publish nothing.
    static func aclBroker() async throws -> MosquittoBroker { try await MosquittoBroker.restricted(reading: ["meters/#"]) }

    @Test(arguments: [ProtocolVersion.v311, .v5])
    func aRefusedSubscriptionIsReportedNamingItsFilter(version: ProtocolVersion) async throws {
        let broker = try await Self.aclBroker()
        let (client, log) = try MQTTClientBrokerTests.started(
            MQTTClientBrokerTests.options(broker) { $0.protocolVersion = version }, ["meters/#", "secret/#"])
        defer { client.stop() }
        #expect(await log.nextConnected(), "\(log.all)\n\(broker.log)")
        let refused = await log.next { if case .subscriptionRefused = $0 { true } else { false } }
        guard case .subscriptionRefused(let filter, let reason)? = refused else {
            Issue.record("no refusal: \(log.all)\n\(broker.log)")
            return
        }
        #expect(filter == "secret/#")
        #expect(reason.contains(version == .v5 ? "not authorized (reason code 0x87)" : "reason code 0x80"), "\(reason)")
        // Only the refused one: the other was taken.
        #expect(!log.all.contains(.subscriptionRefused(filter: "meters/#", reason: reason)))
    }

    @Test func aPublishRefusedUnderMQTT5IsReportedNamingItsTopic() async throws {
        let broker = try await Self.aclBroker()
        let (client, log) = try MQTTClientBrokerTests.started(MQTTClientBrokerTests.options(broker) { $0.protocolVersion = .v5 }, [])
        defer { client.stop() }
        #expect(await log.nextConnected(), "\(log.all)")
        try client.publish(topic: "flowbridge/status", payload: Array("online".utf8), qos: .atLeastOnce, retain: true)
        let refused = await log.next { if case .publishRefused = $0 { true } else { false } }
        guard case .publishRefused(let topic, let reason)? = refused else {
            Issue.record("no refusal: \(log.all)\n\(broker.log)")
            return
        }
        #expect(topic == "flowbridge/status")
        #expect(reason.contains("reason code 0x87"), "\(reason)")
    }

    /// Under MQTT 5 the broker is told the largest packet: it drops the huge retained message for
    /// us and sends the small one.
    @Test func underMQTT5TheBrokerDropsAMessageBeyondTheMaximumPacketSize() async throws {
        let broker = try await MosquittoBroker()
        try await broker.publish(topic: "meters/big", payload: Array(repeating: 0x41, count: 200_000), retain: true)
        try await broker.publish(topic: "meters/small", payload: "12", retain: true)
        let (client, log) = try MQTTClientBrokerTests.started(
            MQTTClientBrokerTests.options(broker) { $0.protocolVersion = .v5; $0.maximumPayloadBytes = 1000 }, ["meters/#"])
        defer { client.stop() }
        #expect(await log.nextMessage()?.topic == "meters/small", "\(log.all)")
        #expect(await broker.waitForLog("Dropping too large outgoing PUBLISH"), "\(broker.log)")
        #expect(!log.all.contains { if case .message(let m) = $0 { m.topic == "meters/big" } else { false } })
    }

    /// Under 3.1.1 the broker cannot be told: the message is left unread, only its size reported.
    @Test func under311AMessageBeyondTheLimitIsReportedNotCopied() async throws {
        let broker = try await MosquittoBroker()
        try await broker.publish(topic: "meters/big", payload: Array(repeating: 0x41, count: 200_000), retain: true)
        let (client, log) = try MQTTClientBrokerTests.started(
            MQTTClientBrokerTests.options(broker) { $0.maximumPayloadBytes = 1000 }, ["meters/#"])
        defer { client.stop() }
        let event = await log.next { if case .oversizedMessage = $0 { true } else { false } }
        #expect(event == .oversizedMessage(topic: "meters/big", bytes: 200_000), "\(log.all)")
        try await broker.publish(topic: "meters/small", payload: "12")
        #expect(await log.nextMessage()?.topic == "meters/small")
    }

    /// A broker that speaks only 3.1.1 answers an MQTT 5 CONNECT with "unacceptable protocol
    /// version": with the fallback the client connects again with 3.1.1; without it, it is refused.
    @Test(arguments: [true, false])
    func aBrokerWithoutMQTT5IsReachedWith311WhenAllowed(fallback: Bool) async throws {
        let broker = try OldBroker()
        let options = MQTTOptions(
            port: broker.port, clientID: "fb-old", protocolVersion: .v5, fallsBackToV311: fallback, maximumPayloadBytes: 1000,
            reconnectDelay: (min: 1, max: 2))
        let (client, log) = try MQTTClientBrokerTests.started(options, ["meters/#"])
        defer { client.stop() }
        let reason = await log.nextDisconnect()
        if fallback {
            #expect(reason?.contains("does not speak MQTT 5; connecting again with MQTT 3.1.1") == true, "\(reason ?? "none")")
            #expect(await log.nextConnected(timeout: .seconds(10)), "\(log.all)")
            #expect(broker.levels.contains(4))
        } else {
            #expect(reason?.contains("refused") == true, "\(reason ?? "none")")
            #expect(!broker.levels.contains(4))
        }
    }
}

/// A stand-in for a broker that speaks only MQTT 3.1.1: to a CONNECT of protocol level 5 it
/// answers with a 3.1.1 CONNACK "unacceptable protocol version" and closes; a 3.1.1 CONNECT is
/// accepted, and the connection is then kept open without a word more.
final class OldBroker: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var seenLevels: [UInt8] = []
    /// The protocol levels of the CONNECTs it heard (4: 3.1.1, 5: MQTT 5).
    var levels: [UInt8] { lock.withLock { seenLevels } }

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, listen(listener, 8) == 0 else { throw BrokerError("cannot listen: \(String(cString: strerror(errno)))") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        _ = try? NamedThread.start("broker 3.1.1", detached: true) { [self] in serve() }
    }

    deinit { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            // CONNECT: fixed header (1), remaining length (1 here), "\0\4MQTT" (6), level (1).
            var header = [UInt8](repeating: 0, count: 9)
            guard recv(connection, &header, header.count, Int32(MSG_WAITALL)) == header.count else { close(connection); continue }
            let level = header[8]
            lock.withLock { seenLevels.append(level) }
            let answer: [UInt8] = [0x20, 0x02, 0x00, level == 4 ? 0x00 : 0x01]
            _ = send(connection, answer, answer.count, Int32(MSG_NOSIGNAL))
            if level != 4 { close(connection); continue }
            _ = try? NamedThread.start("broker client", detached: true) {
                var sink = [UInt8](repeating: 0, count: 4096)
                while recv(connection, &sink, sink.count, 0) > 0 {}
                close(connection)
            }
        }
    }
}
