import Commands
import Configuration
import FlowCore
import FoundationEssentials
import Platform
import ReplaySupport
import TestSupport
import Testing

/// A battery and a grid whose powers are magnitudes and whose directions come from other topics,
/// through `replay`: an LG ESS through pyess (the flags under `ess/home/direction`), and a grid
/// meter whose signed number gives the grid's direction.
@Suite struct DirectionReplayTests {
    /// Where the grid's direction comes from.
    enum GridDirection: String, Sendable, CaseIterable {
        /// pyess's two flags, is_grid_buying_ and is_grid_selling_.
        case buyingAndSelling = "buying and selling flags"
        /// The selling flag alone: 0 is importing.
        case sellingOnly = "the selling flag alone"
        /// A meter's signed number (+ importing): its sign, the ESS's magnitude.
        case signedMeter = "a signed meter's sign"

        var config: String {
            switch self {
            case .buyingAndSelling: "{positive: grid_buying, negative: grid_selling}"
            case .sellingOnly: "{negative: grid_selling}"
            case .signedMeter: "{sign_of: meter}"
            }
        }
    }

    static func config(grid: GridDirection) -> String {
        """
        timezone: UTC
        sources:
          solar:               {topic: ess/home/statistics/pcs_pv_total_power}
          battery:             {topic: ess/home/statistics/batconv_power, direction: {positive: battery_charging, negative: battery_discharging}}
          battery_charging:    {topic: ess/home/direction/is_battery_charging_}
          battery_discharging: {topic: ess/home/direction/is_battery_discharging_}
          grid:                {topic: ess/home/statistics/grid_power, direction: \(grid.config)}
          grid_buying:         {topic: ess/home/direction/is_grid_buying_}
          grid_selling:        {topic: ess/home/direction/is_grid_selling_}
          meter:               {topic: shellies/grid/power}
        widgets:
          home:
            template: flow
            flow:
              inputs: [{name: Solar, rate: solar, total: integrate}]
              storage: {name: Battery, rate: battery, total: charge}
              exchange: {name: Grid, rate: grid, total: import}
              output: {name: Home, rate: balance, total: integrate}
        """
    }

    /// One moment of the home: solar, the battery and the grid with the widget's signs.
    struct Moment: Sendable {
        var solarW: Double
        var batteryW: Double
        var gridW: Double
        /// Both battery flags at 0 although the ESS reports a few watts: it idles.
        var batteryIdle = false
    }

    /// One poll as essmqtt publishes it: the statistics (magnitudes), then the direction flags.
    static func poll(_ moment: Moment, at seconds: Double, grid: GridDirection) -> [String] {
        let time = RFC3339.format(Date(timeIntervalSince1970: start + seconds))
        func flag(_ on: Bool) -> String { on ? "1" : "0" }
        var messages = [
            ("ess/home/statistics/pcs_pv_total_power", JSONValue.format(moment.solarW)),
            ("ess/home/statistics/batconv_power", JSONValue.format(abs(moment.batteryW))),
            ("ess/home/statistics/grid_power", JSONValue.format(abs(moment.gridW))),
        ]
        // A meter of its own, a little off the ESS's figure: only its sign is read.
        if grid == .signedMeter { messages.append(("shellies/grid/power", JSONValue.format(moment.gridW * 1.01))) }
        messages += [
            ("ess/home/direction/is_battery_charging_", flag(!moment.batteryIdle && moment.batteryW > 0)),
            ("ess/home/direction/is_battery_discharging_", flag(!moment.batteryIdle && moment.batteryW < 0)),
            ("ess/home/direction/is_grid_selling_", flag(moment.gridW < 0)),
            ("ess/home/direction/is_grid_buying_", flag(moment.gridW > 0)),
        ]
        return messages.map { traceLine(time, $0.0, $0.1) }
    }

    /// 2026-06-01T08:00:00Z.
    static let start = 1_780_300_800.0

