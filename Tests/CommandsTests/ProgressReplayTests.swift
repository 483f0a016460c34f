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

/// Progress widgets through `replay`: the battery's self-advancing window, the day's
/// self-sufficiency and production goal against hand-computed values, and their pictures.
@Suite struct ProgressReplayTests {
    /// The documents one widget showed, push by push (each patch applied to the one before), with
    /// the push's time and its patch.
    static func documents(of widget: String, in lines: [JSONValue]) -> [(at: Date, patch: JSONValue, content: JSONValue)] {
        var shown = JSONValue.null
        return lines.compactMap { line in
            guard line["widget"]?.stringValue == widget, let patch = line["patch"]?["content"],
                let at = line["t"]?.stringValue.flatMap(RFC3339.parse)
            else { return nil }
            shown = MergePatch.apply(patch, to: shown)
            return (at, patch, shown)
        }
    }

    /// Every document the widgets were pushed is one the widget API takes, at its push time.
    static func expectEveryDocumentValid(_ lines: [JSONValue], widgets: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        for widget in widgets {
            let pushed = documents(of: widget, in: lines)
            #expect(!pushed.isEmpty, "\(widget) was pushed", sourceLocation: sourceLocation)
            for (at, _, content) in pushed {
                let document = try WidgetContent(json: content)
                #expect(document.validate(now: at).isEmpty, "\(widget): \(content)", sourceLocation: sourceLocation)
            }
        }
    }

    /// Row `index` of a document's `stat_rows`, if it has one.
    static func row(_ content: JSONValue?, _ index: Int) -> JSONValue? {
        guard let rows = content?["stat_rows"]?.arrayValue, rows.indices.contains(index) else { return nil }
        return rows[index]
    }

    static func fraction(_ content: JSONValue, at now: Date) throws -> Double {
        let start = try #require(content["start_date"]?.stringValue.flatMap(RFC3339.parse))
        let end = try #require(content["end_date"]?.stringValue.flatMap(RFC3339.parse))
        return now.timeIntervalSince(start) / end.timeIntervalSince(start)
    }

    static let battery = """
        timezone: Europe/Berlin
        sources:
          battery: {topic: "N/c0619ab1d2e3/system/0/Dc/Battery/Power", json: value}
          soc:     {topic: "N/c0619ab1d2e3/system/0/Dc/Battery/Soc", json: value, unit: "%"}
        widgets:
          power:
            template: flow
            flow: {storage: {name: Battery, rate: battery, level: soc, total: charge}}
          bar:
            template: progress
            label: Battery
            accent_color: green
            progress: {of: battery, capacity_kwh: 10}
        """

