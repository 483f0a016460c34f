import FlowCore
import Foundation
import Testing
@testable import Mosquitto
import TestSupport

/// The client against a real mosquitto broker. Every test starts its own broker on its own port,
/// so they run in parallel; every wait is bounded.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .timeLimit(.minutes(1)), .ownThread)
struct MQTTClientBrokerTests {
    /// Options for `broker` with a unique client ID and a quick reconnect, so tests stay short.
    static func options(_ broker: MosquittoBroker, _ change: (inout MQTTOptions) -> Void = { _ in }) -> MQTTOptions {
        var options = MQTTOptions(port: broker.port, clientID: "fb-\(UUID().uuidString.prefix(8))", reconnectDelay: (min: 1, max: 2))
        change(&options)
        return options
    }

    /// A started client and the log of its events.
    static func started(_ options: MQTTOptions, _ subscriptions: [String], bufferCapacity: Int = 1024) throws -> (MQTTClient, EventLog) {
        let client = try MQTTClient(options: options, subscriptions: subscriptions, bufferCapacity: bufferCapacity)
        let log = EventLog(client.events)
        try client.start()
        return (client, log)
    }

    /// Waits until the broker has acknowledged `count` SUBSCRIBEs from `clientID` (one per connection).
    static func subscribed(_ broker: MosquittoBroker, _ options: MQTTOptions, count: Int = 1) async -> Bool {
        await broker.waitForLog("Sending SUBACK to \(options.clientID)", count: count)
    }

    // MARK: Receiving

    @Test("connects, subscribes and receives retained and live messages with the payload intact")
    func receive() async throws {
        let broker = try await MosquittoBroker()
        let binary: [UInt8] = [0x00, 0xFF, 0x7B, 0x22, 0xE2, 0x82, 0xAC, 0x0A, 0x00]
        try await broker.publish(topic: "meters/garage/power", payload: binary, retain: true)

        let options = Self.options(broker)
        let (client, log) = try Self.started(options, ["meters/#"])
        defer { client.stop() }
        #expect(await log.nextConnected(), "\(log.all)\n\(broker.log)")
        #expect(client.isConnected)

        let retained = try #require(await log.nextMessage())
        #expect(retained == MQTTMessage(topic: "meters/garage/power", payload: binary, retained: true))

        #expect(await Self.subscribed(broker, options))
        try await broker.publish(topic: "meters/house/energy", payload: "12.5 kWh")
        let live = try #require(await log.nextMessage())
        #expect(live == MQTTMessage(topic: "meters/house/energy", payload: Array("12.5 kWh".utf8), retained: false))
        #expect(live.messageExpirySeconds == nil)

        try await broker.publish(topic: "meters/empty", payload: [])
        #expect(await log.nextMessage()?.payload == [])
    }

    @Test("wildcard filters receive exactly the matching topics",
          arguments: [
              ("meters/+/power", "meters/garage/power", true),
              ("meters/+/power", "meters/garage/energy", false),
              ("meters/+/power", "meters/a/b/power", false),
              ("meters/#", "meters/a/b/c", true),
              ("meters/#", "meters", true),
              ("meters/#", "other/meters", false),
              ("+/status", "shelly/status", true),
          ])
    func wildcards(filter: String, topic: String, matches: Bool) async throws {
        let broker = try await MosquittoBroker()
        let options = Self.options(broker)
        let (client, log) = try Self.started(options, [filter, "sentinel"])
        defer { client.stop() }
        #expect(await Self.subscribed(broker, options))
        try await broker.publish(topic: topic, payload: "candidate")
        try await broker.publish(topic: "sentinel", payload: "end")
        // Messages on one connection arrive in order: the sentinel comes after the candidate, if any.
        let first = try #require(await log.nextMessage())
        #expect(first.topic == (matches ? topic : "sentinel"))
    }

    @Test("several subscriptions on one client")
    func severalSubscriptions() async throws {
        let broker = try await MosquittoBroker()
        for topic in ["a/x", "b/y", "c/z"] { try await broker.publish(topic: topic, payload: topic, retain: true) }
        let (client, log) = try Self.started(Self.options(broker), ["a/#", "b/+"])
        defer { client.stop() }
        var topics: Set<String> = []
        for _ in 0..<2 { if let message = await log.nextMessage() { topics.insert(message.topic) } }
        #expect(topics == ["a/x", "b/y"])
        // Nothing else: the next message is one published after the retained ones were sent.
        try await broker.publish(topic: "a/end", payload: "end")
        #expect(await log.nextMessage()?.topic == "a/end", "\(log.all)")
    }

