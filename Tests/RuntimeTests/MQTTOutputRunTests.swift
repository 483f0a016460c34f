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

/// `flowbridge run` with `output.mqtt` against a real mosquitto: the widgets' topics and Home
/// Assistant's discovery as a subscriber sees them, through Home Assistant starting, a broker
/// restart and a reload.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct MQTTOutputRunTests {
    /// The test home with a battery level, its pushes also on standard output (what the daemon
    /// computed), published on MQTT with Home Assistant discovery.
    static func config(port: Int, state: String, solar: String = "Solar", homeAssistant: Bool = true) -> String {
        """
        mqtt: {host: 127.0.0.1, port: \(port), client_id: flowbridge-test}
        state_file: \(state)
        output:
          stdout: true
          mqtt: {home_assistant: \(homeAssistant)}
        sources:
          solar: {topic: solar/ac/power, stale_after: 5m}
          grid: {topic: "shellypro3em-abc/status/em:0", json: total_act_power}
          battery: {topic: evcc/site/battery/power, invert: true}
          soc: {topic: evcc/site/battery/soc, unit: "%"}
        widgets:
          power:
            template: flow
            flow:
              inputs: [{name: \(solar), rate: solar, total: integrate}]
              storage: {name: Battery, rate: battery, level: soc}
              exchange: {name: Grid, rate: grid, total: import}
              output: {name: Home, rate: balance}
            policy: {min_interval: 0s, settle: 0s, rate_step: 1, rate_deadband: 0}
        """
    }

    /// The sensors of that config, by discovery topic.
    static func sensorTopics(solar: String = "solar") -> Set<String> {
        Set(["\(solar)_power", "\(solar)_energy", "home_power", "home_energy", "battery_power", "battery_charged", "battery_discharged",
             "battery_level", "grid_power", "grid_import", "grid_export", "lifetime_production", "lifetime_import", "lifetime_export",
             "lifetime_charge", "lifetime_discharge"]
            .map { "homeassistant/sensor/flowbridge/power_\($0)/config" })
    }

    static func daemon(_ broker: MosquittoBroker, folder: TemporaryFolder = TemporaryFolder(), solar: String = "Solar", arguments: [String] = []) throws -> RunTests.Daemon {
        try RunTests.Daemon(
            config: config(port: broker.port, state: folder.url.appendingPathComponent("state.json").path, solar: solar),
            folder: folder, arguments: arguments)
    }

    static func publishReadings(_ broker: MosquittoBroker) async throws {
        try await broker.publish(topic: "solar/ac/power", payload: "3200")
        try await broker.publish(topic: "evcc/site/battery/power", payload: "-800")
        try await broker.publish(topic: "evcc/site/battery/soc", payload: "55")
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":-1400}"#)
    }

    /// The retained messages on `filter` by topic (JSON; up to `count` of them), once they
    /// satisfy `condition`: what the broker holds only some time after the daemon logged that it
    /// published it. Bounded; what was there last otherwise.
    static func retainedMessages(
        _ broker: MosquittoBroker, _ filter: String, count: Int, until condition: ([String: JSONValue]) -> Bool
    ) async throws -> [String: JSONValue] {
        var last: [String: JSONValue] = [:]
        _ = try await eventually {
            let messages = try await broker.receive(topic: filter, count: count, timeout: 1)
            last = Dictionary(messages.filter(\.retained).map { ($0.topic, (try? JSONValue(parsing: $0.payload)) ?? .null) }, uniquingKeysWith: { $1 })
            return condition(last)
        }
        return last
    }

    /// The retained message on `topic`, once it satisfies `condition` (bounded).
    static func retained(_ broker: MosquittoBroker, _ topic: String, until condition: (JSONValue?) -> Bool) async throws -> JSONValue? {
        try await retainedMessages(broker, topic, count: 1) { condition($0[topic]) }[topic]
    }

    /// The retained discovery configs, by topic, once they are those of `topics` (bounded).
    static func discoveryConfigs(_ broker: MosquittoBroker, once topics: Set<String> = sensorTopics()) async throws -> [String: JSONValue] {
        try await retainedMessages(broker, "homeassistant/#", count: max(1, topics.count)) { Set($0.keys) == topics }
    }

    @Test func theContentThePatchesAndTheDiscoveryConfigsArriveAsDocumented() async throws {
        let broker = try await MosquittoBroker()
        let live = try await broker.subscriber(topic: "flowbridge/#", count: 10_000, timeout: 30)
        let daemon = try Self.daemon(broker)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(daemon.text.contains("pushes go to stdout, mqtt (flowbridge/<widget>/content, Home Assistant discovery)"), "\(daemon.text)")
        try await Self.publishReadings(broker)
        #expect(await daemon.waitFor(#""rate":1000"#), "\(daemon.text)")
        let computed = PushRunTests.computed(daemon)

        // The whole content, retained: what the daemon computed.
        #expect(try await Self.retained(broker, "flowbridge/power/content") { $0 == computed } == computed)
        // The sensors' values, retained, for Home Assistant's value_templates.
        // The energy sensors once the accounts that go out with the push are in (Wh: the few
        // milliseconds between the readings count nothing yet).
        let values = try await Self.retained(broker, "flowbridge/power/sensors") { $0?["home_power"] == 1000 && $0?["grid_export"] != .null }
        // The derived home's day starts again by its last_reset: the local day's start.
        var counted = values?.objectValue ?? [:]
        #expect(counted.removeValue(forKey: "last_reset")?.stringValue.flatMap(RFC3339.parse) != nil, "\(values.map(\.description) ?? "")")
        #expect(JSONValue.object(counted) == [
            "solar_power": 3200, "solar_energy": 0, "home_power": 1000, "home_energy": 0, "battery_power": 800, "battery_charged": 0,
            "battery_discharged": 0, "battery_level": 55, "grid_power": -1400, "grid_import": 0, "grid_export": 0,
            "lifetime_production": 0, "lifetime_import": 0, "lifetime_export": 0, "lifetime_charge": 0, "lifetime_discharge": 0,
        ])
        // Every sensor's discovery config, retained, with what Home Assistant's sensor schema requires.
        let configs = try await Self.discoveryConfigs(broker)
        #expect(Set(configs.keys) == Self.sensorTopics())
        for (topic, config) in configs {
            let id = "flowbridge_" + topic.split(separator: "/")[3]
            #expect(config["unique_id"] == .string(id) && config["object_id"] == .string(id), "\(topic)")
            #expect(config["name"]?.stringValue?.isEmpty == false)
            #expect(config["state_topic"] == "flowbridge/power/sensors")
            #expect(config["availability_topic"] == "flowbridge/status")
            #expect(config["device"]?["identifiers"] == ["flowbridge"] && config["device"]?["name"] == "flowbridge")
            let key = String(topic.split(separator: "/")[3].dropFirst("power_".count))
            #expect(config["value_template"] == .string("{{ value_json['\(key)'] }}"))
            #expect(values?[key] != nil, "\(key) is not in the sensors' values")
        }
        #expect(configs["homeassistant/sensor/flowbridge/power_grid_import/config"]?["device_class"] == "energy")
        #expect(configs["homeassistant/sensor/flowbridge/power_grid_import/config"]?["state_class"] == "total_increasing")
        #expect(configs["homeassistant/sensor/flowbridge/power_grid_import/config"]?["unit_of_measurement"] == "kWh")
        #expect(configs["homeassistant/sensor/flowbridge/power_battery_level/config"]?["device_class"] == "battery")

        await daemon.stop()
        // Live: online first, the patches as standard output printed them, offline last.
        let seen = await live.messages { $0.last?.topic == "flowbridge/status" && $0.last?.text == "offline" }
        #expect(seen.first?.topic == "flowbridge/status" && seen.first?.text == "online")
        #expect(seen.last?.topic == "flowbridge/status" && seen.last?.text == "offline", "\(seen.map(\.topic))")
        let patches = seen.filter { $0.topic == "flowbridge/power/patch" }.compactMap { try? JSONValue(parsing: $0.payload) }
        #expect(patches == daemon.pushes.compactMap { $0["patch"]?["content"] })
        let contents = seen.filter { $0.topic == "flowbridge/power/content" }
        #expect(contents.count == patches.count)
    }

    /// Home Assistant's birth message makes the daemon announce every sensor again; the message is
    /// the sink's, not a reading.
    @Test func homeAssistantsOnlineMakesItAnnounceAgain() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Self.daemon(broker)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(Set(try await Self.discoveryConfigs(broker).keys) == Self.sensorTopics())
        let listener = try await broker.subscriber(topic: "homeassistant/sensor/#", count: 32, timeout: 10)
        try await broker.publish(topic: "homeassistant/status", payload: "online")
        let seen = await listener.messages(timeout: .seconds(12))
        #expect(Set(seen.filter(\.retained).map(\.topic)) == Self.sensorTopics())
        // Published again, live, every one.
        #expect(Set(seen.filter { !$0.retained }.map(\.topic)) == Self.sensorTopics(), "\(daemon.text)")
        // Logged once the sink has published them all, which may be a moment after they arrived.
        #expect(await daemon.waitFor("mqtt: Home Assistant is online: announced its 16 sensors again"), "\(daemon.text)")
        #expect(!daemon.text.contains("homeassistant/status"), "\(daemon.text)")
        await daemon.stop()
    }

    /// 20,000 `online` on Home Assistant's status, which anyone may publish: re-announcing is
    /// coalesced, at most once a second. The discovery configs are counted on the broker by a
    /// subscriber; the daemon's resident memory before and after is printed for the record. (A
    /// flood of 100,000 behaves alike; it is not the suite's, whose other tests share the machine.)
    @Test func anOnlineFloodIsAtMostOneReannounceASecond() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Self.daemon(broker)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(Set(try await Self.discoveryConfigs(broker).keys) == Self.sensorTopics())
        let before = try #require(daemon.residentKilobytes)
        let listener = try await broker.subscriber(topic: "homeassistant/sensor/+/+/config", count: 10_000_000, timeout: 3600)
        let started = ContinuousClock.now
        let flood = try runProgram(
            try MosquittoBroker.executable("mosquitto_pub"), broker.clientArguments + ["-t", "homeassistant/status", "-l"],
            stdin: String(repeating: "online\n", count: 20_000))
        #expect(flood.status == 0, "\(flood.err)")
        // Messages are taken in order: once a reading after the flood is pushed, the daemon has
        // taken every `online` the broker delivered. (Sent again until then: a broker drops what
        // overflows a slow client's queue, the reading too.)
        var sent = 0
        #expect(await eventually {
            if sent < 100 { try? await broker.publish(topic: "solar/ac/power", payload: "1234"); sent += 1 }
            return daemon.text.contains(#""rate":1234"#)
        }, "\(daemon.text)")
        let after = try #require(daemon.residentKilobytes)
        await daemon.stop()
        let seconds = Int(((ContinuousClock.now - started) / .seconds(1)).rounded(.up))
        let announced = await listener.messages(timeout: .seconds(1)).filter { !$0.retained }.count
        print("online flood: VmRSS \(before) kB before, \(after) kB after 20,000 online; \(announced) discovery configs in \(seconds) s")
        #expect(announced <= Self.sensorTopics().count * (seconds + 1), "\(announced) configs in \(seconds) s")
    }

    /// A broker that restarts without persistence has lost every retained message: the reconnect
    /// publishes the daemon's current document and the discovery configs again.
    @Test func aBrokerRestartEndsWithTheRetainedContentEqualToTheDaemonsDocument() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Self.daemon(broker)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        try await Self.publishReadings(broker)
        #expect(await daemon.waitFor(#""rate":1000"#), "\(daemon.text)")
        let computed = PushRunTests.computed(daemon)
        #expect(try await Self.retained(broker, "flowbridge/power/content") { $0 == computed } == computed)

        try await broker.restart()
        #expect(await daemon.waitFor("subscribed to", count: 2, timeout: .seconds(20)), "\(daemon.text)")
        #expect(try await Self.retained(broker, "flowbridge/power/content") { $0 != nil } == PushRunTests.computed(daemon))
        #expect(Set(try await Self.discoveryConfigs(broker).keys) == Self.sensorTopics())
        // And it goes on from there.
        try await broker.publish(topic: "shellypro3em-abc/status/em:0", payload: #"{"total_act_power":-900}"#)
        #expect(await daemon.waitFor(#""rate":-900"#), "\(daemon.text)")
        let now = PushRunTests.computed(daemon)
        #expect(try await Self.retained(broker, "flowbridge/power/content") { $0 == now } == now)
        await daemon.stop()
    }

    /// A node renamed by a reload is a sensor gone: its discovery configs are removed (an empty
    /// retained message), and the new name's announced. Discovery turned off while the daemon was
    /// stopped: the restarted daemon removes every config it published, which the state recalls.
    @Test func sensorsTheConfigNoLongerHasAreRemoved() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let daemon = try Self.daemon(broker, folder: folder)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(Set(try await Self.discoveryConfigs(broker).keys) == Self.sensorTopics())

        let state = folder.url.appendingPathComponent("state.json").path
        _ = try folder.write("config.yaml", Self.config(port: broker.port, state: state, solar: "Roof"))
        daemon.process.send(SIGHUP)
        #expect(await daemon.waitFor("mqtt: removed 2 retained topics the reloaded config no longer publishes"), "\(daemon.text)")
        #expect(Set(try await Self.discoveryConfigs(broker, once: Self.sensorTopics(solar: "roof")).keys) == Self.sensorTopics(solar: "roof"))
        await daemon.stop()

        let restarted = try RunTests.Daemon(
            config: Self.config(port: broker.port, state: state, solar: "Roof", homeAssistant: false), folder: folder, name: "restarted")
        #expect(await restarted.waitFor("mqtt: removed 16 retained topics the config no longer publishes"), "\(restarted.text)")
        // Logged once handed to the client: the broker forgets them a moment later.
        #expect(try await Self.retainedMessages(broker, "homeassistant/#", count: 1) { $0.isEmpty }.isEmpty)
        await restarted.stop()
    }

    /// One sink failing stops no other: the widget API away, the broker still gets every document.
    @Test func anOutageOfTheWidgetAPIDoesNotHoldUpMQTT() async throws {
        let broker = try await MosquittoBroker()
        let service = try await WidgetStandIn()
        let folder = TemporaryFolder()
        _ = try folder.write("widget-token", service.token)
        let config = Self.config(port: broker.port, state: folder.url.appendingPathComponent("state.json").path)
            + "\n    push: {url: \"\(service.url)\", token_file: widget-token, timeout: 2s, retry: {min: 1s, max: 5s}}\n"
        try await service.outage(seconds: 30)
        let daemon = try PushRunTests.daemon(config, credentials: folder, folder: folder)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        try await Self.publishReadings(broker)
        #expect(await daemon.waitFor(#""rate":1000"#), "\(daemon.text)")
        #expect(await daemon.waitFor("push:power: the full replace did not go through"), "\(daemon.text)")
        let computed = PushRunTests.computed(daemon)
        #expect(try await Self.retained(broker, "flowbridge/power/content") { $0 == computed } == computed)
        await daemon.stop()
    }

    @Test func aDryRunPublishesNothing() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Self.daemon(broker, arguments: ["--dry-run"])
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(daemon.text.contains("dry run: pushes go to standard output; output.mqtt gets nothing"), "\(daemon.text)")
        try await Self.publishReadings(broker)
        #expect(await daemon.waitFor(#""rate":1000"#), "\(daemon.text)")
        try await broker.publish(topic: "homeassistant/status", payload: "online")
        #expect(try await broker.receive(topic: "flowbridge/#", count: 1, timeout: 1).isEmpty)
        #expect(try await broker.receive(topic: "homeassistant/sensor/#", count: 1, timeout: 1).isEmpty)
        await daemon.stop()
    }
}
