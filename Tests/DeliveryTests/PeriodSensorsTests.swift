@testable import Delivery
import FlowCore
import FoundationEssentials
import Testing

/// Home Assistant's lifetime energy sensors and the sensors of the month's and the billing
/// month's money: what they are called, the classes Home Assistant takes for each without a
/// warning, and the values and `last_reset` they carry.
@Suite struct PeriodSensorsTests {
    static let settings = MQTTOutputSettings(prefix: "flowbridge-demo", homeAssistant: .init())

    static func flow(billingDay: Int) -> FlowConfig {
        var flow = MoneySensorsTests.flow(tariff: MoneySensorsTests.tariff())
        flow.widgets[0].storage = NodeConfig(name: "Battery", rate: .sum([RateTerm(source: "battery")]), total: .discharged)
        flow.billingDay = billingDay
        return flow
    }

    static func rows(_ discovery: HomeAssistantDiscovery, where chosen: (HomeAssistantSensor) -> Bool) -> [[String]] {
        discovery.sensors.filter(chosen).map { sensor in
            let config = discovery.config(sensor)
            return [discovery.uniqueID(sensor), sensor.name, config["unit_of_measurement"]?.stringValue ?? "-",
                    config["device_class"]?.stringValue ?? "-", config["state_class"]?.stringValue ?? "-",
                    config["last_reset_value_template"]?.stringValue ?? "-"]
        }
    }

