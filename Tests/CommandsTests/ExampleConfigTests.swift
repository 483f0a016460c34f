import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import ReplaySupport
import TestSupport
import Testing

/// The device examples in `Config/examples/`: each one, fed a short trace in its device's own
/// format (payloads from `Tests/Fixtures`, numbers changed), shows the rates with the widget's signs
/// and the totals the trace implies; and every payload the fixtures hold decodes as its device
/// documents it.
@Suite struct ExampleConfigTests {
    /// A trace written by the minute from 08:00 UTC.
    struct Trace {
        static let start = RFC3339.parse("2024-06-01T08:00:00Z")!
        var lines: [String] = []

        mutating func at(_ seconds: Int, _ topic: String, _ payload: String) {
            lines.append(TraceMessage(at: Self.start.addingTimeInterval(Double(seconds)), topic: topic, payload: Array(payload.utf8)).line)
        }

        /// The messages of `minute` for every minute from 0 through `minutes`.
        mutating func everyMinute(through minutes: Int, _ messages: (Int) throws -> [(String, String)]) rethrows {
            for minute in 0...minutes {
                for (topic, payload) in try messages(minute) { at(minute * 60, topic, payload) }
            }
        }
    }

    /// An example, its trace, and what the widget shows at the end: `inputs[0].rate`,
    /// `exchange.total`, `storage.level` → value.
    struct Case: Sendable, CustomTestStringConvertible {
        var file: String
        var trace: @Sendable () throws -> [String]
        var expected: [String: Double]
        var testDescription: String { file }
    }

    /// A fixture payload with numbers set at dotted JSON paths: the device's own format, other values.
    static func fixture(_ topic: String, _ values: [String: Double]) throws -> String {
        var json = try JSONValue(parsing: try Repository.payload(topic))
        for (path, value) in values { json = json.setting(path.split(separator: ".").map(String.init), to: .number(value)) }
        return json.description
    }