    // MARK: Publishing

    @Test("a message published by the client reaches another client", arguments: QoS.allCases)
    func publish(qos: QoS) async throws {
        let broker = try await MosquittoBroker()
        let (client, log) = try Self.started(Self.options(broker), [])
        defer { client.stop() }
        #expect(await log.nextConnected())
        let subscriber = try await broker.subscriber(topic: "flowbridge/#")
        let payload = Array(#"{"flow":{"output":{"rate":1000}}}"#.utf8) + [0x00, 0xFF]
        try client.publish(topic: "flowbridge/widget/patch", payload: payload, qos: qos)
        let received = await subscriber.messages()
        #expect(received == [.init(topic: "flowbridge/widget/patch", payload: payload, retained: false)])
    }

    @Test("publishing while disconnected fails with a clear error instead of vanishing")
    func publishWhileDisconnected() async throws {
        let broker = try await MosquittoBroker()
        let (client, log) = try Self.started(Self.options(broker), [])
        defer { client.stop() }
        #expect(await log.nextConnected())
        await broker.kill()
        #expect(await log.nextDisconnect() != nil)
        #expect(!client.isConnected)
        for qos in QoS.allCases {
            #expect {
                try client.publish(topic: "flowbridge/x", payload: [1], qos: qos)
            } throws: { error in
                guard case .publishFailed(_, let reason) = error as? MQTTError else { return false }
                return reason.contains("not currently connected")
            }
        }
    }

    // MARK: Reconnecting

    enum BrokerOutage: String, CaseIterable, Sendable { case killed, stopped }

    @Test("broker killed (SIGKILL) or stopped (SIGTERM) and restarted on the same port: reconnect, re-subscribe, receive again",
          arguments: BrokerOutage.allCases, [ProtocolVersion.v311, .v5])
    func reconnectAfterOutage(outage: BrokerOutage, version: ProtocolVersion) async throws {
        let broker = try await MosquittoBroker()
        let options = Self.options(broker) { $0.protocolVersion = version }
        let (client, log) = try Self.started(options, ["meters/#"])
        defer { client.stop() }
        #expect(await log.nextConnected())
        #expect(await Self.subscribed(broker, options))
        try await broker.publish(topic: "meters/a", payload: "before")
        #expect(await log.nextMessage()?.payload == Array("before".utf8))

        switch outage {
        case .killed: await broker.kill()
        case .stopped: await broker.stop()
        }
        let reason = try #require(await log.nextDisconnect(), "\(log.all)")
        #expect(reason.contains("127.0.0.1:\(broker.port)"), "\(reason)")
        #expect(!client.isConnected)

        // The client tries again while the broker is away, and is refused: an outage it saw.
        #expect(await log.nextDisconnect()?.contains("Connection refused") == true, "\(log.all)")
        try await broker.start()  // same port, no persistence: it knows nothing of our subscription
        #expect(await log.nextConnected(timeout: .seconds(10)), "\(log.all)\n\(broker.log)")
        #expect(client.isConnected)
        #expect(client.lastError == nil)
        #expect(await Self.subscribed(broker, options, count: 2), "\(broker.log)")
        try await broker.publish(topic: "meters/a", payload: "after")
        #expect(await log.nextMessage()?.payload == Array("after".utf8), "\(log.all)")
    }

    @Test("a broker that is down when the client starts is waited for")
    func brokerDownAtStart() async throws {
        let broker = try await MosquittoBroker()
        await broker.stop()
        let options = Self.options(broker)
        let (client, log) = try Self.started(options, ["meters/#"])
        defer { client.stop() }
        let reason = try #require(await log.nextDisconnect())
        #expect(reason.contains("Connection refused"), "\(reason)")
        #expect(reason.contains("127.0.0.1:\(broker.port)"), "\(reason)")
        try await broker.start()
        #expect(await log.nextConnected(timeout: .seconds(10)), "\(log.all)")
        try await broker.publish(topic: "meters/x", payload: "1", retain: true)
        #expect(await log.nextMessage()?.topic == "meters/x")
    }

