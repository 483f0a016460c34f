import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import TestSupport
import Testing

/// `template: progress` widgets in the config file: what they read, and what is wrong with them,
/// named with the key and the line.
@Suite struct ProgressConfigTests {
    static let home = """
        sources:
          solar:   {topic: solar/ac/power}
          grid:    {topic: meter/grid}
          grid_in: {topic: meter/grid/import, unit: kWh}
          battery: {topic: bms/power}
          soc:     {topic: bms/soc, unit: "%"}
          other:   {topic: bms2/soc, unit: "%"}
        widgets:
          power:
            template: flow
            flow:
              inputs:   [{name: Solar, rate: solar, total: integrate}]
              storage:  {name: Battery, rate: battery, level: soc, total: charge}
              exchange: {name: Grid, rate: grid, total: {counter: grid_in}}
              output:   {name: Home, rate: balance, total: integrate}

        """

    @Test func progressWidgetsLoadWithWhatTheyRead() throws {
        let config = try DaemonConfig.parse(Self.home + """
              battery:
                template: progress
                label: Battery
                icon: battery.100percent
                accent_color: green
                progress: {of: battery, capacity_kwh: 10.5}
                policy: {min_interval: 30s, level_step: 1}
              second:
                template: progress
                progress: {of: battery, flow: power, level: other, rate: [battery]}
                stale_marker: false
              autarky:
                template: progress
                subtitle: today
                progress: {of: self_sufficiency}
              goal: {template: progress, progress: {of: production_goal, goal_kwh: 25}}
            """, file: "c.yaml")
        let bars = config.flow.progressWidgets
        #expect(bars.map(\.name) == ["battery", "second", "autarky", "goal"])
        #expect(config.flow.widgetNames == ["power", "battery", "second", "autarky", "goal"])
        #expect(bars[0].measure == .battery(BatteryGauge(capacityKWh: 10.5)))
        #expect(bars[0].shared == SharedContent(label: "Battery", icon: "battery.100percent", accentColor: "green"))
        #expect(bars[0].policy.minIntervalSeconds == 30)
        #expect(bars[1].measure == .battery(BatteryGauge(rate: .sum([RateTerm(source: "battery")]), level: "other")))
        #expect(bars[1].flow == "power" && !bars[1].staleMarker)
        #expect(bars[2].measure == .selfSufficiency && bars[2].shared.subtitle == "today")
        #expect(bars[3].measure == .productionGoal(goalKWh: 25))
        // The only flow widget is the one they read.
        #expect(bars.allSatisfy { config.flow.flowWidget(for: $0)?.name == "power" })
    }

