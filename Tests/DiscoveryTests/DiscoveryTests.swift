@testable import Discovery
import FlowCore
import Foundation
import Testing

/// Device payloads from `Tests/Fixtures` (recorded and documented), by topic.
enum Fixtures {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    static let payloads: [String: String] = {
        var all: [String: String] = [:]
        for file in ["documented-devices.json", "devices.json"] {
            guard let data = try? Data(contentsOf: folder.appendingPathComponent(file)), let json = try? JSONValue(parsing: Array(data)) else { continue }
            for item in json["cases"]?.arrayValue ?? [] {
                // The first payload of a topic that carries a value (devices.json wins over documented).
                if let topic = item["topic"]?.stringValue, let payload = item["payload"]?.stringValue,
                   all[topic] == nil || !payload.isEmpty && payload != "unavailable" && payload != #"{"value": null}"# {
                    all[topic] = payload
                }
            }
        }
        return all
    }()

    static func payload(_ topic: String) -> String {
        guard let payload = payloads[topic] else { fatalError("no fixture for \(topic)") }
        return payload
    }
}

/// Hears messages and plans: the layouts recognized, the topics, paths, units and signs chosen.
@Suite struct DiscoveryTests {
    static func plan(_ messages: [(String, String)]) -> SetupPlan {
        var discovery = Discovery()
        for (topic, payload) in messages { discovery.hear(topic: topic, payload: Array(payload.utf8), retained: false) }
        return discovery.plan
    }

    /// The fixture payloads of these topics.
    static func fixtures(_ topics: String...) -> [(String, String)] { topics.map { ($0, Fixtures.payload($0)) } }

    /// `topic json unit invert` of a node's terms, for comparing.
    static func describe(_ node: NodeDraft?) -> [String] {
        node?.terms.map { term in
            let source = term.source
            return [
                (term.negated ? "-" : "") + source.topic, source.json ?? "", source.unit.rawValue, source.invert ? "inverted" : "",
                source.sumsMatches ? "summed" : "",
            ]
                .filter { !$0.isEmpty }.joined(separator: " ")
        } ?? []
    }

