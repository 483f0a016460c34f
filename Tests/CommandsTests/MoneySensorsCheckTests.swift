import Foundation
import TestSupport
import Testing

/// `check` lists the Home Assistant sensors of a tariff's money and prices as discovery announces
/// them: the entity each becomes, its unit and classes, and that an amount's day restarts by its
/// `last_reset`.
@Suite struct MoneySensorsCheckTests {
    static func config(export: String) -> String {
        """
        sources:
          solar: {topic: s}
          grid: {topic: g}
        widgets:
          power:
            template: flow
            flow:
              inputs: [{name: Solar, rate: solar}]
              output: {name: Home, rate: balance}
              exchange: {name: Grid, rate: grid, total: import}
        tariff:
          currency: EUR
          import: {price: 0.30, fees: 0.12, vat: 19%}
        \(export)
          standing_charge: 0.40
        output: {mqtt: {home_assistant: true}}

        """
    }

    /// Without an export price there are no export earnings and no export price to list (and the
    /// column is as wide as the longest id left); the month's amounts say when they start again.
    @Test(arguments: [
        ("  export: {price: 0.08}", [
            "      sensor.flowbridge_power_import_cost           Import cost today (EUR; monetary, total, last_reset at local midnight)",
            "      sensor.flowbridge_power_export_earnings       Export earnings today (EUR; monetary, total, last_reset at local midnight)",
            "      sensor.flowbridge_power_net_cost              Net cost today (EUR; monetary, total, last_reset at local midnight)",
            "      sensor.flowbridge_power_saved                 Saved today (EUR; monetary, total, last_reset at local midnight)",
            "      sensor.flowbridge_power_import_price          Import price (EUR/kWh; measurement)",
            "      sensor.flowbridge_power_export_price          Export price (EUR/kWh; measurement)",
            "      sensor.flowbridge_power_export_earnings_month Export earnings this month (EUR; monetary, total, last_reset at the month's first local midnight)",
            "      sensor.flowbridge_power_net_cost_month        Net cost this month (EUR; monetary, total, last_reset at the month's first local midnight)",
        ], [String]()),
        ("", [
            "      sensor.flowbridge_power_import_cost         Import cost today (EUR; monetary, total, last_reset at local midnight)",
            "      sensor.flowbridge_power_net_cost            Net cost today (EUR; monetary, total, last_reset at local midnight)",
            "      sensor.flowbridge_power_saved               Saved today (EUR; monetary, total, last_reset at local midnight)",
            "      sensor.flowbridge_power_import_price        Import price (EUR/kWh; measurement)",
            "      sensor.flowbridge_power_net_cost_month      Net cost this month (EUR; monetary, total, last_reset at the month's first local midnight)",
        ], ["sensor.flowbridge_power_export_earnings", "sensor.flowbridge_power_export_price"]),
    ])
    func checkListsTheMoneySensors(export: String, listed: [String], unlisted: [String]) throws {
        let folder = TemporaryFolder()
        let run = try runFlowbridge(["check", "--config", try folder.write("c.yaml", Self.config(export: export))])
        #expect(run.status == 0, "\(run.err)")
        for line in listed { #expect(run.out.contains(line + "\n"), "\(line)\n\(run.out)") }
        for line in unlisted { #expect(!run.out.contains(line), "\(line)\n\(run.out)") }
    }
}
