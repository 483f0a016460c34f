@testable import Delivery
import FlowCore
import FoundationEssentials
import Testing

/// Home Assistant's sensors of the day's money and the prices: which a tariff gives, what their
/// discovery configs say (the classes Home Assistant takes for `monetary` without a warning), the
/// values they carry at a hundredth of a cent, and their removal when the tariff goes.
@Suite struct MoneySensorsTests {
    static let settings = MQTTOutputSettings(prefix: "flowbridge-demo", homeAssistant: .init())

    static func tariff(currency: String = "EUR", export: Bool = true) -> TariffConfig {
        TariffConfig(
            currency: Currency(code: currency)!, importPrice: PriceConfig(base: .fixed(0.30), feesPerKWh: 0.12, vatPercent: 19),
            exportPrice: export ? PriceConfig(base: .source("feed_in")) : nil, standingChargePerDay: 0.40)
    }

    /// The demo's widget: solar, a battery, the grid, the derived home.
    static func flow(tariff: TariffConfig?, output: Bool = true, exchange: Bool = true, widgets: [String] = ["power"]) -> FlowConfig {
        FlowConfig(sources: [], widgets: widgets.map { name in
            FlowWidgetConfig(
                name: name, shared: SharedContent(label: name == "power" ? "Home" : "Garage"),
                inputs: [NodeConfig(name: "Solar", rate: .sum([RateTerm(source: "solar")]), total: .daily(source: "yield"))],
                output: output ? NodeConfig(name: "Home", rate: .balance) : nil,
                exchange: exchange ? NodeConfig(name: "Grid", rate: .sum([RateTerm(source: "grid")]), total: .counter(source: "grid_in")) : nil)
        }, tariff: tariff)
    }

    static func moneySensors(_ discovery: HomeAssistantDiscovery) -> [[String]] {
        discovery.sensors.filter { if case .money(_, .day) = $0.field { true } else { false } }.map { sensor in
            [discovery.uniqueID(sensor), sensor.name, sensor.quantity.unit, sensor.quantity.deviceClass ?? "-", sensor.quantity.stateClass,
             "\(sensor.precision)"]
        }
    }

    static let all = [
        ["flowbridge_demo_power_import_cost", "Import cost today", "EUR", "monetary", "total", "2"],
        ["flowbridge_demo_power_export_earnings", "Export earnings today", "EUR", "monetary", "total", "2"],
        ["flowbridge_demo_power_net_cost", "Net cost today", "EUR", "monetary", "total", "2"],
        ["flowbridge_demo_power_saved", "Saved today", "EUR", "monetary", "total", "2"],
        ["flowbridge_demo_power_import_price", "Import price", "EUR/kWh", "-", "measurement", "3"],
        ["flowbridge_demo_power_export_price", "Export price", "EUR/kWh", "-", "measurement", "3"],
    ]

    /// Amounts are `monetary` in the currency with the state class `total`, the only one Home
    /// Assistant allows for it; prices have no device class (`monetary` is for amounts) and are a
    /// measurement. Without an export price there is nothing to earn and no price to show;
    /// without an output, no consumption to reckon the saving from; without an exchange node
    /// nothing is priced.
    @Test(arguments: [
        ("import and export", flow(tariff: tariff()), all),
        ("no export price", flow(tariff: tariff(export: false)), [all[0], all[2], all[3], all[4]]),
        ("no output", flow(tariff: tariff(), output: false), [all[0], all[1], all[2], all[4], all[5]]),
        ("no exchange", flow(tariff: tariff(), exchange: false), []),
        ("no tariff", flow(tariff: nil), []),
        ("yen", flow(tariff: tariff(currency: "JPY", export: false)), [
            ["flowbridge_demo_power_import_cost", "Import cost today", "JPY", "monetary", "total", "0"],
            ["flowbridge_demo_power_net_cost", "Net cost today", "JPY", "monetary", "total", "0"],
            ["flowbridge_demo_power_saved", "Saved today", "JPY", "monetary", "total", "0"],
            ["flowbridge_demo_power_import_price", "Import price", "JPY/kWh", "-", "measurement", "3"],
        ]),
        ("two flows: the widget's label first", flow(tariff: tariff(export: false), widgets: ["power", "garage"]), [
            ["flowbridge_demo_power_import_cost", "Home import cost today", "EUR", "monetary", "total", "2"],
            ["flowbridge_demo_power_net_cost", "Home net cost today", "EUR", "monetary", "total", "2"],
            ["flowbridge_demo_power_saved", "Home saved today", "EUR", "monetary", "total", "2"],
            ["flowbridge_demo_power_import_price", "Home import price", "EUR/kWh", "-", "measurement", "3"],
            ["flowbridge_demo_garage_import_cost", "Garage import cost today", "EUR", "monetary", "total", "2"],
            ["flowbridge_demo_garage_net_cost", "Garage net cost today", "EUR", "monetary", "total", "2"],
            ["flowbridge_demo_garage_saved", "Garage saved today", "EUR", "monetary", "total", "2"],
            ["flowbridge_demo_garage_import_price", "Garage import price", "EUR/kWh", "-", "measurement", "3"],
        ]),
    ])
    func aTariffGivesTheSensors(_ name: String, flow: FlowConfig, expected: [[String]]) {
        let discovery = HomeAssistantDiscovery(flow: flow, settings: Self.settings, homeAssistant: .init(), software: "")
        #expect(Self.moneySensors(discovery) == expected, "\(name)")
        #expect(discovery.conflicts.isEmpty)
    }

