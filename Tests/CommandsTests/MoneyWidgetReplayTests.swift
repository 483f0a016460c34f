import Commands
import Configuration
import FlowCore
import Foundation
import ReplaySupport
import TestSupport
import Testing

/// What the widgets show of the day's money, through `replay`, each case computed by hand in its
/// comments: the cost bar against its budget, the self-sufficiency bar's Saved row, and the flow
/// widget's subtitle.
@Suite struct MoneyWidgetReplayTests: TariffHome {
    /// Import 0.30, export 0.08, a standing charge of 0.48 a day (0.02 an hour: 0.24 at noon).
    static let tariff = "  import: {price: 0.30}\n  export: {price: 0.08}\n  standing_charge: 0.48"

    /// A home with solar beside the grid, its net cost in the subtitle, a cost bar with a
    /// budget of 2.00 and a self-sufficiency bar.
    static let home = config(
        tariff: tariff, sources: "  solar: {topic: home/solar, max_gap: 10m}", inputs: "[{name: Solar, rate: solar, total: integrate}]",
        subtitle: "{show: net_cost}",
        widgets: """
              cost:
                template: progress
                label: Today
                progress: {of: cost, budget: 2.00}
                policy: {min_interval: 0s, settle: 0s}
              autarky:
                template: progress
                progress: {of: self_sufficiency}
                policy: {min_interval: 0s, settle: 0s}
            """)

    /// Solar and grid at a constant power from 10:00 to 12:00 UTC, once a minute.
    static func day(solarW: Double, gridW: Double) -> [(Date, String, String)] {
        let (start, end) = (time("2026-06-01T10:00:00Z"), time("2026-06-01T12:00:00Z"))
        return minutes(from: start, to: end) { _ in gridW } + minutes(from: start, to: end, topic: "home/solar") { _ in solarW }
    }

    struct DayCase: Sendable, CustomTestStringConvertible {
        var name: String
        var solarW: Double
        var gridW: Double
        /// The cost bar's value and its rows' texts: Net, Import, Export, Saved.
        var value: Double
        var rows: [String]
        /// The self-sufficiency bar's value and its Saved row.
        var autarky: Double
        var saved: String
        var testDescription: String { name }
    }

    /// Two hours: I kWh imported, E exported, H consumed (solar + grid). At noon the standing
    /// charge is 0.24; net = 0.30 I − 0.08 E + 0.24; saved = what H cost from the grid alone
    /// (0.30 H + 0.24) − net; the bar is net / 2.00 in whole percent, within 0…1.
    static let days: [DayCase] = [
        // I = 2, H = 2: net 0.60 + 0.24 = 0.84, 0.84 / 2 = 0.42; saved 0.84 − 0.84 = 0.
        DayCase(
            name: "under budget", solarW: 0, gridW: 1000, value: 0.42, rows: ["€0.84 of €2.00", "€0.60", "€0.00", "€0.00"],
            autarky: 0, saved: "€0.00"),
        // I = 1, H = 4: net 0.30 + 0.24 = 0.54, 0.27; saved 1.20 + 0.24 − 0.54 = 0.90; 1 − 1/4.
        DayCase(
            name: "solar covers three quarters", solarW: 1500, gridW: 500, value: 0.27, rows: ["€0.54 of €2.00", "€0.30", "€0.00", "€0.90"],
            autarky: 0.75, saved: "€0.90"),
        // I = 6, H = 6: net 1.80 + 0.24 = 2.04, 2.04 / 2 = 1.02: the bar stops at 1.
        DayCase(
            name: "over budget clamps at 1", solarW: 0, gridW: 3000, value: 1, rows: ["€2.04 of €2.00", "€1.80", "€0.00", "€0.00"],
            autarky: 0, saved: "€0.00"),
        // E = 4, H = 2: net −0.32 + 0.24 = −0.08: the bar shows 0, and the Net row says the day
        // earned; saved 0.60 + 0.24 + 0.08 = 0.92.
        DayCase(
            name: "export earns more than the day costs: 0", solarW: 3000, gridW: -2000, value: 0,
            rows: ["earned €0.08; budget €2.00", "€0.00", "−€0.32", "€0.92"], autarky: 1, saved: "€0.92"),
    ]