    /// Each broken progress widget names the key path and the line; the flow widget may come after.
    @Test(arguments: [
        ("battery with no level anywhere",
         "sources:\n  b: {topic: b}\nwidgets:\n  bar:\n    template: progress\n    progress: {of: battery, rate: b}\n  power: {template: flow, flow: {storage: {rate: b}}}\n",
         "line 6: widgets.bar.progress.level: of: battery needs a level: a % source here, or the storage level of a flow widget; flow widget 'power' has no storage level"),
        ("battery with no flow widget at all",
         "sources:\n  b: {topic: b}\nwidgets:\n  bar:\n    template: progress\n    progress:\n      of: battery\n",
         "line 7: widgets.bar.progress.rate: of: battery needs a rate: a power source (+ filling) here, or the storage rate of a flow widget; the config has no flow widget"),
        ("flow naming no flow widget",
         Self.home + "  bar:\n    template: progress\n    progress: {of: self_sufficiency, flow: pwoer}\n",
         "line 18: widgets.bar.progress.flow: 'pwoer' is not a flow widget (flow widgets: power)"),
        ("flow naming a progress widget",
         Self.home + "  goal: {template: progress, progress: {of: production_goal, goal_kwh: 9}}\n  bar:\n    template: progress\n    progress:\n      of: self_sufficiency\n      flow: goal\n",
         "line 21: widgets.bar.progress.flow: 'goal' is not a flow widget (flow widgets: power)"),
        ("missing goal_kwh",
         Self.home + "  goal:\n    template: progress\n    progress: {of: production_goal}\n",
         "line 18: widgets.goal.progress.goal_kwh: is required"),
        ("a goal of 0 kWh",
         Self.home + "  goal:\n    template: progress\n    progress: {of: production_goal, goal_kwh: 0}\n",
         "line 18: widgets.goal.progress.goal_kwh: must be more than 0 kWh"),
        ("two flow widgets and no flow:",
         Self.home + "  more: {template: flow, flow: {output: {rate: solar}}}\n  bar:\n    template: progress\n    progress: {of: self_sufficiency}\n",
         "line 19: widgets.bar.progress: of: self_sufficiency reads the day's totals of a flow widget (flow widgets: power, more): say which with flow:"),
        ("self-sufficiency without an import total",
         "sources:\n  g: {topic: g}\nwidgets:\n  power: {template: flow, flow: {exchange: {rate: g, total: export}, output: {rate: balance, total: integrate}}}\n  bar: {template: progress, progress: {of: self_sufficiency}}\n",
         "line 5: widgets.bar.progress: of: self_sufficiency reads today's import of flow widget 'power': its exchange needs total: import"),
        ("self-sufficiency without an output total",
         "sources:\n  g: {topic: g}\nwidgets:\n  power: {template: flow, flow: {exchange: {rate: g, total: import}, output: {rate: balance}}}\n  bar: {template: progress, progress: {of: self_sufficiency}}\n",
         "line 5: widgets.bar.progress: of: self_sufficiency reads today's output total of flow widget 'power', and its output has none"),
        ("production goal without input totals",
         "sources:\n  s: {topic: s}\nwidgets:\n  power: {template: flow, flow: {inputs: [{rate: s}]}}\n  bar: {template: progress, progress: {of: production_goal, goal_kwh: 5}}\n",
         "line 5: widgets.bar.progress: of: production_goal reads the inputs' totals of flow widget 'power', and none of its inputs has a total"),
        ("a rate that is no power",
         Self.home + "  bar:\n    template: progress\n    progress: {of: battery, rate: [battery, -soc], level: other}\n",
         "line 18: widgets.bar.progress.rate: source 'soc' is level (%); rate needs power"),
        ("a rate of an unknown source",
         Self.home + "  bar:\n    template: progress\n    progress: {of: battery, rate: batery, level: other}\n",
         "line 18: widgets.bar.progress.rate: unknown source 'batery'"),
        ("a level that is no level",
         Self.home + "  bar:\n    template: progress\n    progress: {of: battery, level: solar}\n",
         "line 18: widgets.bar.progress.level: source 'solar' is power (W); level needs level"),
        ("an unknown measure",
         Self.home + "  bar:\n    template: progress\n    progress: {of: autarky}\n",
         "line 18: widgets.bar.progress.of: 'autarky' is not one of battery, self_sufficiency, production_goal"),
        ("a key of another measure",
         Self.home + "  bar:\n    template: progress\n    progress: {of: self_sufficiency, goal_kwh: 3}\n",
         "line 18: widgets.bar.progress.goal_kwh: unknown key"),
        ("a capacity of 0",
         Self.home + "  bar:\n    template: progress\n    progress: {of: battery, capacity_kwh: 0}\n",
         "line 18: widgets.bar.progress.capacity_kwh: must be more than 0 kWh"),
        ("a flow key on a progress widget",
         Self.home + "  bar:\n    template: progress\n    unit: W\n    progress: {of: battery}\n",
         "line 18: widgets.bar.unit: unknown key"),
        ("no progress mapping",
         Self.home + "  bar:\n    template: progress\n",
         "line 17: widgets.bar.progress: is required"),
    ])
    func brokenProgressWidgetNamesKeyAndLine(_ name: String, text: String, expected: String) {
        let error = #expect(throws: ConfigError.self, "\(name)") { try DaemonConfig.parse(text, file: "config.yaml") }
        #expect(error?.description.contains("config.yaml: \(expected)") == true, "\(name): \(error?.description ?? "no error")")
    }

    /// The example config's bars are right: the battery bar it has, and the two it shows commented
    /// out (from `  # autarky:` on), once uncommented.
    @Test func theExamplesBarsLoad() throws {
        let example = try String(contentsOf: Repository.root.appendingPathComponent("Config/example.yaml"), encoding: .utf8)
        var uncommenting = false
        let lines = example.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            if line.hasPrefix("  # autarky:") { uncommenting = true }
            return uncommenting && line.hasPrefix("  # ") ? "  " + line.dropFirst(4) : line
        }
        #expect(uncommenting, "the example shows the commented bars")
        let config = try DaemonConfig.parse(lines.joined(separator: "\n"), file: "example.yaml")
        #expect(config.flow.progressWidgets.map(\.measure) == [
            .battery(BatteryGauge(capacityKWh: 10)), .selfSufficiency, .productionGoal(goalKWh: 25),
        ])
        #expect(try DaemonConfig.parse(example, file: "example.yaml").flow.progressWidgets.map(\.name) == ["battery"])
    }

    /// `check` says what each bar is made of.
    @Test func checkDescribesTheBars() throws {
        let folder = TemporaryFolder()
        let file = try folder.write("bars.yaml", Self.home + """
              battery: {template: progress, progress: {of: battery, capacity_kwh: 10}}
              autarky: {template: progress, progress: {of: self_sufficiency}}
              goal: {template: progress, progress: {of: production_goal, goal_kwh: 25}}
            """)
        let run = try runFlowbridge(["check", "--config", file, "--state", folder.url.appendingPathComponent("state.json").path])
        #expect(run.status == 0, "\(run.err)")
        #expect(run.out.contains("config OK: 6 sources, 4 widgets"), "\(run.out)")
        #expect(run.out.contains("widget battery (progress of battery, reads flow widget power)"))
        #expect(run.out.contains("  value = level soc [bms/soc, %] / 100"))
        #expect(run.out.contains("  today = the storage total of power (charge)"))
        #expect(run.out.contains("  capacity 10 kWh: Full in / Empty in; while charging, start_date and end_date advance the bar on the phone"))
        #expect(run.out.contains("  value = 1 − import today / output today of power (exchange total counter:grid_in, output total integrate), within 0…1"))
        #expect(run.out.contains("  value = today's production of power (its inputs' totals) / 25 kWh, at most 1"))
    }
}
