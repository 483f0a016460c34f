@testable import Delivery
import FlowCore
import FoundationEssentials
import Testing

/// What the MQTT sink publishes when: pushes, connects, Home Assistant starting, reloads, and the
/// retained topics a changed config leaves behind.
@Suite struct MQTTPublicationTests {
    static func flow(inputs: [String] = ["Solar"], widgets: [String] = ["power"]) -> FlowConfig {
        FlowConfig(sources: [], widgets: widgets.map { name in
            FlowWidgetConfig(
                name: name, inputs: inputs.map { NodeConfig(name: $0, rate: .sum([RateTerm(source: "s")]), total: .integrate) },
                exchange: NodeConfig(name: "Grid", rate: .sum([RateTerm(source: "g")])))
        })
    }

    static func document(grid: Double, solar: Double = 3200) -> WidgetContent {
        .flow(FlowContent(unit: "W", inputs: [FlowNode(name: "Solar", rate: solar, total: 1.5)], exchange: FlowNode(name: "Grid", rate: grid)))
    }

    static func push(_ document: WidgetContent, after previous: WidgetContent? = nil, widget: String = "power") -> OutgoingPush {
        let patch = previous.flatMap { MergePatch.diff(from: $0.json, to: document.json) } ?? document.json
        return OutgoingPush(widget: widget, at: Date(timeIntervalSince1970: 0), contentPatch: ContentPatch(patch), document: document, held: .none, isFullContent: previous == nil)
    }

    /// Publishes everything (as a live connection does) and returns it.
    static func publish(_ messages: [MQTTPublication.Message], into publication: inout MQTTPublication) -> [MQTTPublication.Message] {
        for message in messages { publication.published(message) }
        return messages
    }

    static func json(_ message: MQTTPublication.Message?) -> JSONValue? {
        message.flatMap { try? JSONValue(parsing: $0.payload) }
    }

    @Test func aPushIsTheContentRetainedAndThePatch() {
        var publication = MQTTPublication(settings: MQTTOutputSettings(), flow: Self.flow(), software: "")
        let first = Self.document(grid: -1400)
        let second = Self.document(grid: -900)
        _ = publication.push(Self.push(first))
        let messages = publication.push(Self.push(second, after: first))
        #expect(messages.map(\.topic) == ["flowbridge/power/content", "flowbridge/power/patch"])
        #expect(Self.json(messages.first) == second.json)
        #expect(messages[0].retain && messages[0].qos == .atLeastOnce)
        #expect(Self.json(messages.last) == ["flow": ["exchange": ["rate": -900]]])
        #expect(!messages[1].retain && messages[1].qos == .atMostOnce)
    }

    @Test func withoutRetainTheContentIsNotRetained() {
        var publication = MQTTPublication(settings: MQTTOutputSettings(retain: false), flow: Self.flow(), software: "")
        let messages = publication.push(Self.push(Self.document(grid: 5)))
        #expect(messages.allSatisfy { !$0.retain })
        #expect(publication.wantedTopics.isEmpty)
    }