    /// An amount reads the day's start as its `last_reset` (Home Assistant accepts that option
    /// with `total` only), so the statistics take midnight as a new cycle, not as a loss; a price
    /// has none. Every key is one Home Assistant's MQTT sensor schema knows.
    @Test(arguments: [
        ("import_cost", "monetary", "total", "EUR", true),
        ("saved", "monetary", "total", "EUR", true),
        ("import_price", nil, "measurement", "EUR/kWh", false),
        ("export_price", nil, "measurement", "EUR/kWh", false),
    ] as [(String, String?, String, String, Bool)])
    func theDiscoveryConfig(key: String, deviceClass: String?, stateClass: String, unit: String, resets: Bool) throws {
        let discovery = HomeAssistantDiscovery(flow: Self.flow(tariff: Self.tariff()), settings: Self.settings, homeAssistant: .init(), software: "")
        let sensor = try #require(discovery.sensors.first { $0.key == key })
        let config = try #require(discovery.config(sensor).objectValue)
        #expect(Set(config.keys).isSubset(of: HomeAssistantDiscoveryTests.sensorSchemaKeys))
        #expect(config["device_class"] == deviceClass.map(JSONValue.string))
        #expect(config["state_class"] == .string(stateClass))
        #expect(config["unit_of_measurement"] == .string(unit))
        #expect(config["value_template"] == .string("{{ value_json['\(key)'] }}"))
        #expect(config["state_topic"] == "flowbridge-demo/power/sensors")
        #expect(config["last_reset_value_template"] == (resets ? "{{ value_json['last_reset'] or '' }}" : nil))
        #expect(discovery.configTopic(sensor) == "homeassistant/sensor/flowbridge_demo/power_\(key)/config")
    }

    static let midnight = RFC3339.parse("2026-06-21T00:00:00+02:00")!

    static func report(
        importCost: Double = 0, exportEarnings: Double = 0, standing: Double = 0, gridOnly: Double? = 0, importPrice: Double? = 0.4998,
        exportPrice: Double? = 0.08, dayStart: Date? = midnight
    ) -> MoneyReport {
        MoneyReport(
            currency: .euro, importCost: importCost, exportEarnings: exportEarnings, standingCharge: standing, gridOnlyCost: gridOnly,
            importPricePerKWh: importPrice, exportPricePerKWh: exportPrice, dayStart: dayStart)
    }

    /// Each report and the values published from it: amounts and prices to a hundredth of a cent
    /// (finer than shown, so an hour's cost is not rounded away), negative where the prices were,
    /// an unknown price null (Home Assistant's unknown), never 0.
    @Test(arguments: [
        // net = 2.0 − 0.5 + 0.4 = 1.9; saved = grid alone (5.0 + 0.4) − net 1.9 = 3.5.
        ("a sunny day", report(importCost: 2.0, exportEarnings: 0.5, standing: 0.4, gridOnly: 5.0 + 0.4),
         ["import_cost": 2, "export_earnings": 0.5, "net_cost": 1.9, "saved": 3.5, "import_price": 0.4998, "export_price": 0.08]),
        // 1.234567 → 1.2346; 0.0012 × 3 = 0.0036; net 1.234567 − 0.0036 + 0.1 = 1.330967 → 1.331;
        // saved 3.1 − 1.330967 = 1.769033 → 1.769.
        ("four decimals", report(importCost: 1.234567, exportEarnings: 0.0036, standing: 0.1, gridOnly: 3.1, importPrice: 0.371637),
         ["import_cost": 1.2346, "export_earnings": 0.0036, "net_cost": 1.331, "saved": 1.769, "import_price": 0.3716, "export_price": 0.08]),
        // Exporting at −0.05 per kWh for 2.4 kWh costs: earnings −0.12; net 0.3 + 0.12 = 0.42.
        ("a negative export price", report(importCost: 0.3, exportEarnings: -0.12, gridOnly: 0.3, exportPrice: -0.05),
         ["import_cost": 0.3, "export_earnings": -0.12, "net_cost": 0.42, "saved": -0.12, "import_price": 0.4998, "export_price": -0.05]),
        ("a price source silent", report(importCost: 0.7, gridOnly: 0.7, exportPrice: nil),
         ["import_cost": 0.7, "export_earnings": 0, "net_cost": 0.7, "saved": 0, "import_price": 0.4998, "export_price": nil]),
    ] as [(String, MoneyReport, JSONValue)])
    func theValuesOfAReport(_ name: String, report: MoneyReport, expected: JSONValue) throws {
        var publication = MQTTPublication(settings: Self.settings, flow: Self.flow(tariff: Self.tariff()), software: "")
        _ = publication.push(Self.push)
        let messages = publication.accounts(WidgetAccounts(widget: "power", at: Self.midnight + 3600, accountsKWh: [:], money: report))
        #expect(messages.map(\.topic) == ["flowbridge-demo/power/sensors"])
        let values = try JSONValue(parsing: try #require(messages.first).payload)
        for (key, value) in try #require(expected.objectValue) {
            #expect(values[key] == value, "\(name): \(key)")
        }
        #expect(values["last_reset"] == "2026-06-20T22:00:00Z")
    }