    /// An hour polled every 10 s (0 … 3600 s), `moment(seconds)` at each poll.
    static func hour(grid: GridDirection, _ moment: (Double) -> Moment) -> [String] {
        stride(from: 0.0, through: 3600, by: 10).flatMap { poll(moment($0), at: $0, grid: grid) }
    }

    /// An hour at one moment, what the widget shows, and the accounts it counts (kWh, by hand:
    /// the rates for one hour).
    struct Scene: Sendable, CustomTestStringConvertible {
        var name: String
        var moment: Moment
        var shown: [String: Double]
        var accountsKWh: [EnergyAccount: Double]
        var testDescription: String { name }
    }

    static let scenes: [Scene] = [
        Scene(name: "filling in the sun, exporting", moment: Moment(solarW: 3000, batteryW: 1000, gridW: -1500),
              shown: ["storage.rate": 1000, "exchange.rate": -1500, "output.rate": 500, "storage.total": 1, "exchange.total": 0],
              accountsKWh: [.production: 3, .charged: 1, .discharged: 0, .imported: 0, .exported: 1.5, .consumption: 0.5]),
        Scene(name: "draining at night, importing", moment: Moment(solarW: 0, batteryW: -800, gridW: 400),
              shown: ["storage.rate": -800, "exchange.rate": 400, "output.rate": 1200, "storage.total": 0, "exchange.total": 0.4],
              accountsKWh: [.production: 0, .charged: 0, .discharged: 0.8, .imported: 0.4, .exported: 0, .consumption: 1.2]),
        Scene(name: "idle: both battery flags 0", moment: Moment(solarW: 500, batteryW: 12, gridW: 100, batteryIdle: true),
              shown: ["storage.rate": 0, "exchange.rate": 100, "output.rate": 600, "storage.total": 0, "exchange.total": 0.1],
              accountsKWh: [.production: 0.5, .charged: 0, .discharged: 0, .imported: 0.1, .exported: 0, .consumption: 0.6]),
    ]

    /// + filling and − draining, + importing and − exporting, whichever way the grid's direction
    /// comes; every account as the hour's rates make it.
    @Test(arguments: scenes, GridDirection.allCases)
    func aMagnitudeTakesItsSignFromItsDirection(_ scene: Scene, grid: GridDirection) throws {
        let (lines, engine) = try replay(config: Self.config(grid: grid), trace: Self.hour(grid: grid) { _ in scene.moment })
        let content = try #require(lines.last?["content"]?["flow"], "no document")
        for (path, expected) in scene.shown.sorted(by: { $0.key < $1.key }) {
            #expect(content.value(at: path)?.numberValue == expected, "\(path): \(content.value(at: path).map(\.description) ?? "nothing")")
        }
        let accounts = try #require(engine.accountTotals(ofWidget: "home"))
        for (account, expected) in scene.accountsKWh.sorted(by: { $0.key < $1.key }) {
            #expect(abs((accounts[account] ?? 0) - expected) < 1e-9, "\(account): \(accounts[account] ?? 0) kWh, expected \(expected)")
        }
    }

    /// The battery turns from filling to draining at 30 min: the widget shows + then −, never a
    /// guess between them (the flags' one-poll 0/0 within the settle window does not show), and
    /// each side of the day counts its own half hour, up to the one poll in which it turned
    /// (essmqtt publishes the new magnitude a moment before its flags).
    @Test(arguments: GridDirection.allCases)
    func aBatteryThatTurnsShowsEachDirectionInTurn(grid: GridDirection) throws {
        let trace = Self.hour(grid: grid) { seconds in
            Moment(solarW: 0, batteryW: seconds < 1800 ? 1000 : -1000, gridW: seconds < 1800 ? 1500 : -200)
        }
        let (lines, engine) = try replay(config: Self.config(grid: grid), trace: trace)
        let rates = documents(lines).compactMap { $0["flow"]?["storage"]?["rate"]?.numberValue }
        let signs = rates.map { $0 > 0 ? 1 : $0 < 0 ? -1 : 0 }.reduce(into: [Int]()) { if $0.last != $1 { $0.append($1) } }
        #expect(signs == [1, -1], "\(rates)")
        let accounts = try #require(engine.accountTotals(ofWidget: "home"))
        let charged = try #require(accounts[.charged])
        let discharged = try #require(accounts[.discharged])
        let poll = 10.0 / 3600  // kWh at 1000 W
        #expect(abs(charged + discharged - 1) < 1e-9, "charge \(charged) + discharge \(discharged)")
        #expect(charged >= 0.5 - poll - 1e-9 && charged <= 0.5 + poll + 1e-9, "\(charged)")
        #expect(abs((accounts[.imported] ?? 0) - 0.75) <= 1.5 * poll + 1e-9, "\(accounts[.imported] ?? 0)")
    }

