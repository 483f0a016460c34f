import FlowCore
import Testing
@testable import Mosquitto

/// Validation happens before any network I/O and names the field; the password never shows.
struct MQTTOptionsTests {
    @Test("defaults are the documented ones and valid")
    func defaults() throws {
        let options = MQTTOptions()
        #expect(options.host == "127.0.0.1")
        #expect(options.port == 1883)
        #expect(options.keepaliveSeconds == 60)
        #expect(options.protocolVersion == .v311)
        #expect(options.tls == nil)
        #expect(options.reconnectDelay == (1, 15))
        #expect(TLSOptions().insecure == false)
        try options.validate()
    }

    static let invalid: [(String, @Sendable (inout MQTTOptions) -> Void, String)] = [
        ("empty host", { $0.host = "" }, "host"),
        ("port 0", { $0.port = 0 }, "port 0"),
        ("port too big", { $0.port = 70_000 }, "port 70000"),
        ("keepalive 3", { $0.keepaliveSeconds = 3 }, "keepaliveSeconds"),
        ("password without username", { $0.password = "secret" }, "password needs a username"),
        ("backoff min 0", { $0.reconnectDelay = (0, 10) }, "reconnectDelay"),
        ("backoff max < min", { $0.reconnectDelay = (10, 5) }, "reconnectDelay"),
        ("backoff max > a day", { $0.reconnectDelay = (1, 100_000) }, "reconnectDelay"),
        ("will with wildcard", { $0.will = Will(topic: "fb/#", payload: []) }, "will topic"),
        ("missing CA file", { $0.tls = TLSOptions(caFile: "/nonexistent/ca.crt") }, "/nonexistent/ca.crt"),
        ("cert without key", { $0.tls = TLSOptions(certFile: "/etc/hostname") }, "certFile and keyFile"),
        ("missing key file", { $0.tls = TLSOptions(certFile: "/etc/hostname", keyFile: "/nonexistent/key.pem") }, "keyFile"),
    ]

    @Test("invalid options are refused with a message naming the field", arguments: invalid)
    func invalidOptions(name: String, change: @Sendable (inout MQTTOptions) -> Void, mentions: String) {
        var options = MQTTOptions(clientID: "test")
        change(&options)
        #expect {
            try options.validate()
        } throws: { error in
            guard case .invalidOptions(let message) = error as? MQTTError else { return false }
            return message.contains(mentions)
        }
        // The client refuses them too, before touching the network.
        #expect(throws: MQTTError.self) { try MQTTClient(options: options, subscriptions: []) }
    }

    @Test("invalid subscriptions and buffer capacity are refused",
          arguments: [
              (["meters/#/power"], 16),
              (["meters/po+wer"], 16),
              ([""], 16),
              (["meters/#"], 0),
          ])
    func invalidClientArguments(subscriptions: [String], capacity: Int) {
        #expect(throws: MQTTError.self) {
            try MQTTClient(options: MQTTOptions(), subscriptions: subscriptions, bufferCapacity: capacity)
        }
    }

    @Test("valid wildcard filters are accepted", arguments: ["#", "+", "meters/+/power", "meters/#", "a/+/+/b", "$SYS/#"])
    func validFilters(filter: String) throws {
        _ = try MQTTClient(options: MQTTOptions(), subscriptions: [filter])
    }

    @Test("the password never appears in description, debugDescription or dump")
    func passwordRedacted() {
        let options = MQTTOptions(host: "broker.lan", clientID: "fb", username: "meter", password: "hunter2-secret")
        var dumped = ""
        dump(options, to: &dumped)
        for text in [options.description, String(describing: options), String(reflecting: options), dumped] {
            #expect(!text.contains("hunter2"), "\(text)")
        }
        #expect(options.description.contains("username=meter"))
        #expect(options.description.contains("password=<redacted>"))
    }

    @Test("publish refuses bad topics before reaching libmosquitto",
          arguments: [("", QoS.atMostOnce), ("a/+/b", .atLeastOnce), ("a/#", .exactlyOnce)])
    func publishValidation(topic: String, qos: QoS) throws {
        let client = try MQTTClient(options: MQTTOptions(), subscriptions: [])
        #expect {
            try client.publish(topic: topic, payload: [1], qos: qos)
        } throws: { error in
            if case .publishFailed = error as? MQTTError { true } else { false }
        }
    }

    @Test("a client that was never started can be stopped, and cannot be started afterwards")
    func lifecycleWithoutBroker() async throws {
        let client = try MQTTClient(options: MQTTOptions(), subscriptions: [])
        client.stop()
        client.stop()
        var iterator = client.events.makeAsyncIterator()
        #expect(await iterator.next() == nil)
        #expect(throws: MQTTError.notRestartable) { try client.start() }
        #expect(!client.isConnected)
    }

    @Test("the reconnect delay doubles up to its cap, jittered into the upper half, never past the cap",
          arguments: [(0, 500...1000), (1, 1000...2000), (3, 4000...8000), (4, 7500...15000), (30, 7500...15000)])
    func reconnectDelay(failures: Int, expected: ClosedRange<Int>) {
        let options = MQTTOptions()
        let delays = (0..<200).map { _ in options.reconnectDelayMilliseconds(afterFailures: failures) }
        #expect(delays.allSatisfy(expected.contains), "\(delays.filter { !expected.contains($0) })")
        #expect(Set(delays).count > 1)  // jittered, not one fixed value
    }

    /// How each connect attempt ended: refused or unreachable (`nil`), or accepted and then lost
    /// after that many seconds.
    @Test("the backoff starts over only after a connection that lasted; one lost at once keeps doubling",
          arguments: [
            ([nil, nil, nil], [1000, 2000, 4000]),
            // Another client with our client ID takes the session over as soon as it reconnects:
            // starting over after each takeover would make the two fight every second, forever.
            ([0.3, 0.3, 0.3, 0.3, 0.3], [1000, 2000, 4000, 8000, 15000]),
            ([3600.0], [1000]),
            ([nil, nil, 3600.0, nil], [1000, 2000, 1000, 2000]),
            ([nil, nil, 15.0], [1000, 2000, 1000]),
            ([14.9, 14.9], [1000, 2000]),
          ] as [([Double?], [Int])])
    func backoffAfterAttempts(attempts: [Double?], ceilings: [Int]) {
        var backoff = ReconnectBackoff(MQTTOptions())
        let delays = attempts.map { backoff.attemptEnded(connectedForSeconds: $0) }
        #expect(delays.count == ceilings.count)
        for (delay, ceiling) in zip(delays, ceilings) { #expect((ceiling / 2...ceiling).contains(delay), "\(delays)") }
    }
}