    @Test("stop is prompt while the client backs off between retries")
    func stopDuringBackoff() async throws {
        let broker = try await MosquittoBroker()
        let options = Self.options(broker) { $0.reconnectDelay = (min: 30, max: 60) }
        let (client, log) = try Self.started(options, [])
        #expect(await log.nextConnected())
        await broker.kill()
        #expect(await log.nextDisconnect() != nil)
        let clock = ContinuousClock()
        let elapsed = clock.measure { client.stop() }
        #expect(elapsed < .seconds(2), "stop took \(elapsed)")
    }

    // MARK: Authentication

    @Test("the right password connects and receives")
    func rightPassword() async throws {
        let broker = try await MosquittoBroker(users: ["meter": "s3cret pass"])
        try await broker.publish(topic: "meters/p", payload: "42", retain: true)
        let (client, log) = try Self.started(Self.options(broker) {
            $0.username = "meter"
            $0.password = "s3cret pass"
        }, ["meters/#"])
        defer { client.stop() }
        #expect(await log.nextConnected(), "\(log.all)")
        #expect(await log.nextMessage()?.payload == Array("42".utf8))
    }

    @Test("a wrong password is reported once with the broker's reason, and retried quietly",
          arguments: [(ProtocolVersion.v311, 5), (.v5, 135)])
    func wrongPassword(version: ProtocolVersion, code: Int) async throws {
        let broker = try await MosquittoBroker(users: ["meter": "right"])
        let options = Self.options(broker) {
            $0.username = "meter"
            $0.password = "wrong"
            $0.protocolVersion = version
            $0.reconnectDelay = (min: 1, max: 1)
        }
        let (client, log) = try Self.started(options, ["meters/#"])
        defer { client.stop() }
        let reason = try #require(await log.nextDisconnect(), "\(log.all)")
        #expect(reason.lowercased().contains("not authori"), "\(reason)")
        #expect(!reason.contains("wrong"), "the password must not leak into the reason: \(reason)")
        guard case .connectionRefused(let refusedCode, _)? = client.lastError else {
            Issue.record("lastError: \(String(describing: client.lastError))")
            return
        }
        #expect(refusedCode == code)
        // It keeps trying (the broker refuses again and again) without flooding the events.
        #expect(await broker.waitForLog("disconnected, not authorised", count: 3, timeout: .seconds(8)), "\(broker.log)")
        #expect(log.all.count == 1, "\(log.all)")
        #expect(!client.isConnected)
    }

    // MARK: TLS

    @Test("TLS with the right CA connects and receives")
    func tlsRightCA() async throws {
        let broker = try await MosquittoBroker(tls: true)
        let files = try #require(broker.tlsFiles)
        try await broker.publish(topic: "meters/tls", payload: "secure", retain: true)
        let (client, log) = try Self.started(Self.options(broker) { $0.tls = TLSOptions(caFile: files.caFile) }, ["meters/#"])
        defer { client.stop() }
        #expect(await log.nextConnected(), "\(log.all)\n\(broker.log)")
        #expect(await log.nextMessage()?.payload == Array("secure".utf8))
    }

    @Test("TLS hostname verification accepts the certificate's DNS name too")
    func tlsLocalhost() async throws {
        let broker = try await MosquittoBroker(tls: true)
        let files = try #require(broker.tlsFiles)
        let (client, log) = try Self.started(Self.options(broker) {
            $0.host = "localhost"
            $0.tls = TLSOptions(caFile: files.caFile)
        }, [])
        defer { client.stop() }
        #expect(await log.nextConnected(), "\(log.all)")
    }

    @Test("TLS with an unrelated CA, or the system store, is refused and says why")
    func tlsWrongCA() async throws {
        let broker = try await MosquittoBroker(tls: true)
        let files = try #require(broker.tlsFiles)
        for ca in [files.wrongCAFile, nil] {
            let (client, log) = try Self.started(Self.options(broker) { $0.tls = TLSOptions(caFile: ca) }, [])
            defer { client.stop() }
            let reason = try #require(await log.nextDisconnect(), "\(log.all)")
            #expect(reason.contains("certificate verify failed"), "\(reason)")
            #expect(!client.isConnected)
            // The client comes again (and again): by its second retry, the first one has failed
            // the same way, and said nothing new.
            let connections = broker.connectionAttempts
            #expect(await broker.waitForConnectionAttempts(connections + 2), "\(broker.log)")
            #expect(log.all.count == 1, "\(log.all)")
        }
    }

