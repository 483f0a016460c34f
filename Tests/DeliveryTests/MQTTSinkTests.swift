import Delivery
import Dispatch
import FlowCore
import FoundationEssentials
import Mosquitto
import Synchronization
import TestSupport
import Testing

/// The MQTT sink around its connection: `take` never waits for it, nothing queues up while it is
/// down, a connect publishes the current truth, and Home Assistant's status is the sink's alone.
/// (With a real broker and the real daemon: `MQTTOutputRunTests`.)
@Suite(.timeLimit(.minutes(1)), .ownThread) struct MQTTSinkTests {
    /// A connection that refuses publishes while down (as libmosquitto does) and can be held up
    /// inside a publish, as a connection whose lock the network thread holds.
    final class Connection: MQTTPublishing {
        struct Published: Sendable, Equatable {
            var topic: String
            var payload: JSONValue?
            var retain: Bool
        }

        struct Refused: Error {}

        let up = Atomic(false)
        let holding = Atomic(false)
        let release = DispatchSemaphore(value: 0)
        let published = Mutex<[Published]>([])
        /// Publishes tried, refused ones included.
        let attempts = Atomic(0)

        var isConnected: Bool { up.load(ordering: .relaxed) }

        func publish(topic: String, payload: [UInt8], qos: QoS, retain: Bool) throws {
            if holding.load(ordering: .relaxed) { release.wait() }
            attempts.add(1, ordering: .relaxed)
            guard isConnected else { throw Refused() }
            published.withLock { $0.append(Published(topic: topic, payload: try? JSONValue(parsing: payload), retain: retain)) }
        }

        /// Waits (bounded) until what was published satisfies `condition`; what was published then.
        func wait(until condition: ([Published]) -> Bool) async -> [Published] {
            _ = await eventually { condition(published.withLock { $0 }) }
            return published.withLock { $0 }
        }
    }

    static let flow = FlowConfig(sources: [], widgets: [
        FlowWidgetConfig(name: "power", exchange: NodeConfig(name: "Grid", rate: .sum([RateTerm(source: "g")]))),
    ])

    static func sink(_ connection: Connection, homeAssistant: Bool = false) throws -> MQTTSink {
        try MQTTSink(
            settings: MQTTOutputSettings(homeAssistant: homeAssistant ? .init() : nil), flow: flow, software: "test", connection: connection,
            log: { _ in })
    }

    @Test func whileTheBrokerIsAwayNothingQueuesAndTheConnectPublishesTheTruth() async throws {
        let connection = Connection()
        let sink = try Self.sink(connection)
        let pushes = OutboxTests.pushes([-1400, -900, -400, 300])
        for push in pushes { sink.take(push) }
        // Each push's content and patch are tried, and refused, before the connection comes up.
        _ = await eventually { connection.attempts.load(ordering: .relaxed) >= 2 * pushes.count }
        #expect(connection.attempts.load(ordering: .relaxed) == 2 * pushes.count)
        #expect(connection.published.withLock { $0.isEmpty })

        connection.up.store(true, ordering: .relaxed)
        sink.connected()
        let seen = await connection.wait { $0.contains { $0.topic == "flowbridge/power/content" } }
        #expect(seen == [Connection.Published(topic: "flowbridge/power/content", payload: OutboxTests.document(300).json, retain: true)])
        sink.stop(timeout: .seconds(1))
    }

    /// A connection that holds a publish up holds up the sink's thread, never `take`: the engine
    /// goes on, and once the connection lets go the newest document is what the broker gets.
    @Test func takeNeverWaitsForTheConnection() async throws {
        let connection = Connection()
        connection.up.store(true, ordering: .relaxed)
        connection.holding.store(true, ordering: .relaxed)
        let sink = try Self.sink(connection)
        let pushes = OutboxTests.pushes((0..<2000).map { Double($0) })
        for push in pushes { sink.take(push) }  // returns: a blocking take would hang here
        connection.holding.store(false, ordering: .relaxed)
        connection.release.signal()
        let last = OutboxTests.document(1999).json
        // Each push's content goes out before its patch: wait for both.
        func patched(_ seen: [Connection.Published]) -> JSONValue {
            seen.filter { $0.topic == "flowbridge/power/patch" }.reduce(JSONValue.null) { MergePatch.apply($1.payload ?? .null, to: $0) }
        }
        let seen = await connection.wait { $0.last { $0.topic == "flowbridge/power/content" }?.payload == last && patched($0) == last }
        #expect(seen.last { $0.topic == "flowbridge/power/content" }?.payload == last)
        // The patches published add up to the newest document.
        #expect(patched(seen) == last)
        sink.stop(timeout: .seconds(1))
    }

    @Test func homeAssistantsStatusIsTheSinks() async throws {
        let connection = Connection()
        connection.up.store(true, ordering: .relaxed)
        let sink = try Self.sink(connection, homeAssistant: true)
        #expect(sink.settings.subscriptions == ["homeassistant/status"])
        #expect(!sink.receive(topic: "meter/power", payload: Array("online".utf8), retained: false))
        // The broker's retained copy is no start, and offline asks for nothing.
        #expect(sink.receive(topic: "homeassistant/status", payload: Array("online".utf8), retained: true))
        #expect(sink.receive(topic: "homeassistant/status", payload: Array("offline".utf8), retained: false))
        #expect(sink.receive(topic: "homeassistant/status", payload: Array("online".utf8), retained: false))
        // The grid's power, its import and export accounts, and the widget's lifetime import and export.
        let seen = await connection.wait { $0.count >= 5 }
        #expect(seen.map(\.topic) == [
            "homeassistant/sensor/flowbridge/power_grid_power/config", "homeassistant/sensor/flowbridge/power_grid_import/config",
            "homeassistant/sensor/flowbridge/power_grid_export/config", "homeassistant/sensor/flowbridge/power_lifetime_import/config",
            "homeassistant/sensor/flowbridge/power_lifetime_export/config",
        ])
        #expect(seen.first?.payload?["unique_id"] == "flowbridge_power_grid_power")
        // Without home_assistant the sink takes no message.
        #expect(try !Self.sink(connection).receive(topic: "homeassistant/status", payload: Array("online".utf8), retained: false))
        sink.stop(timeout: .seconds(1))
    }

    /// The accounts are worked out for this sink only when it publishes them: the energy and
    /// money sensors of Home Assistant's discovery.
    @Test(arguments: [false, true])
    func takesAccountsOnlyForHomeAssistantsSensors(homeAssistant: Bool) throws {
        let sink = try Self.sink(Connection(), homeAssistant: homeAssistant)
        #expect(sink.takesAccounts == homeAssistant)
        sink.stop(timeout: .seconds(1))
    }
}
