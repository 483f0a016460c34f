import Delivery
import FlowCore
import Testing

/// The Home Assistant sensors of a config: which there are, what their discovery configs say (held
/// against Home Assistant's own MQTT sensor schema), and the values they read from a document.
@Suite struct HomeAssistantDiscoveryTests {
    /// A home as the README shows it: solar with a daily counter, a battery with a level, the grid
    /// counting import, the derived home, and a battery bar beside it.
    static let flow: FlowConfig = {
        var config = FlowConfig(sources: [], widgets: [
            FlowWidgetConfig(
                name: "power", shared: SharedContent(label: "Power"),
                inputs: [NodeConfig(name: "Solar", rate: .sum([RateTerm(source: "solar")]), total: .daily(source: "yield"))],
                output: NodeConfig(name: "Home", rate: .balance, total: .integrate),
                storage: NodeConfig(name: "Battery", rate: .sum([RateTerm(source: "battery")]), level: "soc"),
                exchange: NodeConfig(name: "Grid", rate: .sum([RateTerm(source: "grid")]), total: .imported)),
        ])
        config.progressWidgets = [
            ProgressWidgetConfig(name: "autarky", shared: SharedContent(label: "Self-sufficiency"), measure: .selfSufficiency),
        ]
        return config
    }()

    static let discovery = HomeAssistantDiscovery(
        flow: flow, settings: MQTTOutputSettings(homeAssistant: .init()), homeAssistant: .init(), software: "1.2.3")

    /// The keys Home Assistant 2024.3's MQTT sensor takes in a discovery config (full names):
    /// `homeassistant/components/mqtt/sensor.py` (`_PLATFORM_SCHEMA_BASE`), `config.py`
    /// (`MQTT_RO_SCHEMA`: `state_topic` required) and `mixins.py` (`MQTT_ENTITY_COMMON_SCHEMA`,
    /// `MQTT_AVAILABILITY_SCHEMA`). Its discovery schema drops other keys without a word, so a
    /// misspelt key would be lost silently: hence this list.
    static let sensorSchemaKeys: Set<String> = [
        "qos", "encoding", "state_topic", "value_template",
        "device_class", "expire_after", "force_update", "last_reset_value_template", "name", "suggested_display_precision",
        "state_class", "unit_of_measurement",
        "availability_topic", "availability_template", "payload_available", "payload_not_available", "availability_mode",
        "availability", "device", "origin", "enabled_by_default", "entity_category", "icon", "json_attributes_topic",
        "json_attributes_template", "object_id", "unique_id",
        // 2025.10: the entity id to make, which replaces `object_id` (ignored from 2026.4 on).
        "default_entity_id",
    ]
    /// `MQTT_ENTITY_DEVICE_INFO_SCHEMA` (mixins.py): at least one of identifiers and connections.
    static let deviceSchemaKeys: Set<String> = [
        "identifiers", "connections", "manufacturer", "model", "name", "hw_version", "serial_number", "sw_version",
        "via_device", "suggested_area", "configuration_url",
    ]
    /// `MQTT_ORIGIN_INFO_SCHEMA` (discovery.py): `name` required.
    static let originSchemaKeys: Set<String> = ["name", "sw_version", "support_url"]