    static func total(_ node: NodeDraft?) -> String {
        switch node?.total {
        case .word(let word)?: word
        case .counter(let draft)?: "counter \(draft.topic) \(draft.json.map { "\($0) " } ?? "")\(draft.unit.rawValue)"
        case .daily(let draft)?: "daily \(draft.topic) \(draft.unit.rawValue)"
        case nil: "-"
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var messages: [(String, String)]
        var device: String
        var production: [String] = []
        var productionTotal = "-"
        var grid: [String] = []
        var gridTotal = "-"
        var battery: [String] = []
        var level: String?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "OpenDTU", messages: fixtures("solar/ac/power", "solar/ac/yieldtotal", "solar/ac/yieldday", "solar/114190641177/0/power", "solar/114190641177/name", "solar/dtu/status"),
             device: "OpenDTU, base topic solar (inverters 114190641177 HM-800)", production: ["solar/ac/power W"],
             productionTotal: "counter solar/ac/yieldtotal kWh"),
        Case(name: "OpenDTU without its sum: every inverter added up, and the day's Wh", messages: fixtures("solar/114190641177/0/power", "solar/116180214578/0/power", "solar/ac/yieldday"),
             device: "OpenDTU, base topic solar (inverters 114190641177, 116180214578)",
             production: ["solar/+/0/power W summed"], productionTotal: "daily solar/ac/yieldday Wh"),
        Case(name: "AhoyDTU", messages: fixtures("inverter/HM600/ch0/P_AC", "inverter/HM600/ch0/YieldDay"),
             device: "AhoyDTU, base topic inverter (inverters HM600)", production: ["inverter/HM600/ch0/P_AC W"],
             productionTotal: "daily inverter/HM600/ch0/YieldDay Wh"),
        Case(name: "AhoyDTU with several inverters: their sum", messages: fixtures("inverter/HM600/ch0/P_AC", "inverter/total/P_AC") + [("inverter/HM400/ch0/P_AC", "71")],
             device: "AhoyDTU, base topic inverter (inverters HM400, HM600)", production: ["inverter/total/P_AC W"], productionTotal: "integrate"),
        Case(name: "Shelly Pro 3EM", messages: fixtures("shellypro3em-abc/status/em:0", "shellypro3em-abc/status/emdata:0", "shellypro3em-abc/online"),
             device: "Shelly Pro 3EM shellypro3em-abc", grid: ["shellypro3em-abc/status/em:0 total_act_power W"],
             gridTotal: "counter shellypro3em-abc/status/emdata:0 total_act Wh"),
        Case(name: "Shelly EM Gen1: watt-minutes", messages: fixtures("shellies/shellyem-B9F2A1/emeter/0/power", "shellies/shellyem-B9F2A1/emeter/0/energy", "shellies/shellyem-B9F2A1/emeter/0/returned_energy", "shellies/shellyem-B9F2A1/emeter/1/power"),
             device: "Shelly EM (Gen1) shellyem-B9F2A1", grid: ["shellies/shellyem-B9F2A1/emeter/0/power W"],
             gridTotal: "counter shellies/shellyem-B9F2A1/emeter/0/energy Wmin"),
        Case(name: "Shelly 3EM Gen1: three phases", messages: (0...2).map { ("shellies/shellyem3-485519C9/emeter/\($0)/power", "120.5") },
             device: "Shelly 3EM (Gen1) shellyem3-485519C9",
             grid: (0...2).map { "shellies/shellyem3-485519C9/emeter/\($0)/power W" }, gridTotal: "import"),
        Case(name: "Tasmota SML", messages: fixtures("tele/meter/SENSOR"),
             device: "Tasmota smart meter reader tele/meter", grid: ["tele/meter/SENSOR SML.Power_curr W"], gridTotal: "counter tele/meter/SENSOR SML.Total_in kWh"),
        // The names of the Smart Meter Interface page's scripts: E_in (1.8.0) and E_out (2.8.0), the
        // tariff registers E_inHT / E_inNT beside them, Power (16.7.0) and Power2 (15.7.0, unsigned).
        Case(name: "Tasmota SML: E_in is the import register", messages: [
                ("tele/zaehler/SENSOR", #"{"Time":"2024-03-02T12:00:00","eHZ":{"E_in":10234.512,"E_inHT":6011.2,"E_inNT":4223.312,"E_out":2301.7,"Power":-512,"Power2":512}}"#)],
             device: "Tasmota smart meter reader tele/zaehler", grid: ["tele/zaehler/SENSOR eHZ.Power W"], gridTotal: "counter tele/zaehler/SENSOR eHZ.E_in kWh"),
        Case(name: "Tasmota plug named for a balcony plant", messages: [("tele/balkonkraftwerk/SENSOR", Fixtures.payload("tele/plug/SENSOR"))],
             device: "Tasmota energy plug tele/balkonkraftwerk", production: ["tele/balkonkraftwerk/SENSOR ENERGY.Power W"],
             productionTotal: "counter tele/balkonkraftwerk/SENSOR ENERGY.Total kWh"),
        Case(name: "Victron: phases that read, the keepalive", messages: fixtures(
                "N/c0619ab1d2e3/system/0/Dc/Battery/Power", "N/c0619ab1d2e3/system/0/Dc/Battery/Soc", "N/c0619ab1d2e3/system/0/Dc/Pv/Power",
                "N/c0619ab1d2e3/system/0/Ac/Grid/L1/Power", "N/c0619ab1d2e3/system/0/Serial", "N/c0619ab1d2e3/full_publish_completed")
                + [("N/c0619ab1d2e3/system/0/Ac/Grid/L2/Power", #"{"value": null}"#)],
             device: "Victron Venus OS, portal c0619ab1d2e3", production: ["N/c0619ab1d2e3/system/0/Dc/Pv/Power value W"], productionTotal: "integrate",
             grid: ["N/c0619ab1d2e3/system/0/Ac/Grid/L1/Power value W"], gridTotal: "import",
             battery: ["N/c0619ab1d2e3/system/0/Dc/Battery/Power value W"], level: "N/c0619ab1d2e3/system/0/Dc/Battery/Soc"),
        Case(name: "evcc: its battery inverted", messages: fixtures("evcc/site/pvPower", "evcc/site/grid/power", "evcc/site/battery/power", "evcc/site/battery/soc", "evcc/site/homePower"),
             device: "evcc, base topic evcc", production: ["evcc/site/pvPower W"], productionTotal: "integrate", grid: ["evcc/site/grid/power W"],
             gridTotal: "import", battery: ["evcc/site/battery/power W inverted"], level: "evcc/site/battery/soc"),
        Case(name: "evcc before 0.200", messages: [("evcc/site/gridPower", "386.04"), ("evcc/site/batteryPower", "-1250.5"), ("evcc/site/batterySoc", "57")],
             device: "evcc, base topic evcc", grid: ["evcc/site/gridPower W"], gridTotal: "import", battery: ["evcc/site/batteryPower W inverted"],
             level: "evcc/site/batterySoc"),
        Case(name: "SolarAssistant", messages: fixtures(
                "solar_assistant/inverter_1/pv_power/state", "solar_assistant/inverter_1/grid_power/state", "solar_assistant/total/battery_power/state",
                "solar_assistant/total/battery_state_of_charge/state"),
             device: "SolarAssistant (inverter_1, total)", production: ["solar_assistant/inverter_1/pv_power/state W"], productionTotal: "integrate",
             grid: ["solar_assistant/inverter_1/grid_power/state W"], gridTotal: "import", battery: ["solar_assistant/total/battery_power/state W"],
             level: "solar_assistant/total/battery_state_of_charge/state"),
        Case(name: "Home Assistant statestream: the dashboard's signs", messages: fixtures(
                "homeassistant/sensor/solar_power/state", "homeassistant/sensor/solar_power/unit_of_measurement", "homeassistant/sensor/grid_power/state",
                "homeassistant/sensor/battery_power/state") + [("homeassistant/sensor/battery_state_of_charge/state", "55")],
             device: "Home Assistant mqtt_statestream, base topic homeassistant", production: ["homeassistant/sensor/solar_power/state W"],
             productionTotal: "integrate", grid: ["homeassistant/sensor/grid_power/state W"], gridTotal: "import",
             battery: ["homeassistant/sensor/battery_power/state W inverted"], level: "homeassistant/sensor/battery_state_of_charge/state"),
        Case(name: "Home Assistant: an import and an export sensor", messages: [
                ("homeassistant/sensor/grid_import_power/state", "0.0"), ("homeassistant/sensor/grid_export_power/state", "640.0"),
                ("homeassistant/sensor/grid_export_power/unit_of_measurement", #""W""#)],
             device: "Home Assistant mqtt_statestream, base topic homeassistant",
             grid: ["homeassistant/sensor/grid_import_power/state W", "-homeassistant/sensor/grid_export_power/state W"], gridTotal: "import"),
        Case(name: "Zigbee2MQTT plug named for a balcony plant", messages: [
                ("zigbee2mqtt/balcony_solar", Fixtures.payload("zigbee2mqtt/plug_zigbee23")), ("zigbee2mqtt/balcony_solar/availability", #"{"state":"online"}"#)],
             device: #"Zigbee2MQTT plug "balcony_solar""#, production: ["zigbee2mqtt/balcony_solar power W"], productionTotal: "counter zigbee2mqtt/balcony_solar energy kWh"),
    ]

    /// Home Assistant publishes a state only when it changes: the grid and the battery never go
    /// stale (a full battery idles for hours), the solar input keeps the default (asleep: 0 W).
    @Test func homeAssistantGridAndBatteryNeverGoStale() {
        let plan = Self.plan(Self.fixtures(
            "homeassistant/sensor/solar_power/state", "homeassistant/sensor/grid_power/state", "homeassistant/sensor/battery_power/state"))
        #expect(plan.grid?.terms.map(\.source.staleAfter) == ["never"])
        #expect(plan.battery?.terms.map(\.source.staleAfter) == ["never"])
        #expect(plan.production.flatMap { $0.terms.map(\.source.staleAfter) } == [nil])
    }

    @Test(arguments: cases)
    func recognizes(_ test: Case) {
        let plan = Self.plan(test.messages)
        #expect(plan.devices == [test.device])
        #expect(plan.production.flatMap(Self.describe) == test.production)
        #expect(Self.total(plan.production.first) == test.productionTotal)
        #expect(Self.describe(plan.grid) == test.grid)
        #expect(Self.total(plan.grid) == test.gridTotal)
        #expect(Self.describe(plan.battery) == test.battery)
        #expect(plan.battery?.level?.topic == test.level)
        #expect(plan.unplaced.isEmpty, "\(plan.unplaced)")
    }

    /// OpenDTU, a Shelly Pro 3EM and evcc: each slot from the meter that measures it; evcc's
    /// solar and grid, which republish those meters, are left out, saying why; its battery is used.
    @Test func aMeterReadDirectlyWinsOverEvccsCopyOfIt() {
        let plan = Self.plan(Self.fixtures(
            "solar/ac/power", "solar/ac/yieldtotal", "shellypro3em-abc/status/em:0", "shellypro3em-abc/status/emdata:0", "evcc/site/pvPower",
            "evcc/site/grid/power", "evcc/site/battery/power", "evcc/site/battery/soc", "evcc/site/homePower"))
        #expect(Self.describe(plan.production.first) == ["solar/ac/power W"])
        #expect(Self.describe(plan.grid) == ["shellypro3em-abc/status/em:0 total_act_power W"])
        #expect(Self.describe(plan.battery) == ["evcc/site/battery/power W inverted"])
        #expect(plan.derivesOutput)
        let leftOut = plan.leftOut.map { "\($0.topic): \($0.why)" }
        #expect(leftOut.contains("evcc/site/pvPower: evcc, base topic evcc republishes the production; OpenDTU, base topic solar is read directly"), "\(leftOut)")
        #expect(leftOut.contains("evcc/site/grid/power: evcc, base topic evcc republishes the grid; Shelly Pro 3EM shellypro3em-abc is read directly"), "\(leftOut)")
        #expect(leftOut.contains { $0.hasPrefix("evcc/site/homePower: ") }, "\(leftOut)")
    }

    /// What a plug feeds is unknown without a name that says it: listed with the line that would
    /// add it, not guessed. The same for a Shelly EM's second clamp.
    @Test(arguments: [
        (Self.fixtures("zigbee2mqtt/plug_zigbee23", "zigbee2mqtt/plug_zigbee23/availability", "zigbee2mqtt/bridge/state"), "zigbee2mqtt/plug_zigbee23", "balcony: {topic: zigbee2mqtt/plug_zigbee23, json: power}"),
        (Self.fixtures("tele/plug/SENSOR", "tele/plug/LWT"), "tele/plug/SENSOR", "balcony: {topic: tele/plug/SENSOR, json: ENERGY.Power, stale_after: 11m}"),
    ])
    func aPlugOfUnknownPurposeIsListedNotPlaced(messages: [(String, String)], topic: String, line: String) {
        let plan = Self.plan(messages)
        #expect(plan.isEmpty)
        #expect(plan.unplaced.isEmpty, "availability and status topics are not readings: \(plan.unplaced)")
        let item = plan.leftOut.first { $0.topic == topic }
        #expect(item?.why.contains("if it feeds in a balcony plant, it is an input") == true)
        let text = plan.configText(broker: BrokerSettings(host: "h", port: 1), heard: Heard(messages: 1, topics: 1, seconds: 1))
        #expect(text.contains("#     \(line)"), "\(text)")
    }

    /// A Shelly EM's second clamp on the solar line reads the production below 0 when it faces the
    /// way the grid clamp does (Shelly's Gen1 and Gen2 API pages: − is power flowing back out): the
    /// line that would add it carries the `invert` its heard reading needs, and none when it read ≥ 0.
    @Test(arguments: [
        ("shellies/shellyem-B9F2A1/emeter/1/power", "-1450.2", "solar: {topic: shellies/shellyem-B9F2A1/emeter/1/power, invert: true}"),
        ("shellies/shellyem-B9F2A1/emeter/1/power", "1450.2", "solar: {topic: shellies/shellyem-B9F2A1/emeter/1/power}"),
        ("shellyem-c4d8d5/status/em1:1", #"{"id":1,"current":6.3,"voltage":231.2,"act_power":-1450.2,"aprt_power":1460.1,"pf":-0.99}"#,
         #"solar: {topic: "shellyem-c4d8d5/status/em1:1", json: act_power, invert: true}"#),
        ("shellyem-c4d8d5/status/em1:1", #"{"id":1,"current":6.3,"voltage":231.2,"act_power":1450.2,"aprt_power":1460.1,"pf":0.99}"#,
         #"solar: {topic: "shellyem-c4d8d5/status/em1:1", json: act_power}"#),
    ])
    func aSecondClampIsSuggestedWithTheSignItWasHeardWith(topic: String, payload: String, line: String) {
        let grid = topic.hasPrefix("shellies/")
            ? ("shellies/shellyem-B9F2A1/emeter/0/power", "-412.35")
            : ("shellyem-c4d8d5/status/em1:0", #"{"id":0,"current":1.8,"voltage":231.2,"act_power":-412.35,"aprt_power":420.0,"pf":-0.98}"#)
        let plan = Self.plan([grid, (topic, payload)])
        let text = plan.configText(broker: BrokerSettings(host: "h", port: 1), heard: Heard(messages: 2, topics: 2, seconds: 1))
        #expect(text.contains("#     \(line)\n"), "\(text)")
    }

    /// A Victron portal needs its keepalive: one per portal, from any of its N/ topics.
    @Test func aVictronPortalIsAskedToPublish() {
        #expect(Discovery.keepalive(for: "N/c0619ab1d2e3/system/0/Serial") == "R/c0619ab1d2e3/keepalive")
        #expect(Discovery.keepalive(for: "N/c0619ab1d2e3/heartbeat") == "R/c0619ab1d2e3/keepalive")
        #expect(Discovery.keepalive(for: "N/x") == nil)
        #expect(Discovery.keepalive(for: "solar/ac/power") == nil)
        let plan = Self.plan(Self.fixtures("N/c0619ab1d2e3/system/0/Dc/Battery/Power"))
        #expect(plan.keepalives == ["R/c0619ab1d2e3/keepalive"])
        #expect(plan.configText(broker: BrokerSettings(host: "venus.local", port: 1883), heard: Heard(messages: 1, topics: 1, seconds: 60)).contains("keepalive:\n  - {topic: R/c0619ab1d2e3/keepalive, interval: 30s}"))
    }

    /// A topic heard only as the broker's retained copy may be a device long gone: placed, and
    /// said so beside it; a live one is not marked.
    @Test func aRetainedOnlyTopicIsMarked() {
        var discovery = Discovery()
        discovery.hear(topic: "evcc/site/battery/power", payload: Array("-1200".utf8), retained: true)
        discovery.hear(topic: "evcc/site/grid/power", payload: Array("300".utf8), retained: true)
        discovery.hear(topic: "evcc/site/grid/power", payload: Array("310".utf8), retained: false)
        let plan = discovery.plan
        #expect(plan.retainedOnly == ["evcc/site/battery/power"])
        let text = plan.configText(broker: BrokerSettings(host: "h", port: 1), heard: Heard(messages: 3, topics: 2, seconds: 1))
        let unwrapped = text.replacingOccurrences(of: "\n  # ", with: " ")
        #expect(unwrapped.components(separatedBy: "heard only as the broker's retained copy").count == 2, "\(text)")
        #expect(unwrapped.contains("hence invert (heard only as the broker's retained copy: does the device still publish?)"), "\(text)")
    }

    /// Numbers of devices no layout knows are listed when they look like readings, never placed.
    @Test func unknownReadingsAreListed() {
        let plan = Self.plan([
            ("home/heatpump/power", "1250"), ("home/garden/temperature", "21.5"),
            ("custom/meter", #"{"Leistung": 512, "Spannung": 230.1, "note": "x"}"#), ("flowbridge/status", "online"),
        ])
        #expect(plan.isEmpty)
        #expect(plan.unplaced == [
            SetupPlan.Unplaced(topic: "custom/meter", fields: ["Leistung"]), SetupPlan.Unplaced(topic: "home/heatpump/power", fields: []),
        ])
    }

    /// A Home Assistant with thousands of sensors: the config lists the first of what it leaves
    /// out and counts the rest.
    @Test func longListsAreCut() {
        let sensors = (0..<100).map { ("homeassistant/sensor/plug_\($0)_power/state", "12.5") }
        let plan = Self.plan(sensors + Self.fixtures("evcc/site/battery/power"))
        #expect(plan.leftOut.count == 100)
        let text = plan.configText(broker: BrokerSettings(host: "h", port: 1), heard: Heard(messages: 101, topics: 101, seconds: 1))
        #expect(text.components(separatedBy: "# - homeassistant/sensor/plug_").count - 1 == 40)
        #expect(text.contains("# … and 60 more"))
    }

    /// The catalog keeps at most `maxBytes` of topics and payloads: later topics are counted, the
    /// ones kept still take their new readings.
    @Test func theCatalogIsBounded() {
        var catalog = TopicCatalog()
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 8_000)
        for index in 0..<5_000 { catalog.hear(topic: "bulk/\(index)", payload: big, retained: true) }
        #expect(catalog.overflowTopics > 0)
        #expect(catalog.records.count + catalog.overflowTopics == 5_000)
        #expect(catalog.keptBytes <= TopicCatalog.maxBytes)
        catalog.hear(topic: "bulk/0", payload: Array("42".utf8), retained: false)
        #expect(catalog["bulk/0"]?.number == 42)
        #expect(catalog["bulk/0"]?.retainedOnly == false)
    }

    /// Scalars the config needs quoted are, and YAML reads every one back as the same text: what
    /// YAML could take as a line break, or refuses, as an escape.
    @Test(arguments: [
        ("solar/ac/power", "solar/ac/power"), ("shellypro3em-abc/status/em:0", #""shellypro3em-abc/status/em:0""#), ("%", #""%""#),
        (#"["em:0"].x"#, #""[\"em:0\"].x""#), ("zigbee2mqtt/Living Room", "zigbee2mqtt/Living Room"), ("on", #""on""#), ("1883", #""1883""#),
        ("-x", #""-x""#), ("a #b", #""a #b""#), ("tele/zähler/SENSOR", "tele/zähler/SENSOR"), ("a\nb\tc", #""a\u000Ab\u0009c""#),
        ("a\u{2028}b\u{2029}c\u{85}", #""a\u2028b\u2029c\u0085""#), ("a\u{0}\u{7F}\u{FEFF}", #""a\u0000\u007F\uFEFF""#),
        ("tag\u{E0001}", #""tag\U000E0001""#), (#"a\b"#, #""a\\b""#),
    ])
    func yamlScalars(_ value: String, _ written: String) {
        #expect(YAMLScalar.text(value) == written)
    }

    /// A comment shows what it holds on one line: what would end it is escaped, quotes and
    /// backslashes stay as they are.
    @Test(arguments: [
        ("zigbee2mqtt/plug: \"x\" #1", "zigbee2mqtt/plug: \"x\" #1"), ("a\u{2028}push: {url: x}", #"a\u2028push: {url: x}"#),
        ("a\rb\nc\u{85}d\u{2029}", #"a\u000Db\u000Ac\u0085d\u2029"#), (#"a\u2028"#, #"a\u2028"#),
    ])
    func commentsStayOneLine(_ text: String, _ written: String) {
        #expect(YAMLScalar.comment(text) == written)
    }
}