    /// Victron's battery charging at 1000 W at 76 %: the window's fraction at the push time is the
    /// level, and it ends when 2.4 kWh more are in (2 h 24 min). Then the battery drains: the
    /// dates go, each as an explicit `null`, and the bar keeps its value.
    @Test func aChargingBatterysWindowThenDraining() throws {
        let power = "N/c0619ab1d2e3/system/0/Dc/Battery/Power"
        let soc = "N/c0619ab1d2e3/system/0/Dc/Battery/Soc"
        let trace = [
            traceLine("2026-06-01T10:00:00Z", soc, #"{"value": 76}"#),
            traceLine("2026-06-01T10:00:00.300Z", power, #"{"value": 1000.4}"#),
            traceLine("2026-06-01T10:01:00Z", power, #"{"value": 996}"#),
            traceLine("2026-06-01T10:05:00Z", power, #"{"value": -512}"#),
            traceLine("2026-06-01T10:05:30Z", soc, #"{"value": 76}"#),
        ]
        let (lines, _) = try replay(config: Self.battery, trace: trace)
        let pushed = Self.documents(of: "bar", in: lines)
        let (at, patch, charging) = try #require(pushed.first)
        #expect(at == RFC3339.parse("2026-06-01T10:00:02Z"))  // settled
        #expect(patch == charging)  // the first push is the whole document
        #expect(charging["value"] == 0.76)
        #expect(charging["trend"] == "up")
        #expect(abs(try Self.fraction(charging, at: at) - 0.76) < 1e-4)
        let end = try #require(charging["end_date"]?.stringValue.flatMap(RFC3339.parse))
        #expect(abs(end.timeIntervalSince(at) - 8640) <= 1, "\(end)")
        #expect(Self.row(charging, 0) == ["label": "Charging", "value": "1000", "unit": "W"])
        #expect(Self.row(charging, 2) == ["label": "Full in", "value": "2 h 24 min"])

        let (drainedAt, removal, draining) = try #require(pushed.first { $0.content["trend"] == "down" })
        #expect(drainedAt == RFC3339.parse("2026-06-01T10:05:02Z"))
        #expect(removal["start_date"] == .null && removal["end_date"] == .null)
        #expect(draining["start_date"] == nil && draining["end_date"] == nil)
        #expect(draining["value"] == 0.76)
        #expect(Self.row(draining, 0) == ["label": "Draining", "value": "510", "unit": "W"])
        #expect(Self.row(draining, 2) == ["label": "Empty in", "value": "14 h 54 min"])  // 7.6 kWh at 510 W
        #expect(lines.last?["content"] == draining, "--final shows the last document")
        try Self.expectEveryDocumentValid(lines, widgets: ["power", "bar"])
    }

    /// A synthetic day (UTC), each phase a constant power, switched at the full hour:
    ///
    /// | hours | solar | grid | battery | home |
    /// |---|---|---|---|---|
    /// | 0–6 | 0 | +400 | 0 | 400 |
    /// | 6–12 | 3000 | −1000 | +1000 | 1000 |
    /// | 12–18 | 1500 | 0 | 0 | 1500 |
    /// | 18–20 | 0 | +200 | −600 | 800 |
    static let phases: [(fromHour: Int, solar: Int, grid: Int, battery: Int)] = [
        (0, 0, 400, 0), (6, 3000, -1000, 1000), (12, 1500, 0, 0), (18, 0, 200, -600),
    ]

    static let day = """
        timezone: UTC
        sources:
          solar:   {topic: pv}
          grid:    {topic: grid}
          battery: {topic: bat}
        widgets:
          power:
            template: flow
            flow:
              inputs:   [{name: Solar, rate: solar, total: integrate}]
              storage:  {name: Battery, rate: battery, total: charge}
              exchange: {name: Grid, rate: grid, total: import}
              output:   {name: Home, rate: balance, total: integrate}
            policy: {min_interval: 0s, settle: 0s, total_step: 0.001}
          autarky:
            template: progress
            label: Self-sufficiency
            progress: {of: self_sufficiency}
            policy: {min_interval: 0s, settle: 0s, total_step: 0.001}
          goal:
            template: progress
            label: Solar goal
            progress: {of: production_goal, goal_kwh: 30}
            policy: {min_interval: 0s, settle: 0s, total_step: 0.001}
        """

    /// One reading per meter and minute from 00:00 to 20:00; at a switch the old values are read
    /// once more at the full hour, so every phase counts exactly its hours.
    static func dayTrace() -> [String] {
        var lines: [String] = []
        func read(_ phase: (fromHour: Int, solar: Int, grid: Int, battery: Int), at minute: Int) {
            let time = RFC3339.format(Date(timeIntervalSince1970: 1_780_272_000 + Double(minute) * 60))  // 2026-06-01
            lines.append(traceLine(time, "pv", "\(phase.solar)"))
            lines.append(traceLine(time, "grid", "\(phase.grid)"))
            lines.append(traceLine(time, "bat", "\(phase.battery)"))
        }
        for minute in 0...1200 {
            let phase = phases.last { $0.fromHour * 60 <= minute }!
            if let previous = phases.last(where: { $0.fromHour * 60 < minute }), previous.fromHour != phase.fromHour {
                read(previous, at: minute)
            }
            read(phase, at: minute)
        }
        return lines
    }

    struct Checkpoint: Sendable, CustomTestStringConvertible {
        var time: String
        /// By hand: Σ power × hours of the phases so far.
        var homeKWh: Double
        var importKWh: Double
        var solarKWh: Double
        var testDescription: String { time }
        /// 1 − import / home, in whole percent.
        var selfSufficiency: Double { (100 * (1 - importKWh / homeKWh)).rounded() / 100 }
        /// solar / 30 kWh, in whole percent, at most 1.
        var goal: Double { min(1, (100 * solarKWh / 30).rounded() / 100) }
    }

    static let checkpoints = [
        // 6 h × 400 W.
        Checkpoint(time: "2026-06-01T06:00:00Z", homeKWh: 2.4, importKWh: 2.4, solarKWh: 0),
        // + 6 h × 1000 W at home, 6 h × 3000 W of solar, nothing imported.
        Checkpoint(time: "2026-06-01T12:00:00Z", homeKWh: 8.4, importKWh: 2.4, solarKWh: 18),
        // + 6 h × 1500 W at home, 6 h × 1500 W of solar.
        Checkpoint(time: "2026-06-01T18:00:00Z", homeKWh: 17.4, importKWh: 2.4, solarKWh: 27),
        // + 2 h × 800 W at home, 2 h × 200 W imported.
        Checkpoint(time: "2026-06-01T20:00:00Z", homeKWh: 19, importKWh: 2.8, solarKWh: 27),
    ]

    /// Self-sufficiency (1 − import / home) and the production goal (solar / 30 kWh) at the end of
    /// each phase match the values computed by hand from the table, and so do their rows.
    @Test func selfSufficiencyAndTheProductionGoalOverASyntheticDay() throws {
        let (lines, _) = try replay(config: Self.day, trace: Self.dayTrace())
        let autarky = Self.documents(of: "autarky", in: lines)
        let goal = Self.documents(of: "goal", in: lines)
        #expect([0.71, 0.86, 0.85] == Self.checkpoints.dropFirst().map(\.selfSufficiency), "the table's arithmetic")
        for checkpoint in Self.checkpoints {
            let at = try #require(RFC3339.parse(checkpoint.time))
            let shown = try #require(autarky.last { $0.at <= at }?.content, "\(checkpoint.time)")
            #expect(shown["value"]?.numberValue == checkpoint.selfSufficiency, "\(checkpoint.time)")
            #expect(shown["stat_rows"] == [
                ["label": "Home", "value": .string(JSONValue.format(checkpoint.homeKWh)), "unit": "kWh"],
                ["label": "From grid", "value": .string(JSONValue.format(checkpoint.importKWh)), "unit": "kWh"],
                ["label": "Solar today", "value": .string(JSONValue.format(checkpoint.solarKWh)), "unit": "kWh"],
            ], "\(checkpoint.time)")
            let produced = try #require(goal.last { $0.at <= at }?.content, "\(checkpoint.time)")
            #expect(produced["value"]?.numberValue == checkpoint.goal, "\(checkpoint.time)")
            #expect(Self.row(produced, 0)?["value"] == .string(JSONValue.format(checkpoint.solarKWh)), "\(checkpoint.time)")
            #expect(Self.row(produced, 1) == ["label": "Goal", "value": "30", "unit": "kWh"])
        }
        // The evening: no sun now.
        #expect(Self.row(goal.last?.content, 2) == ["label": "Now", "value": "0", "unit": "W"])
        #expect(autarky.first?.content["label"] == "Self-sufficiency")
        try Self.expectEveryDocumentValid(lines, widgets: ["power", "autarky", "goal"])
    }

    // MARK: - Pictures

    static let homeDay = Repository.fixtures.appendingPathComponent("home-day.yaml")
    static let homeDayTrace = Repository.fixtures.appendingPathComponent("home-day.ndjson").path

    /// The bundled day's config with three bars beside its flow widget.
    static func homeDayWithBars(in folder: TemporaryFolder) throws -> String {
        let config = try String(contentsOf: homeDay, encoding: .utf8) + """

              battery:
                template: progress
                label: Battery
                accent_color: green
                progress: {of: battery, capacity_kwh: 10}
              autarky:
                template: progress
                label: Self-sufficiency
                progress: {of: self_sufficiency}
              goal:
                template: progress
                label: Solar goal
                progress: {of: production_goal, goal_kwh: 20}
            """
        return try folder.write("bars.yaml", config)
    }

    /// The fraction a progress picture draws.
    static func drawnFraction(_ svg: String) throws -> Double {
        let marker = try #require(svg.firstRange(of: #"class="progress" data-fraction=""#))
        let rest = svg[marker.upperBound...]
        return try #require(Double(String(rest.prefix { $0 != "\"" })))
    }

    /// `replay --svg` draws every widget, the bars too: each picture shows the bar of the widget's
    /// last document at the replay's end.
    @Test func replayDrawsTheBars() throws {
        let folder = TemporaryFolder()
        let config = try Self.homeDayWithBars(in: folder)
        let pictures = folder.url.appendingPathComponent("pictures").path
        let run = try runFlowbridge(["replay", "--config", config, "--final", "--svg", pictures, Self.homeDayTrace])
        #expect(run.status == 0, "\(run.err)")
        let files = try FileManager.default.contentsOfDirectory(atPath: pictures).sorted()
        #expect(files == ["autarky.svg", "battery.svg", "goal.svg", "power-day-2026-06-01.svg", "power.svg"])
        let finals = try run.out.split(separator: "\n").map { try JSONValue(parsing: Array($0.utf8)) }.filter { $0["content"] != nil }
        #expect(finals.compactMap { $0["widget"]?.stringValue } == ["power", "battery", "autarky", "goal"])
        for final in finals.dropFirst() {
            let widget = try #require(final["widget"]?.stringValue)
            let content = try #require(final["content"])
            let svg = try String(contentsOfFile: "\(pictures)/\(widget).svg", encoding: .utf8)
            #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
            #expect(content["start_date"] == nil, "the bundled day ends with the battery draining")
            #expect(try Self.drawnFraction(svg) == content["value"]?.numberValue, "\(widget)")
            #expect(svg.contains(">\(try #require(content["label"]?.stringValue))</text>"), "\(widget)")
            for row in content["stat_rows"]?.arrayValue?.prefix(3) ?? [] {
                #expect(svg.contains(">\(try #require(row["label"]?.stringValue))<"), "\(widget): \(row)")
            }
        }
    }

    /// `render` draws the bars from the saved state, at its latest time.
    @Test func renderDrawsTheBars() throws {
        let folder = TemporaryFolder()
        let config = try Self.homeDayWithBars(in: folder)
        let state = folder.url.appendingPathComponent("state.json").path
        let replay = try runFlowbridge(["replay", "--config", config, "--state", state, "--final", Self.homeDayTrace])
        #expect(replay.status == 0, "\(replay.err)")
        let finals = try replay.out.split(separator: "\n").map { try JSONValue(parsing: Array($0.utf8)) }.filter { $0["content"] != nil }
        let out = folder.url.appendingPathComponent("out").path
        let render = try runFlowbridge(["render", "--config", config, "--state", state, "--out", out])
        #expect(render.status == 0, "\(render.err)")
        #expect(render.out == ["power", "battery", "autarky", "goal"].map { "\(out)/\($0).svg\n" }.joined())
        for widget in ["battery", "autarky", "goal"] {
            let svg = try String(contentsOfFile: "\(out)/\(widget).svg", encoding: .utf8)
            let final = try #require(finals.first { $0["widget"]?.stringValue == widget }?["content"])
            // The state holds what the day's last push showed; the bar drawn from it agrees.
            #expect(try Self.drawnFraction(svg) == final["value"]?.numberValue, "\(widget)")
        }
    }
}