    @Test("insecure TLS (explicit opt-out) connects despite an untrusted certificate")
    func tlsInsecure() async throws {
        let broker = try await MosquittoBroker(tls: true)
        let files = try #require(broker.tlsFiles)
        let (client, log) = try Self.started(Self.options(broker) {
            $0.tls = TLSOptions(caFile: files.wrongCAFile, insecure: true)
        }, [])
        defer { client.stop() }
        #expect(await log.nextConnected(), "\(log.all)")
    }

    @Test("plain MQTT to a TLS listener fails and says so")
    func plainToTLS() async throws {
        let broker = try await MosquittoBroker(tls: true)
        let (client, log) = try Self.started(Self.options(broker), [])
        defer { client.stop() }
        #expect(await log.nextDisconnect() != nil, "\(log.all)")
        #expect(!client.isConnected)
    }

    // MARK: Status, last will and orderly stop

    @Test("stop(finalMessage:) leaves a retained 'offline' that a new subscriber sees")
    func finalMessage() async throws {
        let broker = try await MosquittoBroker()
        let (client, log) = try Self.started(Self.options(broker) {
            $0.will = Will(topic: "flowbridge/status", payload: Array("offline".utf8))
        }, [])
        #expect(await log.nextConnected())
        try client.publish(topic: "flowbridge/status", payload: Array("online".utf8), qos: .atLeastOnce, retain: true)
        #expect(try await broker.receive(topic: "flowbridge/status").map(\.text) == ["online"])

        client.stop(finalMessage: (topic: "flowbridge/status", payload: Array("offline".utf8), retain: true))
        #expect(!client.isConnected)
        let seen = try await broker.receive(topic: "flowbridge/status")
        #expect(seen == [.init(topic: "flowbridge/status", payload: Array("offline".utf8), retained: true)])
    }

    @Test("an orderly stop does not fire the will")
    func orderlyStopKeepsWillUnsent() async throws {
        let broker = try await MosquittoBroker()
        let options = Self.options(broker) { $0.will = Will(topic: "flowbridge/status", payload: Array("will-fired".utf8)) }
        let (client, log) = try Self.started(options, [])
        #expect(await log.nextConnected())
        try client.publish(topic: "flowbridge/status", payload: Array("online".utf8), qos: .atLeastOnce, retain: true)
        #expect(try await broker.receive(topic: "flowbridge/status").map(\.text) == ["online"])
        client.stop()
        // The broker has ended the session: a will it were to send is sent by now.
        #expect(await broker.waitForLog("Client \(options.clientID) disconnected"), "\(broker.log)")
        #expect(try await broker.receive(topic: "flowbridge/status").map(\.text) == ["online"])
    }

    @Test("the will is published when the connection dies without DISCONNECT",
          arguments: [ProtocolVersion.v311, .v5])
    func willOnAbruptLoss(version: ProtocolVersion) async throws {
        let broker = try await MosquittoBroker()
        let options = Self.options(broker) {
            $0.will = Will(topic: "flowbridge/status", payload: Array("offline".utf8))
            $0.reconnectDelay = (min: 1, max: 1)
            $0.protocolVersion = version
        }
        let (client, log) = try Self.started(options, [])
        defer { client.stop() }
        #expect(await log.nextConnected())
        try client.publish(topic: "flowbridge/status", payload: Array("online".utf8), qos: .atLeastOnce, retain: true)
        #expect(try await broker.receive(topic: "flowbridge/status").map(\.text) == ["online"])
        // Another connection with the same client ID takes the session over: the broker closes
        // ours without a DISCONNECT from us, which is what a crash looks like to it.
        try await MosquittoBroker.run("mosquitto_pub", broker.clientArguments + ["-i", options.clientID, "-t", "x", "-m", "y"],
                                directory: broker.directory)
        let seen = try await broker.receive(topic: "flowbridge/status")
        #expect(seen == [.init(topic: "flowbridge/status", payload: Array("offline".utf8), retained: true)])
        // mosquitto 2.0.11 closes the taken-over connection without an MQTT 5 reason code.
        #expect(await log.nextDisconnect() != nil)
        // A duplicate client ID elsewhere is the classic cause of this: the client comes back by itself.
        #expect(await log.nextConnected(timeout: .seconds(10)), "\(log.all)")
    }

