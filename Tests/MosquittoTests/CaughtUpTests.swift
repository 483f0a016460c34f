import Dispatch
import Foundation
import Testing
@testable import Mosquitto
import Synchronization
import TestSupport

/// `caughtUp` against a real broker: once after the messages that had come in, never twice in a
/// row, and once after a backlog read in one go, not after each of its messages.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .timeLimit(.minutes(1)), .ownThread)
struct CaughtUpTests {
    /// Messages and catch-ups as a handler is given them, in order: a message as its payload.
    final class Record: Sendable {
        enum Entry: Equatable { case message(String), caughtUp }
        let entries = Mutex<[Entry]>([])
        /// Holds the network thread in the first message's handler until signalled: the rest
        /// queue up meanwhile.
        let release = DispatchSemaphore(value: 0)
        let holdsFirst: Bool

        init(holdsFirst: Bool) { self.holdsFirst = holdsFirst }

        func take(_ event: MQTTEvent) {
            let entry: Entry
            switch event {
            case .message(let message): entry = .message(String(decoding: message.payload, as: UTF8.self))
            case .caughtUp: entry = .caughtUp
            default: return
            }
            let first = entries.withLock { entries in
                entries.append(entry)
                return entries.count == 1
            }
            if first, holdsFirst { release.wait() }
        }

        var all: [Entry] { entries.withLock { $0 } }
    }

    /// The client subscribed to `burst`, at QoS 0 (no broker limit on messages in flight: a held
    /// client's backlog is every message), giving its events to `record`.
    static func started(_ broker: MosquittoBroker, _ record: Record) async throws -> (MQTTClient, MQTTOptions) {
        let options = MQTTOptions(port: broker.port, clientID: "fb-\(UUID().uuidString.prefix(8))", reconnectDelay: (min: 1, max: 2))
        let client = try MQTTClient(options: options, subscriptions: ["burst"], qos: .atMostOnce)
        try client.start { record.take($0) }
        #expect(await broker.waitForLog("Sending SUBACK to \(options.clientID)"))
        return (client, options)
    }

    /// Publishes `count` messages `0`…`count-1` on `burst`, then `end`, from one publisher: one
    /// connection keeps them in order (at QoS 0, a second publisher's `end` may overtake them).
    static func publish(_ count: Int, to broker: MosquittoBroker) async throws {
        let file = broker.directory + "/burst.txt"
        try Data(((0..<count).map(String.init) + ["end"]).joined(separator: "\n").appending("\n").utf8).write(to: URL(fileURLWithPath: file))
        let publisher = try ChildProcess("/usr/bin/mosquitto_pub", broker.clientArguments + ["-t", "burst", "-l"], standardInput: file)
        #expect(await publisher.waitForExit(timeout: .seconds(30)))
    }

    /// Waits until the record ends with the message `end` and the catch-up after it.
    static func ended(_ record: Record) async -> Bool {
        await eventually { record.all.suffix(2) == [.message("end"), .caughtUp] }
    }

    /// Every message in order, a catch-up only after a message, never two in a row.
    static func expectWellFormed(_ entries: [Record.Entry], messages count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let messages = entries.compactMap { if case .message(let text) = $0 { text } else { nil } }
        #expect(messages == (0..<count).map(String.init) + ["end"], sourceLocation: sourceLocation)
        #expect(entries.first != .caughtUp, sourceLocation: sourceLocation)
        #expect(!zip(entries, entries.dropFirst()).contains { $0 == .caughtUp && $1 == .caughtUp }, sourceLocation: sourceLocation)
    }

    @Test("a lone message is followed by one catch-up")
    func aLoneMessageIsCaughtUpAtOnce() async throws {
        let broker = try await MosquittoBroker()
        let record = Record(holdsFirst: false)
        let (client, _) = try await Self.started(broker, record)
        defer { client.stop() }
        for text in ["0", "1", "end"] {
            try await broker.publish(topic: "burst", payload: text)
            #expect(await eventually { record.all.last == .caughtUp && record.all.contains(.message(text)) }, "\(record.all)")
        }
        #expect(record.all == [.message("0"), .caughtUp, .message("1"), .caughtUp, .message("end"), .caughtUp])
    }

    @Test("a backlog read in one go is caught up once, not after each of its messages")
    func aBacklogIsCaughtUpOnce() async throws {
        let broker = try await MosquittoBroker()
        let record = Record(holdsFirst: true)
        let (client, _) = try await Self.started(broker, record)
        defer { client.stop() }
        try await Self.publish(500, to: broker)
        // The first message holds the client while the rest come in behind it.
        #expect(await eventually { record.all.count == 1 })
        record.release.signal()
        #expect(await Self.ended(record), "\(record.all.suffix(5))")
        let entries = record.all
        Self.expectWellFormed(entries, messages: 500)
        let catchUps = entries.filter { $0 == .caughtUp }.count
        #expect(catchUps < 501 / 2, "\(catchUps) catch-ups for 501 messages")
    }
}