    /// Before the flags have ever come the battery has no sign: it is not shown, and the derived
    /// home's rate, which needs it, is not either; the battery counts nothing, so the home's day
    /// (the balance of what the meters counted) has the battery's half too. Solar shows meanwhile.
    @Test func withoutItsFlagsTheBatteryIsNotShown() throws {
        let trace = Self.hour(grid: .buyingAndSelling) { _ in Moment(solarW: 2000, batteryW: 500, gridW: -1000) }
            .filter { !$0.contains("is_battery_") }
        let (lines, engine) = try replay(config: Self.config(grid: .buyingAndSelling), trace: trace)
        let content = try #require(lines.last?["content"]?["flow"])
        #expect(content["storage"] == nil, "\(content)")
        #expect(content["output"] == nil, "\(content)")
        #expect(content["exchange"]?["rate"] == -1000)
        #expect(content.value(at: "inputs[0].rate") == 2000)
        let accounts = try #require(engine.accountTotals(ofWidget: "home"))
        #expect(accounts[.charged] == 0 && accounts[.discharged] == 0, "\(accounts)")
        // An hour of 2000 W of solar less 1000 W exported.
        #expect(abs((accounts[.consumption] ?? 0) - 1) < 1e-6, "\(accounts)")
        #expect(engine.sourceStats["battery"]?.readings == 361)
        #expect(engine.readings["battery"] == nil)
    }

    /// A flag published as a word (on/off, true/false) reads as 1/0; anything else is refused,
    /// the log naming the flag's source, and the battery keeps the direction it had.
    @Test func aFlagAsAWordReadsAndAnythingElseIsRefused() throws {
        var trace = Self.poll(Moment(solarW: 0, batteryW: -600, gridW: 600), at: 0, grid: .buyingAndSelling)
        let at = RFC3339.format(Date(timeIntervalSince1970: Self.start + 10))
        trace += [
            traceLine(at, "ess/home/direction/is_battery_charging_", "ON"),
            traceLine(at, "ess/home/direction/is_battery_discharging_", "off"),
        ]
        let (lines, _) = try replay(config: Self.config(grid: .buyingAndSelling), trace: trace)
        #expect(lines.last?["content"]?["flow"]?["storage"]?["rate"] == 600)
        let later = RFC3339.format(Date(timeIntervalSince1970: Self.start + 20))
        let run = try replayWithLog(config: Self.config(grid: .buyingAndSelling), trace: trace + [
            traceLine(later, "ess/home/direction/is_battery_discharging_", "maybe"),
            traceLine(later, "ess/home/direction/is_battery_charging_", "2"),
        ])
        let log = run.log.map(\.diagnostic.message)
        #expect(log.contains { $0.hasPrefix("source 'battery_discharging' (topic ess/home/direction/is_battery_discharging_): 'maybe' is not a number and not in the source's map (false, off, on, true)") }, "\(log)")
        #expect(log.contains { $0.hasPrefix("source 'battery_charging' (topic ess/home/direction/is_battery_charging_): 2 is not a direction flag") }, "\(log)")
        #expect(run.lines.last?["content"]?["flow"]?["storage"]?["rate"] == 600)
    }
}