    static let push: OutgoingPush = {
        let document = WidgetContent.flow(FlowContent(inputs: [FlowNode(name: "Solar", rate: 3200)], exchange: FlowNode(name: "Grid", rate: -500)))
        return OutgoingPush(
            widget: "power", at: midnight, contentPatch: ContentPatch(document.json), document: document, held: .none, isFullContent: true)
    }()

    /// Before the engine's first money the amounts and prices are unknown and so is the day's
    /// start (null, which the template renders as nothing), never 0; a move below a hundredth of a
    /// cent publishes nothing; the next day starts with its own `last_reset`.
    @Test func valuesBeforeTheMoneyAndAtMidnight() throws {
        var publication = MQTTPublication(settings: Self.settings, flow: Self.flow(tariff: Self.tariff()), software: "")
        let first = try JSONValue(parsing: try #require(publication.push(Self.push).last).payload)
        for key in ["import_cost", "export_earnings", "net_cost", "saved", "import_price", "export_price", "last_reset"] {
            #expect(first[key] == .null, "\(key)")
        }
        func accounts(_ importCost: Double, dayStart: Date = Self.midnight) -> WidgetAccounts {
            WidgetAccounts(widget: "power", at: dayStart + 60, accountsKWh: [:], money: Self.report(importCost: importCost, dayStart: dayStart))
        }
        #expect(publication.accounts(accounts(1.23451)).count == 1)
        #expect(publication.accounts(accounts(1.23454)).isEmpty)
        let nextDay = try #require(publication.accounts(accounts(0, dayStart: Self.midnight + 86_400)).first)
        #expect(try JSONValue(parsing: nextDay.payload)["last_reset"] == "2026-06-21T22:00:00Z")
    }

    /// A reload without the tariff (or without the export price) removes the sensors it no
    /// longer has: an empty retained config each, so Home Assistant deletes the entity; their
    /// values leave the sensors topic.
    @Test(arguments: [
        (nil, [
            "export_earnings", "export_earnings_month", "export_price", "import_cost", "import_cost_month", "import_price", "net_cost",
            "net_cost_month", "saved",
        ]),
        (tariff(export: false), ["export_earnings", "export_earnings_month", "export_price"]),
    ] as [(TariffConfig?, [String])])
    func aReloadWithoutTheTariffRemovesItsSensors(tariff: TariffConfig?, removed: [String]) throws {
        var publication = MQTTPublication(settings: Self.settings, flow: Self.flow(tariff: Self.tariff()), software: "")
        for message in publication.connected() + publication.push(Self.push) { publication.published(message) }
        #expect(publication.retainedTopics.contains("homeassistant/sensor/flowbridge_demo/power_import_cost/config"))

        let messages = publication.reconfigure(Self.flow(tariff: tariff))
        for message in messages { publication.published(message) }
        #expect(messages.filter(\.isRemoval).map(\.topic) == removed.map { "homeassistant/sensor/flowbridge_demo/power_\($0)/config" })
        let values = try JSONValue(parsing: try #require(messages.last { $0.topic == "flowbridge-demo/power/sensors" }).payload)
        let keys = Set(try #require(values.objectValue).keys)
        #expect(keys.isDisjoint(with: removed))
        // The derived home's day sensor keeps its `last_reset`, with or without a tariff.
        #expect(keys.contains("last_reset"))
        #expect(publication.retainedTopics == publication.wantedTopics)
    }
}
