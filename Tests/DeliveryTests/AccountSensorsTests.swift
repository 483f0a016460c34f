@testable import Delivery
import FlowCore
import FoundationEssentials
import Testing

/// Home Assistant's energy sensors: one per account, ids stable for the account `total:` shows,
/// values at Wh resolution from the engine's accounts (not the widget's 0.1 kWh).
@Suite struct AccountSensorsTests {
    static let flow = FlowConfig(sources: [], widgets: [FlowWidgetConfig(
        name: "power",
        inputs: [NodeConfig(name: "Solar", rate: .sum([RateTerm(source: "solar")]), total: .daily(source: "yield"))],
        output: NodeConfig(name: "Home", rate: .balance),
        storage: NodeConfig(name: "Battery", rate: .sum([RateTerm(source: "battery")]), total: .discharged),
        exchange: NodeConfig(name: "Grid", rate: .sum([RateTerm(source: "grid")]), total: .counter(source: "grid_in")))])
    static let settings = MQTTOutputSettings(prefix: "flowbridge-demo", homeAssistant: .init())

    /// The demo's grid import stays `…_grid_energy` (a counter total's sensor); the battery's shown
    /// discharge keeps `…_discharged`; the rest are named for what they count.
    @Test func oneSensorPerAccount() {
        let discovery = HomeAssistantDiscovery(flow: Self.flow, settings: Self.settings, homeAssistant: .init(), software: "")
        let days = discovery.sensors.filter { [.energyToday, .energyTodayBalance].contains($0.quantity) }
        let energy = days.map { [discovery.uniqueID($0), $0.name] }
        #expect(energy == [
            ["flowbridge_demo_power_solar_energy", "Solar production today"],
            ["flowbridge_demo_power_home_energy", "Home consumption today"],
            ["flowbridge_demo_power_battery_charged", "Battery charged today"],
            ["flowbridge_demo_power_battery_discharged", "Battery discharged today"],
            ["flowbridge_demo_power_grid_energy", "Grid import today"],
            ["flowbridge_demo_power_grid_export", "Grid export today"],
        ])
        #expect(days.allSatisfy { $0.precision == 3 })
        #expect(discovery.conflicts.isEmpty)
    }

    /// The widget shows 12.4 kWh; the sensor says 12.437 (Wh), and a move below a Wh publishes nothing.
    @Test func accountsAreCarriedAtWattHours() throws {
        var publication = MQTTPublication(settings: Self.settings, flow: Self.flow, software: "")
        let document = WidgetContent.flow(FlowContent(
            inputs: [FlowNode(name: "Solar", rate: 3200, total: 12.4)], exchange: FlowNode(name: "Grid", rate: -500, total: 3.1)))
        _ = publication.push(OutgoingPush(
            widget: "power", at: Date(timeIntervalSince1970: 0), contentPatch: ContentPatch(document.json), document: document,
            held: .none, isFullContent: true))
        func accounts(_ solar: Double) -> WidgetAccounts {
            WidgetAccounts(widget: "power", at: Date(timeIntervalSince1970: 60), accountsKWh: [
                .input(0): [.production: solar], .output: [.consumption: 4.0004], .storage: [.charged: 0, .discharged: 1.25],
                .exchange: [.imported: 3.14159, .exported: 0.5],
            ])
        }
        let messages = publication.accounts(accounts(12.4370))
        #expect(messages.map(\.topic) == ["flowbridge-demo/power/sensors"])
        let values = try JSONValue(parsing: try #require(messages.first).payload)
        #expect(values["solar_energy"] == 12.437 && values["home_energy"] == 4 && values["grid_energy"] == 3.142)
        #expect(values["grid_export"] == 0.5 && values["battery_discharged"] == 1.25 && values["battery_charged"] == 0)
        #expect(values["solar_power"] == 3200)
        // 0.41 Wh more: the same at Wh resolution, nothing to publish.
        #expect(publication.accounts(accounts(12.43741)).isEmpty)
        #expect(publication.accounts(accounts(12.4386)).count == 1)
    }
}
