import Configuration
import FlowCore
import TestSupport
import Testing

/// The config of what shows the day's money: a cost bar's `budget`, a flow widget's
/// `subtitle: {show: …}`, and what each needs (a tariff, an exchange to price), every problem
/// named with its key and line.
@Suite struct MoneyWidgetConfigTests {
    /// A grid meter and a flow widget (lines 1–8), `more` from line 9 on (widgets, then the tariff).
    static func home(_ more: String, subtitle: String = "Grid") -> String {
        """
        sources:
          grid: {topic: home/grid}
        widgets:
          power:
            template: flow
            subtitle: \(subtitle)
            flow:
              exchange: {name: Grid, rate: grid, total: import}
        \(more)
        """
    }

    static let tariff = "tariff:\n  import: {price: 0.30}\n"

    @Test func theMoneyWidgetsLoad() throws {
        let config = try DaemonConfig.parse(
            Self.home("  cost: {template: progress, progress: {of: cost, budget: 4.5}}\n" + Self.tariff, subtitle: "{show: price_now}"), file: "c.yaml")
        #expect(config.flow.progressWidgets.map(\.measure) == [.cost(budget: 4.5)])
        #expect(config.flow.widgets[0].subtitleMoney == .priceNow && config.flow.widgets[0].shared.subtitle == nil)
        let monthly = try DaemonConfig.parse(
            Self.home("  cost: {template: progress, progress: {of: cost, period: billing, budget: 90}}\n" + Self.tariff + "billing_day: 15\n",
                      subtitle: "{show: net_cost_month}"), file: "c.yaml")
        #expect(monthly.flow.progressWidgets.map(\.measure) == [.cost(budget: 90, period: .billing)])
        #expect(monthly.flow.billingDay == 15 && monthly.flow.widgets[0].subtitleMoney == .monthNetCost)
        let plain = try DaemonConfig.parse(Self.home(""), file: "c.yaml")
        #expect(plain.flow.widgets[0].subtitleMoney == nil && plain.flow.widgets[0].shared.subtitle == "Grid")
    }