    @Test(arguments: days)
    func theCostBarTheSavedRowAndTheSubtitle(_ test: DayCase) throws {
        let (lines, _) = try replay(config: Self.home, trace: Self.lines(Self.day(solarW: test.solarW, gridW: test.gridW)))
        let cost = try #require(ProgressReplayTests.documents(of: "cost", in: lines).last?.content)
        #expect(cost["value"]?.numberValue == test.value, "\(cost)")
        #expect(cost["stat_rows"] == .array(zip(["Net", "Import", "Export", "Saved"], test.rows).map { ["label": .string($0), "value": .string($1)] }))
        #expect(cost["label"] == "Today")
        let autarky = try #require(ProgressReplayTests.documents(of: "autarky", in: lines).last?.content)
        #expect(autarky["value"]?.numberValue == test.autarky)
        // Saved third, among the rows the large widget draws; Solar today after it.
        #expect(autarky["stat_rows"]?.arrayValue?.map { $0["label"]?.stringValue } == ["Home", "From grid", "Saved", "Solar today"])
        #expect(ProgressReplayTests.row(autarky, 2)?["value"] == .string(test.saved))
        let flow = try #require(ProgressReplayTests.documents(of: "home", in: lines).last?.content)
        let words = test.rows[0].split(separator: " ")
        let net = words[0] == "earned" ? "−" + String(words[1].dropLast()) : String(words[0])
        #expect(flow["subtitle"] == .string("Net today \(net)"))
        try ProgressReplayTests.expectEveryDocumentValid(lines, widgets: ["home", "cost", "autarky"])
    }

    /// Without an export price the bar has no Export row; without a tariff the self-sufficiency
    /// bar has no Saved row (its rows as they always were).
    @Test func rowsFollowWhatTheTariffPrices() throws {
        let importOnly = Self.home.replacingOccurrences(of: "  export: {price: 0.08}\n", with: "")
        let (lines, _) = try replay(config: importOnly, trace: Self.lines(Self.day(solarW: 1500, gridW: 500)))
        let cost = try #require(ProgressReplayTests.documents(of: "cost", in: lines).last?.content)
        #expect(cost["stat_rows"]?.arrayValue?.map { $0["label"]?.stringValue } == ["Net", "Import", "Saved"])
        let untariffed = """
            sources:
              grid: {topic: home/grid}
              solar: {topic: home/solar}
            widgets:
              home:
                template: flow
                flow:
                  inputs: [{name: Solar, rate: solar, total: integrate}]
                  output: {name: Home, rate: balance, total: integrate}
                  exchange: {name: Grid, rate: grid, total: import}
              autarky: {template: progress, progress: {of: self_sufficiency}}
            """
        let (plain, _) = try replay(config: untariffed, trace: Self.lines(Self.day(solarW: 1500, gridW: 500)))
        let autarky = try #require(ProgressReplayTests.documents(of: "autarky", in: plain).last?.content)
        #expect(autarky["stat_rows"]?.arrayValue?.map { $0["label"]?.stringValue } == ["Home", "From grid", "Solar today"])
    }

    /// 1 kW imported at 0.30 for an hour, read every 10 s: each reading adds 1000 W × 10 s =
    /// 1/360 kWh, 1/1200 of money; the hour 0.30. The bar (budget 10, so a percent is 0.10) is
    /// pushed when a cent it shows moves: 31 pushes (€0.00 … €0.30), not one per message (361).
    @Test func theBarIsPushedWhenACentMovesNotAtEveryMessage() throws {
        let config = Self.config(
            tariff: "  import: {price: 0.30}",
            widgets: "  cost:\n    template: progress\n    progress: {of: cost, budget: 10}\n    policy: {min_interval: 0s, settle: 0s}")
        let messages = Self.minutes(from: Self.time("2026-06-01T10:00:00Z"), to: Self.time("2026-06-01T11:00:00Z"), every: 10) { _ in 1000 }
        #expect(messages.count == 361)
        let (lines, _) = try replay(config: config, trace: Self.lines(messages), final: false)
        let pushed = ProgressReplayTests.documents(of: "cost", in: lines)
        let imported = pushed.compactMap { ProgressReplayTests.row($0.content, 1)?["value"]?.stringValue }
        #expect(imported == (0...30).map { String(format: "€0.%02d", $0) }, "\(imported)")
        // The bar moves with the cents it is made of: 0.30 / 10 is 3 %.
        #expect(pushed.last?.content["value"] == 0.03)
    }