    @Test func theSensorsOfAHome() {
        let table = Self.discovery.sensors.map { sensor in
            [Self.discovery.uniqueID(sensor), sensor.name, sensor.quantity.unit, sensor.quantity.deviceClass ?? "-", sensor.quantity.stateClass]
        }
        #expect(table == [
            ["flowbridge_power_solar_power", "Solar power", "W", "power", "measurement"],
            ["flowbridge_power_solar_energy", "Solar production today", "kWh", "energy", "total_increasing"],
            ["flowbridge_power_home_power", "Home power", "W", "power", "measurement"],
            // The derived home's day steps back when meters report at different moments: `total`.
            ["flowbridge_power_home_energy", "Home consumption today", "kWh", "energy", "total"],
            ["flowbridge_power_battery_power", "Battery power", "W", "power", "measurement"],
            // Every account is a sensor, with a total or without.
            ["flowbridge_power_battery_charged", "Battery charged today", "kWh", "energy", "total_increasing"],
            ["flowbridge_power_battery_discharged", "Battery discharged today", "kWh", "energy", "total_increasing"],
            ["flowbridge_power_battery_level", "Battery level", "%", "battery", "measurement"],
            ["flowbridge_power_grid_power", "Grid power", "W", "power", "measurement"],
            ["flowbridge_power_grid_import", "Grid import today", "kWh", "energy", "total_increasing"],
            ["flowbridge_power_grid_export", "Grid export today", "kWh", "energy", "total_increasing"],
            ["flowbridge_power_lifetime_production", "Lifetime production", "kWh", "energy", "total_increasing"],
            ["flowbridge_power_lifetime_import", "Lifetime import", "kWh", "energy", "total_increasing"],
            ["flowbridge_power_lifetime_export", "Lifetime export", "kWh", "energy", "total_increasing"],
            ["flowbridge_power_lifetime_charge", "Lifetime charged", "kWh", "energy", "total_increasing"],
            ["flowbridge_power_lifetime_discharge", "Lifetime discharged", "kWh", "energy", "total_increasing"],
            ["flowbridge_autarky_percent", "Self-sufficiency", "%", "-", "measurement"],
        ])
        #expect(Self.discovery.conflicts.isEmpty)
    }

    @Test func everyConfigCarriesWhatHomeAssistantsSensorSchemaRequires() throws {
        for sensor in Self.discovery.sensors {
            let config = try #require(Self.discovery.config(sensor).objectValue)
            let id = Self.discovery.uniqueID(sensor)
            #expect(Set(config.keys).isSubset(of: Self.sensorSchemaKeys), "\(id): \(Set(config.keys).subtracting(Self.sensorSchemaKeys))")
            for required in ["name", "unique_id", "state_topic", "device", "availability_topic", "unit_of_measurement", "state_class"] {
                #expect(config[required] != nil, "\(id) lacks \(required)")
            }
            #expect(config["unique_id"] == .string(id))
            #expect(config["object_id"] == .string(id))
            #expect(config["default_entity_id"] == .string("sensor.\(id)"))
            #expect(config["state_topic"] == .string("flowbridge/\(sensor.widget)/sensors"))
            #expect(config["value_template"] == .string("{{ value_json['\(sensor.key)'] }}"))
            #expect(config["availability_topic"] == "flowbridge/status")
            #expect(config["payload_available"] == "online" && config["payload_not_available"] == "offline")
            #expect(config["device_class"] == sensor.quantity.deviceClass.map(JSONValue.string))
            let device = try #require(config["device"]?.objectValue)
            #expect(Set(device.keys).isSubset(of: Self.deviceSchemaKeys))
            #expect(device["identifiers"] == ["flowbridge"])
            #expect(device["name"] == "flowbridge")
            #expect(device["sw_version"] == "1.2.3")
            let origin = try #require(config["origin"]?.objectValue)
            #expect(Set(origin.keys).isSubset(of: Self.originSchemaKeys) && origin["name"] == "flowbridge")
            // Home Assistant warns about an entity name that repeats the device's.
            #expect(!sensor.name.lowercased().hasPrefix("flowbridge"))
            // The discovery topic as Home Assistant matches it: <component>/<node_id>/<object_id>/config.
            #expect(Self.discovery.configTopic(sensor) == "homeassistant/sensor/flowbridge/\(sensor.widget)_\(sensor.key)/config")
        }
    }

    /// The values of a document: a node the document lacks (no reading yet, a cleared slot) is
    /// null, which Home Assistant shows as unknown, never as 0. The energy sensors read the
    /// engine's accounts, not the document's rounded totals: without accounts they are unknown.
    @Test func valuesComeFromTheDocumentAndWhatItLacksIsNull() throws {
        let document = WidgetContent.flow(FlowContent(
            inputs: [FlowNode(name: "Solar", rate: 3200, total: 12.4)],
            output: FlowNode(name: "Home", rate: 1000, total: 9.8),
            storage: FlowNode(name: "Battery", rate: 800, level: 76)))
        let values = try #require(Self.discovery.values(widget: "power", document: document))
        #expect(values == [
            "solar_power": 3200, "solar_energy": nil, "home_power": 1000, "home_energy": nil, "battery_power": 800,
            "battery_charged": nil, "battery_discharged": nil, "battery_level": 76, "grid_power": nil, "grid_import": nil,
            "grid_export": nil, "lifetime_production": nil, "lifetime_import": nil, "lifetime_export": nil,
            "lifetime_charge": nil, "lifetime_discharge": nil, "last_reset": nil,
        ])
        let bar = WidgetContent.progress(ProgressContent(value: 0.57))
        #expect(Self.discovery.values(widget: "autarky", document: bar) == ["percent": 57])
        #expect(Self.discovery.values(widget: "elsewhere", document: bar) == nil)
    }

    /// A document leaves out an input with nothing to show yet, and the inputs after it move up:
    /// the name says which is which; without a name to tell, the value is unknown, never another's.
    @Test func anInputIsFoundByItsNameWhenAnEarlierOneIsMissing() throws {
        func flow(_ names: [String?]) -> FlowConfig {
            FlowConfig(sources: [], widgets: [
                FlowWidgetConfig(name: "power", inputs: names.map { NodeConfig(name: $0, rate: .sum([RateTerm(source: "s")])) }),
            ])
        }
        let document = WidgetContent.flow(FlowContent(inputs: [FlowNode(name: "West", rate: 700)]))
        let named = HomeAssistantDiscovery(flow: flow(["East", "West"]), settings: .init(), homeAssistant: .init(), software: "")
        #expect(named.values(widget: "power", document: document)
            == ["east_power": nil, "east_energy": nil, "west_power": 700, "west_energy": nil, "lifetime_production": nil])
        let unnamed = HomeAssistantDiscovery(flow: flow([nil, nil]), settings: .init(), homeAssistant: .init(), software: "")
        #expect(unnamed.values(widget: "power", document: .flow(FlowContent(inputs: [FlowNode(rate: 700)])))
            == ["input_1_power": nil, "input_1_energy": nil, "input_2_power": nil, "input_2_energy": nil, "lifetime_production": nil])
        #expect(unnamed.sensors.map(\.name) == ["Input 1 power", "Input 1 production today", "Input 2 power", "Input 2 production today", "Lifetime production"])
    }

    @Test(arguments: [
        ("Solar", "solar"), ("Solar Süd", "solar_s_d"), ("1st floor", "1st_floor"), ("  Grid--in ", "grid_in"), ("☀️", ""),
        ("flowbridge/home", "flowbridge_home"),
    ])
    func idsAreLowerCaseLettersDigitsAndUnderscores(name: String, id: String) {
        #expect(HomeAssistantDiscovery.id(name) == id)
    }

    /// Two nodes whose names make one id would be one sensor in Home Assistant: the second is left
    /// out and named (the config loader reports it).
    @Test func namesThatMakeOneIdAreAConflict() {
        let flow = FlowConfig(sources: [], widgets: [
            FlowWidgetConfig(name: "power", inputs: [
                NodeConfig(name: "Solar", rate: .sum([RateTerm(source: "a")])), NodeConfig(name: "solar", rate: .sum([RateTerm(source: "b")])),
            ]),
        ])
        let discovery = HomeAssistantDiscovery(flow: flow, settings: .init(), homeAssistant: .init(), software: "")
        #expect(discovery.sensors.map(\.name) == ["Solar power", "Solar production today", "Lifetime production"])
        #expect(discovery.conflicts == [
            "'solar power' of widget power would have the id flowbridge_power_solar_power of 'Solar power' of widget power",
            "'solar production today' of widget power would have the id flowbridge_power_solar_energy of 'Solar production today' of widget power",
        ])
    }

    /// Another prefix is another device, with ids of its own: two daemons on one Home Assistant.
    @Test func aPrefixMakesTheDeviceAndTheIds() throws {
        let discovery = HomeAssistantDiscovery(
            flow: Self.flow, settings: MQTTOutputSettings(prefix: "garage/flowbridge"), homeAssistant: .init(discoveryPrefix: "ha"),
            software: "")
        let sensor = try #require(discovery.sensors.first)
        #expect(discovery.uniqueID(sensor) == "garage_flowbridge_power_solar_power")
        #expect(discovery.configTopic(sensor) == "ha/sensor/garage_flowbridge/power_solar_power/config")
        #expect(discovery.deviceName == "flowbridge (garage/flowbridge)")
        #expect(discovery.config(sensor)["state_topic"] == "garage/flowbridge/power/sensors")
        #expect(discovery.config(sensor)["availability_topic"] == "garage/flowbridge/status")
    }
}