    // MARK: MQTT 5

    @Test("MQTT 5 connects and receives; message expiry is reported")
    func mqtt5() async throws {
        let broker = try await MosquittoBroker()
        let options = Self.options(broker) { $0.protocolVersion = .v5 }
        let (client, log) = try Self.started(options, ["meters/#"])
        defer { client.stop() }
        #expect(await log.nextConnected(), "\(log.all)")
        #expect(await Self.subscribed(broker, options))
        #expect(broker.log.contains("as \(options.clientID) (p5"), "not MQTT 5:\n\(broker.log)")

        try await broker.publish(topic: "meters/v5", payload: "plain", mqtt5: true)
        let plain = try #require(await log.nextMessage())
        #expect(plain.payload == Array("plain".utf8))
        #expect(plain.messageExpirySeconds == nil)

        try await broker.publish(topic: "meters/v5", payload: "expiring", messageExpirySeconds: 30)
        let expiring = try #require(await log.nextMessage())
        #expect(expiring.payload == Array("expiring".utf8))
        #expect((28...30).contains(expiring.messageExpirySeconds ?? 0), "\(expiring)")
    }

    @Test("a retained message with expiry shows the remaining life under MQTT 5")
    func mqtt5RetainedExpiry() async throws {
        let broker = try await MosquittoBroker()
        try await broker.publish(topic: "meters/r", payload: "stored", retain: true, messageExpirySeconds: 120)
        let (client, log) = try Self.started(Self.options(broker) { $0.protocolVersion = .v5 }, ["meters/#"])
        defer { client.stop() }
        let message = try #require(await log.nextMessage())
        #expect(message.retained)
        #expect((100...120).contains(message.messageExpirySeconds ?? 0), "\(message)")
    }

    // MARK: Backpressure

    @Test("a slow consumer loses nothing: the network thread waits on the full buffer")
    func backpressure() async throws {
        let broker = try await MosquittoBroker()
        let options = Self.options(broker)
        let consumer = try MQTTClient(options: options, subscriptions: ["burst/#"], bufferCapacity: 4)
        try consumer.start()
        defer { consumer.stop() }
        var events = consumer.events.makeAsyncIterator()
        #expect(await events.next() == .connected)
        #expect(await Self.subscribed(broker, options))

        let (publisher, publisherLog) = try Self.started(Self.options(broker), [])
        defer { publisher.stop() }
        #expect(await publisherLog.nextConnected())
        let total = 300
        for n in 0..<total {
            try publisher.publish(topic: "burst/\(n % 7)", payload: Array(String(n).utf8), qos: .atLeastOnce)
        }
        // The buffer is full: the network thread waits to put the next message in.
        #expect(await eventually { consumer.events.bufferedCount == consumer.events.capacity })
        var received: [Int] = []
        while received.count < total, let event = await events.next() {
            // A catch-up comes wherever the client found the socket empty in between, and the
            // subscription's answer before the first message.
            if event == .caughtUp || event == .subscribed(taken: ["burst/#"]) { continue }
            guard case .message(let message) = event else { break }
            received.append(Int(String(decoding: message.payload, as: UTF8.self)) ?? -1)
        }
        #expect(received == Array(0..<total))
    }

    @Test("stop while the network thread is blocked on a full buffer returns promptly")
    func stopWithBlockedProducer() async throws {
        let broker = try await MosquittoBroker()
        for n in 0..<10 { try await broker.publish(topic: "full/\(n)", payload: "x", retain: true) }
        let client = try MQTTClient(options: Self.options(broker), subscriptions: ["full/#"], bufferCapacity: 2)
        try client.start()
        // Connected and a message buffered, the buffer full: the network thread now waits.
        #expect(await eventually { client.events.bufferedCount == 2 })
        let clock = ContinuousClock()
        let elapsed = clock.measure { client.stop() }
        #expect(elapsed < .seconds(2), "stop took \(elapsed)")
        var drained = 0
        for await _ in client.events { drained += 1 }
        #expect(drained == 2)
    }