    /// Time-of-use prices with fees 0.05 and VAT 20 %: (0.25 + 0.05) × 1.2 = 0.36 before 11:00,
    /// (0.35 + 0.05) × 1.2 = 0.48 from 11:00, each with the next zone's price and when. The
    /// subtitle changes once, at 11:00.
    @Test func theSubtitleShowsThePriceNow() throws {
        let tariff = """
              import:
                zones: [{from: "11:00", to: "22:00", price: 0.35}, {price: 0.25}]
                fees: 0.05
                vat: 20%
            """
        let config = Self.config(tariff: tariff, subtitle: "{show: price_now}")
        let messages = Self.minutes(from: Self.time("2026-06-01T10:00:00Z"), to: Self.time("2026-06-01T12:00:00Z")) { _ in 1000 }
        let (lines, _) = try replay(config: config, trace: Self.lines(messages))
        let shown = ProgressReplayTests.documents(of: "home", in: lines).filter { $0.patch["subtitle"] != nil }
        #expect(shown.map(\.content["subtitle"]) == ["Now €0.360/kWh, €0.480 from 11:00", "Now €0.480/kWh, €0.360 from 22:00"])
        #expect(shown.last?.at == Self.time("2026-06-01T11:00:00Z"))
    }

    /// A price source (EUR/MWh) that sends 300 at 10:00 only: its price holds for its
    /// stale_after (20 min), then the subtitle says there is none, never a made-up one.
    @Test func theSubtitleSaysWhenThereIsNoPrice() throws {
        let config = Self.config(
            tariff: "  import: {price: price}", sources: "  price: {topic: market/price, unit: EUR/MWh, stale_after: 20m}",
            subtitle: "{show: price_now}")
        let start = Self.time("2026-06-01T10:00:00Z")
        let messages = [(start, "market/price", "300")] + Self.minutes(from: start, to: Self.time("2026-06-01T11:00:00Z")) { _ in 1000 }
        let (lines, _) = try replay(config: config, trace: Self.lines(messages))
        let shown = ProgressReplayTests.documents(of: "home", in: lines).filter { $0.patch["subtitle"] != nil }
        #expect(shown.map(\.content["subtitle"]) == ["Now €0.300/kWh", "No price now"])
        #expect(shown.last?.at == Self.time("2026-06-01T10:20:00Z"))
    }

    /// `replay --svg` and `render` (from the state the replay saved) draw the cost bar: its
    /// fraction and the three rows the large widget draws (Net, the fourth, is on the wire).
    @Test func theCostBarIsDrawn() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("home.yaml", Self.home)
        let trace = try folder.write("day.ndjson", Self.lines(Self.day(solarW: 1500, gridW: 500)).joined(separator: "\n") + "\n")
        let pictures = folder.url.appendingPathComponent("pictures").path
        let state = folder.url.appendingPathComponent("state.json").path
        let run = try runFlowbridge(["replay", "--config", config, "--state", state, "--final", "--svg", pictures, trace])
        #expect(run.status == 0, "\(run.err)")
        let final = try #require(try run.out.split(separator: "\n").map { try JSONValue(parsing: Array($0.utf8)) }
            .first { $0["widget"] == "cost" && $0["content"] != nil }?["content"])
        #expect(final["value"] == 0.27)
        let out = folder.url.appendingPathComponent("out").path
        let render = try runFlowbridge(["render", "--config", config, "--state", state, "--out", out])
        #expect(render.status == 0, "\(render.err)")
        for svgFile in ["\(pictures)/cost.svg", "\(out)/cost.svg"] {
            let svg = try String(contentsOfFile: svgFile, encoding: .utf8)
            #expect(try ProgressReplayTests.drawnFraction(svg) == 0.27, "\(svgFile)")
            // The large card's three rows: the net first, the figure people want.
            for text in [">Today</text>", ">Net<", ">€0.54 of €2.00<", ">Import<", ">€0.30<", ">Export<"] {
                #expect(svg.contains(text), "\(svgFile): \(text)")
            }
        }
    }
}