    /// One lifetime sensor per account the widget's nodes count, the widget's whole account:
    /// energy in kWh, `total_increasing` (it never falls, so Home Assistant needs no reset), no
    /// `last_reset`: the form the Energy dashboard recommends. A derived home (`rate: balance`),
    /// whose day steps back when the meters report at different moments, has none; a measured
    /// home has its consumption.
    @Test(arguments: [false, true])
    func lifetimeSensors(measuredHome: Bool) {
        var flow = Self.flow(billingDay: 1)
        if measuredHome { flow.widgets[0].output = NodeConfig(name: "Home", rate: .sum([RateTerm(source: "home")]), total: .integrate) }
        let discovery = HomeAssistantDiscovery(flow: flow, settings: Self.settings, homeAssistant: .init(), software: "")
        let lifetime = Self.rows(discovery) { $0.quantity == .energyLifetime }
        let consumption = [["flowbridge_demo_power_lifetime_consumption", "Lifetime consumption", "kWh", "energy", "total_increasing", "-"]]
        #expect(lifetime == [
            ["flowbridge_demo_power_lifetime_production", "Lifetime production", "kWh", "energy", "total_increasing", "-"],
        ] + (measuredHome ? consumption : []) + [
            ["flowbridge_demo_power_lifetime_import", "Lifetime import", "kWh", "energy", "total_increasing", "-"],
            ["flowbridge_demo_power_lifetime_export", "Lifetime export", "kWh", "energy", "total_increasing", "-"],
            ["flowbridge_demo_power_lifetime_charge", "Lifetime charged", "kWh", "energy", "total_increasing", "-"],
            ["flowbridge_demo_power_lifetime_discharge", "Lifetime discharged", "kWh", "energy", "total_increasing", "-"],
        ])
        #expect(discovery.conflicts.isEmpty)
    }

    /// A derived home's energy today is the balance of the other accounts, which steps back when
    /// the meters report at different moments: `total` with the day's start as `last_reset`
    /// (without a tariff too), never `total_increasing`, which reads a step back as a new cycle.
    @Test func aDerivedHomesDayStartsAgainByItsLastReset() throws {
        var flow = Self.flow(billingDay: 1)
        flow.tariff = nil
        var publication = MQTTPublication(settings: Self.settings, flow: flow, software: "")
        let discovery = HomeAssistantDiscovery(flow: flow, settings: Self.settings, homeAssistant: .init(), software: "")
        #expect(Self.rows(discovery) { $0.key == "home_energy" } == [
            ["flowbridge_demo_power_home_energy", "Home consumption today", "kWh", "energy", "total", "{{ value_json['last_reset'] or '' }}"],
        ])
        _ = publication.push(MoneySensorsTests.push)
        let accounts = WidgetAccounts(
            widget: "power", at: MoneySensorsTests.midnight + 60, accountsKWh: [.output: [.consumption: 1.5]], dayStart: MoneySensorsTests.midnight)
        let values = try JSONValue(parsing: try #require(publication.accounts(accounts).first).payload)
        #expect(values["home_energy"] == 1.5 && values["last_reset"] == "2026-06-20T22:00:00Z")
    }

    /// The month's amounts (import cost, export earnings, net cost; a saving and the prices are
    /// the day's): `monetary` with `total`, the only state class Home Assistant allows for it
    /// (an amount may fall within the month: export earns), each with the period's start as its
    /// `last_reset`. The billing month's only where `billing_day` is not the 1st.
    @Test(arguments: [
        (1, [
            ["flowbridge_demo_power_import_cost_month", "Import cost this month", "EUR", "monetary", "total", "{{ value_json['last_reset_month'] or '' }}"],
            ["flowbridge_demo_power_export_earnings_month", "Export earnings this month", "EUR", "monetary", "total", "{{ value_json['last_reset_month'] or '' }}"],
            ["flowbridge_demo_power_net_cost_month", "Net cost this month", "EUR", "monetary", "total", "{{ value_json['last_reset_month'] or '' }}"],
        ]),
        (15, [
            ["flowbridge_demo_power_import_cost_month", "Import cost this month", "EUR", "monetary", "total", "{{ value_json['last_reset_month'] or '' }}"],
            ["flowbridge_demo_power_export_earnings_month", "Export earnings this month", "EUR", "monetary", "total", "{{ value_json['last_reset_month'] or '' }}"],
            ["flowbridge_demo_power_net_cost_month", "Net cost this month", "EUR", "monetary", "total", "{{ value_json['last_reset_month'] or '' }}"],
            ["flowbridge_demo_power_import_cost_billing", "Import cost this billing month", "EUR", "monetary", "total", "{{ value_json['last_reset_billing'] or '' }}"],
            ["flowbridge_demo_power_export_earnings_billing", "Export earnings this billing month", "EUR", "monetary", "total", "{{ value_json['last_reset_billing'] or '' }}"],
            ["flowbridge_demo_power_net_cost_billing", "Net cost this billing month", "EUR", "monetary", "total", "{{ value_json['last_reset_billing'] or '' }}"],
        ]),
    ] as [(Int, [[String]])])
    func periodMoneySensors(billingDay: Int, expected: [[String]]) throws {
        let discovery = HomeAssistantDiscovery(flow: Self.flow(billingDay: billingDay), settings: Self.settings, homeAssistant: .init(), software: "")
        #expect(Self.rows(discovery) { if case .money(_, let period) = $0.field { period != .day } else { false } } == expected)
        for sensor in discovery.sensors {
            #expect(Set(try #require(discovery.config(sensor).objectValue).keys).isSubset(of: HomeAssistantDiscoveryTests.sensorSchemaKeys))
        }
        #expect(discovery.conflicts.isEmpty)
    }

    /// The values of one `WidgetAccounts`: the lifetime accounts at Wh, the month's and the
    /// billing month's amounts at a hundredth of a cent, each period's start its `last_reset`.
    @Test func theValuesOfThePeriods() throws {
        var publication = MQTTPublication(settings: Self.settings, flow: Self.flow(billingDay: 15), software: "")
        _ = publication.push(MoneySensorsTests.push)
        let month = RFC3339.parse("2026-06-01T00:00:00+02:00")!
        let billing = RFC3339.parse("2026-05-15T00:00:00+02:00")!
        let accounts = WidgetAccounts(
            widget: "power", at: MoneySensorsTests.midnight + 3600, accountsKWh: [:], money: MoneySensorsTests.report(importCost: 1),
            lifetimeKWh: [.imported: 1234.56789, .exported: 321, .production: 4000.0004],
            periodMoney: [
                .month: MoneySensorsTests.report(importCost: 62.123456, exportEarnings: 3.5, standing: 8, dayStart: month),
                .billing: MoneySensorsTests.report(importCost: 80, exportEarnings: 4, standing: 12.4, dayStart: billing),
            ])
        let values = try JSONValue(parsing: try #require(publication.accounts(accounts).first).payload)
        #expect(values["lifetime_import"] == 1234.568 && values["lifetime_export"] == 321 && values["lifetime_production"] == 4000)
        // Not known (no lifetime figure of it): unknown, never 0.
        #expect(values["lifetime_charge"] == .null)
        #expect(values["import_cost_month"] == 62.1235 && values["export_earnings_month"] == 3.5 && values["net_cost_month"] == 66.6235)
        #expect(values["import_cost_billing"] == 80 && values["net_cost_billing"] == 88.4)
        #expect(values["last_reset_month"] == "2026-05-31T22:00:00Z" && values["last_reset_billing"] == "2026-05-14T22:00:00Z")
        #expect(values["last_reset"] == "2026-06-20T22:00:00Z")
    }
}