    /// Pushes while the broker was away were lost: the connect publishes each widget's newest
    /// document, retained, and announces the sensors again (the broker may have lost them too).
    @Test func aConnectPublishesTheCurrentTruth() {
        let settings = MQTTOutputSettings(homeAssistant: .init())
        var publication = MQTTPublication(settings: settings, flow: Self.flow(widgets: ["power", "garage"]), software: "")
        var previous: WidgetContent?
        for grid in [-1400.0, -900, 300] {  // not published: the connection was down
            let document = Self.document(grid: grid)
            _ = publication.push(Self.push(document, after: previous))
            previous = document
        }
        let messages = publication.connected()
        let configs = messages.filter { $0.topic.hasPrefix("homeassistant/") }
        // Per widget: solar's power and production, the grid's power, import and export, and the
        // lifetime production, import and export.
        #expect(configs.count == 16 && configs.allSatisfy { $0.retain && $0.qos == .atLeastOnce })
        let rest = messages.filter { !$0.topic.hasPrefix("homeassistant/") }
        // The garage widget has no document yet: nothing of it.
        #expect(rest.map(\.topic) == ["flowbridge/power/content", "flowbridge/power/sensors"])
        #expect(Self.json(rest.first) == Self.document(grid: 300).json)
        // The energy sensors read the accounts, which no push of this test carried.
        #expect(Self.json(rest.last) == [
            "solar_power": 3200, "solar_energy": nil, "grid_power": 300, "grid_import": nil, "grid_export": nil, "lifetime_production": nil,
            "lifetime_import": nil, "lifetime_export": nil,
        ])
        #expect(rest.allSatisfy { $0.retain })
    }

    @Test func theSensorsArePublishedWhenTheirValuesChange() {
        var publication = MQTTPublication(settings: MQTTOutputSettings(homeAssistant: .init()), flow: Self.flow(), software: "")
        let first = Self.document(grid: 100)
        #expect(publication.push(Self.push(first)).map(\.topic).contains("flowbridge/power/sensors"))
        // Only the subtitle changes: the content and the patch go out, the sensors stay.
        var subtitled = FlowContent(unit: "W", inputs: [FlowNode(name: "Solar", rate: 3200, total: 1.5)], exchange: FlowNode(name: "Grid", rate: 100))
        subtitled.shared.subtitle = "Grid: no reading since 14:02"
        #expect(publication.push(Self.push(.flow(subtitled), after: first)).map(\.topic) == ["flowbridge/power/content", "flowbridge/power/patch"])
        // Home Assistant's start gets them whatever changed.
        let online = publication.homeAssistantOnline()
        #expect(online.filter { $0.topic.hasSuffix("/config") }.count == 8)
        #expect(online.last?.topic == "flowbridge/power/sensors")
    }

    /// A reload that renames a node: the old sensors' discovery configs are removed with an empty
    /// retained message (before anything else), the new ones announced.
    @Test func aReloadThatRenamesANodeRemovesItsSensors() {
        var publication = MQTTPublication(settings: MQTTOutputSettings(homeAssistant: .init()), flow: Self.flow(), software: "")
        _ = Self.publish(publication.connected(), into: &publication)
        _ = Self.publish(publication.push(Self.push(Self.document(grid: 1))), into: &publication)
        #expect(publication.retainedTopics.contains("homeassistant/sensor/flowbridge/power_solar_power/config"))

        let messages = Self.publish(publication.reconfigure(Self.flow(inputs: ["Roof"])), into: &publication)
        let removals = messages.filter(\.isRemoval).map(\.topic)
        #expect(removals == [
            "homeassistant/sensor/flowbridge/power_solar_energy/config", "homeassistant/sensor/flowbridge/power_solar_power/config",
        ])
        #expect(messages.prefix(2).allSatisfy { $0.isRemoval })
        #expect(messages.contains { $0.topic == "homeassistant/sensor/flowbridge/power_roof_power/config" && !$0.payload.isEmpty })
        #expect(!publication.retainedTopics.contains("homeassistant/sensor/flowbridge/power_solar_power/config"))
        #expect(publication.retainedTopics == publication.wantedTopics)
    }

    /// A widget removed by a reload: its content and sensors' topics go too, and nothing of it is
    /// published at the next connect.
    @Test func aRemovedWidgetsRetainedTopicsGo() {
        var publication = MQTTPublication(
            settings: MQTTOutputSettings(homeAssistant: .init()), flow: Self.flow(widgets: ["power", "garage"]), software: "")
        _ = Self.publish(publication.push(Self.push(Self.document(grid: 1))), into: &publication)
        _ = Self.publish(publication.push(Self.push(Self.document(grid: 2), widget: "garage")), into: &publication)
        let removals = publication.reconfigure(Self.flow()).filter(\.isRemoval).map(\.topic)
        #expect(removals == ["flowbridge/garage/content", "flowbridge/garage/sensors"])
        #expect(!publication.connected().contains { $0.topic.hasPrefix("flowbridge/garage/") && !$0.payload.isEmpty })
    }

    /// An earlier run's retained topics come back with the state: what the config no longer
    /// publishes (a node renamed while the daemon was stopped, discovery turned off, another
    /// prefix) is removed at the first connect. A removal that did not go out is tried again.
    @Test func anEarlierRunsTopicsTheConfigDroppedGoAtTheConnect() {
        var earlier = MQTTPublication(settings: MQTTOutputSettings(homeAssistant: .init()), flow: Self.flow(), software: "")
        _ = Self.publish(earlier.connected(), into: &earlier)
        _ = Self.publish(earlier.push(Self.push(Self.document(grid: 1))), into: &earlier)

        var later = MQTTPublication(settings: MQTTOutputSettings(prefix: "home"), flow: Self.flow(), software: "")
        later.restore(earlier.saved)
        let first = later.connected()
        #expect(Set(first.filter(\.isRemoval).map(\.topic)) == earlier.retainedTopics)
        // The connection dropped before the removals went out: the next connect has them again.
        let again = Self.publish(later.connected(), into: &later)
        #expect(again.filter(\.isRemoval).count == earlier.retainedTopics.count)
        #expect(later.connected().filter(\.isRemoval).isEmpty)
        #expect(later.saved == ["retained": []])
    }
}