    static let cases: [Case] = [
        // OpenDTU: the lifetime counter in kWh makes today's 0.3 kWh; production as is.
        Case(file: "opendtu.yaml", trace: {
            var trace = Trace()
            trace.at(0, "solar/ac/yieldtotal", try Repository.payload("solar/ac/yieldtotal"))  // 13.338
            trace.at(0, "solar/ac/power", "612.4")
            trace.at(1800, "solar/ac/yieldtotal", "13.638")
            trace.at(1800, "solar/ac/power", "1500.0")
            return trace.lines
        }, expected: ["inputs[0].rate": 1500, "inputs[0].total": 0.3]),
        // OpenDTU, two inverters: 612.4 + 388.9 W (each published at its own moment); the day's 716 Wh
        // shown as 0.7 kWh.
        Case(file: "opendtu-two-inverters.yaml", trace: {
            var trace = Trace()
            trace.at(0, "solar/ac/yieldday", try Repository.payload("solar/ac/yieldday"))  // 216 Wh
            trace.at(0, "solar/114190641177/0/power", try Repository.payload("solar/114190641177/0/power"))  // 612.4
            trace.at(5, "solar/116180214578/0/power", "388.9")
            trace.at(1200, "solar/ac/yieldday", "716")
            trace.at(1200, "solar/114190641177/0/power", "612.4")
            trace.at(1201, "solar/116180214578/0/power", "388.9")
            return trace.lines
        }, expected: ["inputs[0].rate": 1000, "inputs[0].total": 0.7]),
        // AhoyDTU: the daily counter is in Wh (251 Wh = 0.251 kWh, shown as 0.3).
        Case(file: "ahoydtu.yaml", trace: {
            var trace = Trace()
            trace.at(0, "inverter/HM600/ch0/YieldDay", try Repository.payload("inverter/HM600/ch0/YieldDay"))  // 51
            trace.at(0, "inverter/HM600/ch0/P_AC", try Repository.payload("inverter/HM600/ch0/P_AC"))  // 71
            trace.at(1200, "inverter/HM600/ch0/YieldDay", "251")
            trace.at(1200, "inverter/HM600/ch0/P_AC", "600")
            return trace.lines
        }, expected: ["inputs[0].rate": 600, "inputs[0].total": 0.3]),
        // Shelly Pro 3EM: importing 3040 W, then exporting 850 W; 500 Wh imported meanwhile.
        Case(file: "shelly-pro-3em.yaml", trace: {
            var trace = Trace()
            trace.at(0, "shellypro3em-abc/status/emdata:0", try Repository.payload("shellypro3em-abc/status/emdata:0"))  // 20269.29 Wh
            trace.at(0, "shellypro3em-abc/status/em:0", try Repository.payload("shellypro3em-abc/status/em:0"))  // 3039.524 W
            trace.at(1800, "shellypro3em-abc/status/emdata:0", try fixture("shellypro3em-abc/status/emdata:0", ["total_act": 20769.29]))
            trace.at(1800, "shellypro3em-abc/status/em:0", try fixture("shellypro3em-abc/status/em:0", ["total_act_power": -850.2]))
            return trace.lines
        }, expected: ["exchange.rate": -850, "exchange.total": 0.5]),
        // Shelly EM Gen1: the solar clamp reads −1200 W (production flowing back out), shown as
        // 1200 W; 300 W imported for an hour counts 18000 watt-minutes = 0.3 kWh.
        Case(file: "shelly-em-gen1.yaml", trace: {
            var trace = Trace()
            trace.everyMinute(through: 60) { minute in
                [
                    ("shellies/shellyem-B9F2A1/emeter/1/power", "-1200.00"),
                    ("shellies/shellyem-B9F2A1/emeter/0/power", "300.00"),
                    ("shellies/shellyem-B9F2A1/emeter/0/energy", String(132_451 + 300 * minute)),
                ]
            }
            return trace.lines
        }, expected: [
            "inputs[0].rate": 1200, "inputs[0].total": 1.2, "exchange.rate": 300, "exchange.total": 0.3, "output.rate": 1500,
            "output.total": 1.5,
        ]),
        // Tasmota SML: exporting 894 W (the recorded telegram), then importing 1200 W; 0.6 kWh in.
        Case(file: "tasmota-sml.yaml", trace: {
            var trace = Trace()
            trace.at(0, "tele/meter/SENSOR", try Repository.payload("tele/meter/SENSOR"))
            trace.at(1800, "tele/meter/SENSOR", try fixture("tele/meter/SENSOR", ["SML.Power_curr": 1200, "SML.Total_in": 34508.0761]))
            return trace.lines
        }, expected: ["exchange.rate": 1200, "exchange.total": 0.6]),
        // Tasmota energy plug on a balcony plant: 0.2 kWh on its lifetime counter.
        Case(file: "tasmota-plug.yaml", trace: {
            var trace = Trace()
            trace.at(0, "tele/plug/SENSOR", try Repository.payload("tele/plug/SENSOR"))  // 56 W, Total 514.153
            trace.at(1800, "tele/plug/SENSOR", try fixture("tele/plug/SENSOR", ["ENERGY.Power": 380, "ENERGY.Total": 514.353]))
            return trace.lines
        }, expected: ["inputs[0].rate": 380, "inputs[0].total": 0.2]),
        // Zigbee2MQTT plug: the availability message beside it is no reading.
        Case(file: "zigbee2mqtt-plug.yaml", trace: {
            var trace = Trace()
            trace.at(0, "zigbee2mqtt/plug_zigbee23", try Repository.payload("zigbee2mqtt/plug_zigbee23"))  // 3 W, 8.42 kWh
            trace.at(1, "zigbee2mqtt/plug_zigbee23/availability", #"{"state":"online"}"#)
            trace.at(1800, "zigbee2mqtt/plug_zigbee23", try fixture("zigbee2mqtt/plug_zigbee23", ["power": 420, "energy": 8.62]))
            return trace.lines
        }, expected: ["inputs[0].rate": 420, "inputs[0].total": 0.2]),
        // Victron: charging 800 W (+ is filling), exporting 400 W; a {"value": null} and an empty
        // payload on the way are no readings. Home = 2000 − 400 − 800.
        Case(file: "victron-venus.yaml", trace: {
            var trace = Trace()
            let portal = "N/c0619ab1d2e3/system/0"
            trace.everyMinute(through: 60) { minute in
                [
                    ("\(portal)/Dc/Pv/Power", #"{"value": 2000}"#),
                    ("\(portal)/Ac/Grid/L1/Power", minute == 30 ? #"{"value": null}"# : #"{"value": -400}"#),
                    ("\(portal)/Dc/Battery/Power", minute == 31 ? "" : #"{"value": 800}"#),
                    ("\(portal)/Dc/Battery/Soc", #"{"value": \#(50 + minute / 10)}"#),
                ]
            }
            return trace.lines
        }, expected: [
            "inputs[0].rate": 2000, "inputs[0].total": 2, "storage.rate": 800, "storage.total": 0.8, "storage.level": 56,
            "exchange.rate": -400, "exchange.total": 0, "output.rate": 800, "output.total": 0.8,
        ]),
        // evcc: its battery says −1500 (charging in evcc's sign), the widget shows +1500 (filling).
        Case(file: "evcc.yaml", trace: {
            var trace = Trace()
            trace.everyMinute(through: 60) { minute in
                [
                    ("evcc/site/pvPower", "3000"), ("evcc/site/grid/power", "-500"), ("evcc/site/battery/power", "-1500"),
                    ("evcc/site/battery/soc", String(40 + minute / 6)),
                ]
            }
            return trace.lines
        }, expected: [
            "inputs[0].rate": 3000, "inputs[0].total": 3, "storage.rate": 1500, "storage.total": 1.5, "storage.level": 50, "exchange.rate": -500,
            "exchange.total": 0, "output.rate": 1000, "output.total": 1,
        ]),
        // SolarAssistant: discharging 412 W (its − is draining, as the widget's) while importing 300 W.
        Case(file: "solarassistant.yaml", trace: {
            var trace = Trace()
            try trace.everyMinute(through: 60) { _ in
                [
                    ("solar_assistant/inverter_1/pv_power/state", "1700"), ("solar_assistant/inverter_1/grid_power/state", "300"),
                    ("solar_assistant/total/battery_power/state", "-412"),
                    ("solar_assistant/total/battery_state_of_charge/state", try Repository.payload("solar_assistant/total/battery_state_of_charge/state")),
                ]
            }
            return trace.lines
        }, expected: [
            "inputs[0].rate": 1700, "inputs[0].total": 1.7, "storage.rate": -410, "storage.level": 96, "storage.total": 0,
            "exchange.rate": 300, "exchange.total": 0.3, "output.rate": 2410, "output.total": 2.4,
        ]),
        // Home Assistant: the battery's + is discharging in Home Assistant's convention, so 1200
        // shows as −1200 (draining); "unavailable" on the way is no reading.
        Case(file: "homeassistant-statestream.yaml", trace: {
            var trace = Trace()
            try trace.everyMinute(through: 60) { minute in
                [
                    ("homeassistant/sensor/solar_power/state", minute == 20 ? "unavailable" : try Repository.payload("homeassistant/sensor/solar_power/state")),
                    ("homeassistant/sensor/grid_power/state", "-640.0"), ("homeassistant/sensor/battery_power/state", "1200.0"),
                    ("homeassistant/sensor/battery_state_of_charge/state", "55"),
                ]
            }
            return trace.lines
        }, expected: [
            "inputs[0].rate": 1530, "inputs[0].total": 1.5, "storage.rate": -1200, "storage.total": 0, "exchange.rate": -640,
            "exchange.total": 0, "output.rate": 2090, "output.total": 2.1,
        ]),
        // Home Assistant's meters and its day-ahead list (the fixture's Nord Pool case, today and
        // tomorrow in one retained list): importing 400 W with 600 W of solar for an hour.
        Case(file: "homeassistant-day-ahead.yaml", trace: {
            var trace = Trace()
            let schedule = try #require(try Repository.scheduleCases().first { $0["topic"]?.stringValue == "home/prices/nordpool" }?["payload"]?.stringValue)
            trace.lines.append(TraceMessage(at: Trace.start, topic: "home/prices/schedule", payload: Array(schedule.utf8), retained: true).line)
            trace.everyMinute(through: 60) { _ in
                [("homeassistant/sensor/solar_power/state", "600.0"), ("homeassistant/sensor/grid_power/state", "400.0")]
            }
            return trace.lines
        }, expected: ["inputs[0].rate": 600, "exchange.rate": 400, "exchange.total": 0.4, "output.rate": 1000, "output.total": 1]),
        // OpenDTU + Shelly Pro 3EM + evcc's battery: exporting 300 W while the battery fills 1200 W.
        Case(file: "opendtu-shelly-evcc.yaml", trace: {
            var trace = Trace()
            try trace.everyMinute(through: 60) { minute in
                [
                    ("solar/ac/power", "2500.0"), ("solar/ac/yieldtotal", JSONValue.format(13.338 + 2.5 * Double(minute) / 60)),
                    ("shellypro3em-abc/status/em:0", try fixture("shellypro3em-abc/status/em:0", ["total_act_power": -300])),
                    ("shellypro3em-abc/status/emdata:0", try Repository.payload("shellypro3em-abc/status/emdata:0")),
                    ("evcc/site/battery/power", "-1200"), ("evcc/site/battery/soc", String(60 + minute / 5)),
                ]
            }
            return trace.lines
        }, expected: [
            "inputs[0].rate": 2500, "inputs[0].total": 2.5, "storage.rate": 1200, "storage.total": 1.2, "storage.level": 72,
            "exchange.rate": -300, "exchange.total": 0, "output.rate": 1000, "output.total": 1,
        ]),
        // LG ESS through pyess: the state essmqtt published (the battery filling at 945 W, 9 W to
        // the grid) for half an hour, then the battery draining 420 W with 180 W from the grid
        // after sunset, the flags turned. 945 W for 30 min: 0.4725 kWh of charge, shown 0.5.
        Case(file: "lg-ess-pyess.yaml", trace: {
            var trace = Trace()
            let messages = try Repository.lgESSMessages()
            let night = [
                "pcs_pv_total_power": "0", "batconv_power": "420", "grid_power": "180", "bat_user_soc": "24.6",
                "is_battery_charging_": "0", "is_battery_discharging_": "1", "is_grid_selling_": "0", "is_grid_buying_": "1",
            ]
            trace.everyMinute(through: 31) { minute in
                messages.map { ($0.topic, minute < 31 ? $0.payload : night[String($0.topic.split(separator: "/").last!)] ?? $0.payload) }
            }
            return trace.lines
        }, expected: [
            "inputs[0].rate": 0, "storage.rate": -420, "storage.level": 25, "storage.total": 0.5, "exchange.rate": 180, "output.rate": 600,
        ]),
    ]

    /// The first poll of the LG ESS fixture, as essmqtt publishes it, shows the battery filling
    /// and the grid exporting, and the home the ESS's own load_power.
    @Test func anLGESSPollShowsTheSignsOfItsFlags() throws {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("Config/examples/lg-ess-pyess.yaml"), encoding: .utf8)
        let messages = try Repository.lgESSMessages()
        var trace = Trace()
        for (topic, payload) in messages { trace.at(0, topic, payload) }
        let (lines, engine) = try replay(config: text, trace: trace.lines)
        let flow = try #require(lines.last?["content"]?["flow"])
        #expect(flow["storage"]?["rate"] == 950)  // 945 W, filling (to the policy's 10 W)
        #expect(flow["exchange"]?["rate"] == -10)  // 9 W, exporting
        let readings = engine.readings.mapValues(\.value)
        #expect(readings["battery"] == 945 && readings["grid"] == -9, "\(readings)")
        // The balance of the signed readings is the ESS's own figure for the home: 1330 − 9 − 945.
        let load = try #require(messages.first { $0.topic.hasSuffix("/load_power") }.flatMap { Double($0.payload) })
        #expect(readings["solar"].map { $0 + readings["grid"]! - readings["battery"]! } == load)
    }

    @Test(arguments: cases)
    func aTraceInTheDevicesFormatShowsTheRightSignsAndTotals(_ test: Case) throws {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("Config/examples/\(test.file)"), encoding: .utf8)
        let (lines, _) = try replay(config: text, trace: try test.trace())
        let content = try #require(lines.last?["content"], "no push")
        for (path, expected) in test.expected.sorted(by: { $0.key < $1.key }) {
            let shown = content["flow"]?.value(at: path)?.numberValue
            #expect(shown == expected, "\(path): \(shown.map(JSONValue.format) ?? "nothing"), expected \(JSONValue.format(expected))")
        }
    }

    /// Home Assistant publishes only on change: a grid and a battery that hold still for an hour
    /// (one message each, then silence) stay live, while the solar input that keeps publishing
    /// moves; nothing turns gray and the home is still derived.
    @Test func homeAssistantReadingsThatHoldStillStayLive() throws {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("Config/examples/homeassistant-statestream.yaml"), encoding: .utf8)
        var trace = Trace()
        trace.at(0, "homeassistant/sensor/grid_power/state", "-640.0")
        trace.at(0, "homeassistant/sensor/battery_power/state", "0.0")
        trace.everyMinute(through: 60) { minute in [("homeassistant/sensor/solar_power/state", String(1000 + minute))] }
        let (lines, _) = try replay(config: text, trace: trace.lines)
        let content = try #require(lines.last?["content"])
        #expect(content["flow"]?["exchange"]?["color"] != "gray", "\(content)")
        #expect(content["flow"]?["storage"]?["color"] != "gray", "\(content)")
        #expect(content["subtitle"]?.stringValue?.contains("no reading") != true, "\(content)")
        #expect(content["flow"]?["output"]?["rate"] == 420)  // 1060 − 640 − 0
    }

    /// A payload from `Tests/Fixtures`: recorded from a device (`devices.json`) or in the shape its
    /// documentation gives (`documented-devices.json`), with the value it stands for, if any.
    struct Fixture: Sendable, CustomTestStringConvertible {
        var file: String
        var topic: String
        var payload: String
        /// Per quantity, in flowbridge's units with the device's sign: watts, kWh, percent.
        var expected: [SourceUnit.Quantity: Double]
        var testDescription: String { "\(file): \(topic) \(payload.prefix(40))" }

        static func load(_ file: String) -> [Fixture] {
            let url = Repository.fixtures.appendingPathComponent(file)
            guard let data = try? Data(contentsOf: url), let json = try? JSONValue(parsing: Array(data)) else { return [] }
            return (json["cases"]?.arrayValue ?? []).compactMap { item in
                guard let topic = item["topic"]?.stringValue, let payload = item["payload"]?.stringValue else { return nil }
                var expected: [SourceUnit.Quantity: Double] = [:]
                expected[.power] = item["watts"]?.numberValue
                expected[.energy] = item["kwh"]?.numberValue
                expected[.level] = item["percent"]?.numberValue
                return Fixture(file: file, topic: topic, payload: payload, expected: expected)
            }
        }
    }

    static let recorded = Fixture.load("devices.json")
    static let documented = Fixture.load("documented-devices.json")

    /// Every example config, parsed.
    static func exampleConfigs() throws -> [(file: String, config: DaemonConfig)] {
        try Repository.shippedConfigs.filter { $0.hasPrefix("Config/examples/") }.map { file in
            (file, try DaemonConfig.load(path: Repository.root.appendingPathComponent(file).path))
        }
    }

    /// Each payload goes through the engine of every example whose source subscribes to its topic:
    /// the reading is the fixture's value (sign flipped where the example inverts); a payload that is
    /// no reading (`{"value": null}`, an empty message, `unavailable`) leaves the source without one
    /// and counts nothing as bad. Every recorded payload with a value is read by some example.
    @Test(arguments: recorded + documented)
    func everyFixtureDecodesAsItsDeviceDocuments(_ fixture: Fixture) throws {
        var matched = 0
        for (file, config) in try Self.exampleConfigs() {
            for source in config.flow.sources where source.topic.matches(fixture.topic) {
                var engine = FlowEngine(config: config.flow, zone: FixedOffsetZone())
                _ = engine.receive(topic: fixture.topic, payload: Array(fixture.payload.utf8), at: Trace.start)
                let reading = engine.readings[source.name]?.value
                let stats = engine.sourceStats[source.name]
                if fixture.expected.isEmpty {
                    #expect(reading == nil, "\(file) \(source.name): \(reading.map(JSONValue.format) ?? "")")
                    #expect(stats?.rejected == 0, "\(file) \(source.name)")
                    #expect(stats?.noReading == 1, "\(file) \(source.name)")
                } else if let value = fixture.expected[source.unit.quantity] {
                    matched += 1
                    let wanted = source.invert ? -value : value
                    #expect(reading.map { abs($0 - wanted) <= 1e-9 * max(1, abs(wanted)) } == true,
                            "\(file) \(source.name): \(reading.map(JSONValue.format) ?? "no reading"), expected \(JSONValue.format(wanted))")
                }
            }
        }
        if fixture.file == "devices.json", !fixture.expected.isEmpty {
            #expect(matched > 0, "no example reads \(fixture.topic)")
        }
    }

    /// A signed reading of a fixture, with what its device documents + to mean against the widget's
    /// sign (exchange + importing, storage + filling, production ≥ 0): `widgetSign` +1 the same, −1
    /// the opposite. `everyFixtureDecodesAsItsDeviceDocuments` follows each example's own `invert`,
    /// so an example that lost (or gained) one would still pass it; this holds the examples to the
    /// device's word instead.
    struct DocumentedSign: Sendable, CustomTestStringConvertible {
        var topic: String
        var widgetSign: Double
        var documentedIn: String
        var testDescription: String { "\(topic): \(documentedIn)" }
    }

    static let documentedSigns: [DocumentedSign] = [
        DocumentedSign(topic: "evcc/site/grid/power", widgetSign: 1, documentedIn: "evcc docs, MQTT API: grid power, positive = import"),
        DocumentedSign(topic: "evcc/site/battery/power", widgetSign: -1, documentedIn: "evcc docs, MQTT API: battery power, positive = discharge"),
        DocumentedSign(topic: "N/c0619ab1d2e3/system/0/Dc/Battery/Power", widgetSign: 1, documentedIn: "Venus OS D-Bus paths, system: Dc/Battery/Power, + charging"),
        DocumentedSign(topic: "N/c0619ab1d2e3/system/0/Ac/Grid/L1/Power", widgetSign: 1, documentedIn: "Venus OS D-Bus paths, system: Ac/Grid/L1/Power, + import"),
        DocumentedSign(topic: "shellypro3em-abc/status/em:0", widgetSign: 1, documentedIn: "Shelly Gen2 API, EM component: total_act_power, − returned to the grid"),
        DocumentedSign(topic: "shellies/shellyem-B9F2A1/emeter/0/power", widgetSign: 1, documentedIn: "Shelly Gen1 API, Shelly EM MQTT: power, − returned to the grid"),
        DocumentedSign(topic: "shellies/shellyem-B9F2A1/emeter/1/power", widgetSign: -1, documentedIn: "Shelly Gen1 API, Shelly EM MQTT: the solar line's production flows out, −"),
        DocumentedSign(topic: "tele/meter/SENSOR", widgetSign: 1, documentedIn: "Tasmota Smart Meter Interface: OBIS 16.7.0, + import, − export"),
        DocumentedSign(topic: "solar_assistant/inverter_1/grid_power/state", widgetSign: 1, documentedIn: "SolarAssistant MQTT help: grid_power, + import"),
        DocumentedSign(topic: "solar_assistant/total/battery_power/state", widgetSign: 1, documentedIn: "SolarAssistant MQTT help: battery_power, + charging"),
        DocumentedSign(topic: "homeassistant/sensor/grid_power/state", widgetSign: 1, documentedIn: "Home Assistant energy dashboard: grid power, + import"),
        DocumentedSign(topic: "homeassistant/sensor/battery_power/state", widgetSign: -1, documentedIn: "Home Assistant energy dashboard: battery power, + discharging"),
    ]

    /// Every example that reads a signed fixture shows it with the widget's sign, as its device
    /// documents it: evcc's battery at −1250.5 W (charging) fills the widget's storage at +1250.5.
    @Test(arguments: documentedSigns)
    func everyExampleShowsASignedReadingWithTheWidgetsSign(_ sign: DocumentedSign) throws {
        let fixtures = (Self.recorded + Self.documented).filter { $0.topic == sign.topic && $0.expected[.power] != nil }
        try #require(!fixtures.isEmpty, "no signed fixture on \(sign.topic)")
        var matched = 0
        for fixture in fixtures {
            for (file, config) in try Self.exampleConfigs() {
                for source in config.flow.sources where source.topic.matches(fixture.topic) && source.unit.quantity == .power {
                    var engine = FlowEngine(config: config.flow, zone: FixedOffsetZone())
                    _ = engine.receive(topic: fixture.topic, payload: Array(fixture.payload.utf8), at: Trace.start)
                    let wanted = sign.widgetSign * fixture.expected[.power]!
                    matched += 1
                    #expect(engine.readings[source.name]?.value == wanted, "\(file) \(source.name) (invert: \(source.invert)): expected \(JSONValue.format(wanted))")
                }
            }
        }
        #expect(matched > 0, "no example reads \(sign.topic)")
    }

    /// Every fixture that says what its sign means is in `documentedSigns`.
    @Test func everySignedFixtureIsHeldToItsDevicesWord() throws {
        var signed: Set<String> = []
        for file in ["devices.json", "documented-devices.json"] {
            let json = try JSONValue(parsing: Array(Data(contentsOf: Repository.fixtures.appendingPathComponent(file))))
            for item in json["cases"]?.arrayValue ?? [] where item["sign"] != nil && item["watts"] != nil {
                if let topic = item["topic"]?.stringValue { signed.insert(topic) }
            }
        }
        #expect(signed.subtracting(Self.documentedSigns.map(\.topic)).isEmpty, "\(signed.subtracting(Self.documentedSigns.map(\.topic)).sorted())")
    }

    @Test func theFixturesAreThere() {
        #expect(Self.recorded.count == 21)
        #expect(Self.documented.count > 20)
    }

    @Test func everyExampleHasATrace() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Repository.root.appendingPathComponent("Config/examples").path)
        #expect(Set(files) == Set(Self.cases.map(\.file)))
    }
}