    @Test(arguments: [
        ("a cost bar without a tariff",
         Self.home("  cost:\n    template: progress\n    progress: {of: cost, budget: 5}\n"),
         "line 11: widgets.cost.progress: of: cost shows the day's money, counted at the tariff's prices, and the config has no tariff:"),
        ("a budget of 0",
         Self.home("  cost:\n    template: progress\n    progress: {of: cost, budget: 0}\n" + Self.tariff),
         "line 11: widgets.cost.progress.budget: must be more than 0: the day's net cost, in the tariff's currency, that fills the bar"),
        ("a negative budget",
         Self.home("  cost:\n    template: progress\n    progress:\n      of: cost\n      budget: -3\n" + Self.tariff),
         "line 13: widgets.cost.progress.budget: must be more than 0"),
        ("an absurd budget",
         Self.home("  cost:\n    template: progress\n    progress: {of: cost, budget: 5e9}\n" + Self.tariff),
         "line 11: widgets.cost.progress.budget: 5000000000 is beyond 1000000: a day's budget in the tariff's currency"),
        ("no budget",
         Self.home("  cost:\n    template: progress\n    progress: {of: cost}\n" + Self.tariff),
         "line 11: widgets.cost.progress.budget: is required"),
        ("a month's budget of 0",
         Self.home("  cost:\n    template: progress\n    progress: {of: cost, period: month, budget: 0}\n" + Self.tariff),
         "line 11: widgets.cost.progress.budget: must be more than 0: the month's net cost, in the tariff's currency, that fills the bar"),
        ("a billing month without billing_day",
         Self.home("  cost:\n    template: progress\n    progress:\n      of: cost\n      period: billing\n      budget: 90\n" + Self.tariff),
         "line 12: widgets.cost.progress.period: billing counts from the day the meter is read: say which with billing_day: (1–28) at the top of the config"),
        ("a period flowbridge does not count",
         Self.home("  cost:\n    template: progress\n    progress: {of: cost, period: year, budget: 900}\n" + Self.tariff),
         "line 11: widgets.cost.progress.period: 'year' is not one of day, month, billing"),
        ("a month's net cost subtitle on a flow widget without an exchange",
         Self.home("  solar:\n    template: flow\n    subtitle: {show: net_cost_month}\n    flow: {inputs: [{rate: grid}]}\n" + Self.tariff),
         "line 11: widgets.solar.subtitle.show: net_cost_month is the money of this widget's exchange, and it has none"),
        ("a budget that is no number",
         Self.home("  cost:\n    template: progress\n    progress: {of: cost, budget: \"€5\"}\n" + Self.tariff),
         "line 11: widgets.cost.progress.budget: expected a number"),
        ("a cost bar of a flow widget without an exchange",
         Self.home("  solar: {template: flow, flow: {inputs: [{rate: grid}]}}\n  cost:\n    template: progress\n    progress: {of: cost, budget: 5, flow: solar}\n" + Self.tariff),
         "line 12: widgets.cost.progress: of: cost reads the day's money of flow widget 'solar', and it has no exchange node"),
        ("a net cost subtitle without a tariff",
         Self.home("", subtitle: "{show: net_cost}"),
         "line 6: widgets.power.subtitle.show: net_cost shows the day's money, counted at the tariff's prices, and the config has no tariff:"),
        ("a price subtitle without a tariff",
         Self.home("", subtitle: "{show: price_now}"),
         "line 6: widgets.power.subtitle.show: price_now shows the day's money"),
        ("a figure flowbridge does not show",
         Self.home(Self.tariff, subtitle: "{show: savings}"),
         "line 6: widgets.power.subtitle.show: 'savings' is not one of net_cost, price_now"),
        ("a subtitle mapping without show",
         Self.home(Self.tariff, subtitle: "{text: Grid}"),
         "line 6: widgets.power.subtitle.text: unknown key (known here: show)"),
        ("a net cost subtitle on a flow widget without an exchange",
         Self.home("  solar:\n    template: flow\n    subtitle: {show: net_cost}\n    flow: {inputs: [{rate: grid}]}\n" + Self.tariff),
         "line 11: widgets.solar.subtitle.show: net_cost is the money of this widget's exchange, and it has none"),
        ("a money subtitle on a bar",
         Self.home("  autarky:\n    template: progress\n    subtitle: {show: net_cost}\n    progress: {of: self_sufficiency}\n" + Self.tariff),
         "line 11: widgets.autarky.subtitle: a bar's subtitle is a text; {show: …}, a figure of the day's money, is a flow widget's"),
    ])
    func aBrokenMoneyWidgetNamesKeyAndLine(_ name: String, text: String, expected: String) {
        let error = #expect(throws: ConfigError.self, "\(name)") { try DaemonConfig.parse(text, file: "config.yaml") }
        #expect(error?.description.contains("config.yaml: \(expected)") == true, "\(name): \(error?.description ?? "no error")")
    }

    /// A tariff written with a problem has that problem said, not a second "no tariff:" at each
    /// widget that shows money.
    @Test func aBrokenTariffIsSaidOnce() {
        let text = Self.home("  cost: {template: progress, progress: {of: cost, budget: 5}}\ntariff:\n  import: {price: 5000}\n", subtitle: "{show: net_cost}")
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "config.yaml") }
        let problems = error?.problems ?? []
        #expect(problems.count == 1 && problems.allSatisfy { $0.path.hasPrefix("tariff.import") }, "\(problems)")
    }

    /// `check` says what the cost bar is made of, its budget in the tariff's currency.
    @Test func checkDescribesTheCostBar() throws {
        let folder = TemporaryFolder()
        let file = try folder.write("cost.yaml", Self.home("  cost: {template: progress, progress: {of: cost, budget: 4.5}}\n" + Self.tariff))
        let run = try runFlowbridge(["check", "--config", file, "--state", folder.url.appendingPathComponent("state.json").path])
        #expect(run.status == 0, "\(run.err)")
        #expect(run.out.contains("widget cost (progress of cost, reads flow widget power)"), "\(run.out)")
        #expect(run.out.contains("  value = today's net cost of power (import − export + the standing charge so far) / €4.50, within 0…1"), "\(run.out)")
    }
}