    // MARK: Subscriptions

    /// mosquitto 2.0 sends the retained messages of one SUBSCRIBE before it reads the next: with
    /// a packet per topic, a small retained value waits behind a large one.
    @Test("all topics go out in one SUBSCRIBE packet, on every connect")
    func oneSubscribePacket() async throws {
        let broker = try await MosquittoBroker()
        let options = Self.options(broker)
        let (client, log) = try Self.started(options, ["a/#", "b/+", "c", "a/#"])
        defer { client.stop() }
        #expect(await log.nextConnected())
        #expect(await Self.subscribed(broker, options))
        #expect(broker.log.components(separatedBy: "Received SUBSCRIBE from \(options.clientID)").count - 1 == 1, "\(broker.log)")
        for filter in ["a/#", "b/+", "c"] { #expect(broker.log.contains("\t\(filter) (QoS 1)"), "\(broker.log)") }
        #expect(client.subscriptions == ["a/#", "b/+", "c"])  // a filter twice is subscribed once
        await broker.kill()
        try await broker.start()
        #expect(await Self.subscribed(broker, options, count: 2), "\(log.all)")
        #expect(broker.log.components(separatedBy: "Received SUBSCRIBE from \(options.clientID)").count - 1 == 2)
    }

    @Test("a change of subscriptions applies at once and to every later reconnect")
    func updateSubscriptions() async throws {
        let broker = try await MosquittoBroker()
        let options = Self.options(broker)
        let (client, log) = try Self.started(options, ["old/x", "kept/x"])
        defer { client.stop() }
        #expect(await Self.subscribed(broker, options))
        try await broker.publish(topic: "kept/x", payload: "retained", retain: true)
        #expect(await log.nextMessage()?.topic == "kept/x")
        try client.updateSubscriptions(["kept/x", "new/x"])
        #expect(await broker.waitForLog("Sending UNSUBACK to \(options.clientID)"), "\(broker.log)")
        #expect(await Self.subscribed(broker, options, count: 2))
        #expect(client.subscriptions == ["kept/x", "new/x"])
        for topic in ["old/x", "new/x"] { try await broker.publish(topic: topic, payload: topic) }
        // The filter that stayed was not subscribed again: no retained copy of kept/x arrives.
        #expect(await log.nextMessage()?.topic == "new/x", "\(log.all)")
        #expect(#expect(throws: MQTTError.self) { try client.updateSubscriptions(["bad/#/x"]) } != nil)
        #expect(client.subscriptions == ["kept/x", "new/x"])

        await broker.kill()
        try await broker.start()
        #expect(await Self.subscribed(broker, options, count: 3), "\(log.all)")
        for topic in ["old/x", "new/x"] { try await broker.publish(topic: topic, payload: topic) }
        let after = await log.nextMessage(timeout: .seconds(5))
        #expect(after?.topic == "kept/x" || after?.topic == "new/x", "\(log.all)")
        // new/x went out after old/x: once it is here (the second time), old/x would be too.
        #expect(await eventually { log.all.filter { if case .message(let m) = $0 { m.topic == "new/x" } else { false } }.count == 2 }, "\(log.all)")
        #expect(log.all.allSatisfy { if case .message(let m) = $0 { m.topic != "old/x" } else { true } }, "\(log.all)")
    }

    /// A broker that stops answering (frozen, or a cut that leaves the socket open) is found by
    /// the keepalive, and the reason says so instead of libmosquitto's "Unknown error".
    @Test("a keepalive timeout is named as such")
    func keepaliveTimeoutNamed() async throws {
        let broker = try await MosquittoBroker()
        let (client, log) = try Self.started(Self.options(broker) { $0.keepaliveSeconds = 5 }, [])
        defer { client.stop() }
        #expect(await log.nextConnected())
        let pid = try #require(broker.processIdentifier)
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        let reason = try #require(await log.nextDisconnect(timeout: .seconds(20)), "\(log.all)")
        #expect(reason.contains("no answer from the broker in 5 s (keepalive timeout)"), "\(reason)")
        #expect(!reason.contains("Unknown error"))
    }
}
