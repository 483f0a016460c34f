import Commands
import Configuration
import FlowCore
import FoundationEssentials
import Platform
import TestSupport
import Testing

/// Every direction of every node counted over a day, from integration or from counters, kept
/// across a restart, closed with a line that says whether the accounts add up.
@Suite struct AccountTests {
    /// 2026-06-01T00:00:00Z.
    static let midnight = 1_780_272_000.0

    /// One meter's message per hour (hour 0…24) with every reading, so that every term of the
    /// balance is new at once. Solar 2500 W all day. Grid: 0, rising to 3000 W at 07:00, 3000 W
    /// to 10:00, 0 at 11:00, −2000 W from 12:00 to 14:00, 0 from 15:00. Battery: 0, +1000 W from
    /// 15:00 to 17:00, 0 at 18:00, −500 W from 19:00 to 21:00, 0 from 22:00. The counters (kWh)
    /// rise by exactly the trapezoid of each direction's part, hour by hour.
    static func hour(_ h: Int, importCounterMissesHour9: Bool = false) -> String {
        let grid: [Int: Double] = [7: 3000, 8: 3000, 9: 3000, 10: 3000, 12: -2000, 13: -2000, 14: -2000]
        let battery: [Int: Double] = [15: 1000, 16: 1000, 17: 1000, 19: -500, 20: -500, 21: -500]
        let gridIn: [Double] = [100, 100, 100, 100, 100, 100, 100, 101.5, 104.5, 107.5, 110.5, 112]
        let gridOut: [Double] = [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201, 203, 205, 206]
        let batIn: [Double] = Array(repeating: 50, count: 15) + [50.5, 51.5, 52.5, 53]
        let batOut: [Double] = Array(repeating: 70, count: 19) + [70.25, 70.75, 71.25, 71.5]
        func value(_ list: [Double]) -> Double { h < list.count ? list[h] : list.last! }
        // The import counter stood still from 08:00 to 09:00: 3 kWh never counted.
        var importKWh = value(gridIn)
        if importCounterMissesHour9, h >= 9 { importKWh -= 3 }
        // A home meter reads what the others balance to.
        let home = 2500 + (grid[h] ?? 0) - (battery[h] ?? 0)
        return #"{"solar":2500,"home":\#(home),"grid":\#(grid[h] ?? 0),"battery":\#(battery[h] ?? 0),"grid_in":\#(importKWh),"grid_out":\#(value(gridOut)),"bat_in":\#(value(batIn)),"bat_out":\#(value(batOut))}"#
    }

    /// A derived home (`balance`) unless `measuredHome`, when a home meter of its own reads it.
    static func config(
        exchange: [EnergyAccount: TotalSpec] = [:], storage: [EnergyAccount: TotalSpec] = [:], measuredHome: Bool = false
    ) -> FlowConfig {
        let day = 86_400.0
        var sources = ["solar", "home", "grid", "battery"].map { source($0, "home/meter", json: $0, maxGap: day) }
        sources += ["grid_in", "grid_out", "bat_in", "bat_out"].map { source($0, "home/meter", json: $0, unit: .kilowattHour, maxGap: day) }
        var grid = node("grid", total: .imported, name: "Grid")
        grid.accounts = exchange
        var battery = node("battery", total: .charged, name: "Battery")
        battery.accounts = storage
        return FlowConfig(sources: sources, widgets: [FlowWidgetConfig(
            name: "home", inputs: [node("solar", total: .integrate, name: "Solar")], output: node(measuredHome ? "home" : "balance", total: .integrate),
            storage: battery, exchange: grid, policy: eager)])
    }

    static func runDay(_ config: FlowConfig, from first: Int = 0, through last: Int = 24, into harness: inout EngineHarness, missing: Bool = false) {
        for h in first...last { harness.send("home/meter", hour(h, importCounterMissesHour9: missing), at: midnight + Double(h) * 3600) }
    }

    // Production: 2500 W × 24 h = 60 kWh.
    // Import: the ramp 06→07 ½·3 kWh + 07→10 3 h × 3 kW + the ramp 10→11 ½·3 = 1.5 + 9 + 1.5 = 12 kWh.
    // Export: ramps 11→12 and 14→15, ½·2 each, + 12→14 2 h × 2 kW = 1 + 4 + 1 = 6 kWh.
    // Charge: ramps ½·1 each + 15→17 2 kWh = 3 kWh. Discharge: ramps ½·0.5 each + 19→21 1 kWh = 1.5 kWh.
    // Consumption (balance, linear between the hourly readings): 60 + 12 − 6 − 3 + 1.5 = 64.5 kWh.
    // In: 60 + 12 + 1.5 = 73.5; out: 64.5 + 6 + 3 = 73.5.
    static let day: [EnergyAccount: Double] = [
        .production: 60, .consumption: 64.5, .imported: 12, .exported: 6, .charged: 3, .discharged: 1.5,
    ]

    @Test(arguments: [
        ("integrated", [:], [:]),
        ("grid counters", [.imported: .counter(source: "grid_in"), .exported: .counter(source: "grid_out")], [:]),
        ("battery counters", [:], [.charged: .counter(source: "bat_in"), .discharged: .counter(source: "bat_out")]),
        ("import counter, export integrated", [.imported: .counter(source: "grid_in")], [.discharged: .counter(source: "bat_out")]),
    ] as [(String, [EnergyAccount: TotalSpec], [EnergyAccount: TotalSpec])])
    func everyDirectionOfTheDay(_ what: String, exchange: [EnergyAccount: TotalSpec], storage: [EnergyAccount: TotalSpec]) throws {
        var home = EngineHarness(Self.config(exchange: exchange, storage: storage))
        Self.runDay(home.engine.config, into: &home)
        let closed = try #require(home.engine.lastClosedDay?.accountsKWh["home"])
        for (account, kWh) in Self.day {
            #expect(abs((closed[account] ?? -1) - kWh) < 1e-9, "\(what): \(account) \(closed[account] ?? -1) kWh, expected \(kWh)")
        }
        // The widget showed the import and the charge, as its totals say.
        #expect(abs((home.engine.lastClosedDay?.totalsKWh["home/exchange"] ?? -1) - 12) < 1e-9)
        #expect(abs((home.engine.lastClosedDay?.totalsKWh["home/storage"] ?? -1) - 3) < 1e-9)
        let line = try #require(home.diagnostics.first { $0.message.contains("accounts:") })
        #expect(line.level == .info && line.message.hasSuffix("they add up"), "\(line.message)")
    }

    /// The import counter stood still for an hour: 3 kWh short. In 60 + 9 + 1.5 = 70.5, out 64.5 + 6
    /// + 3 = 73.5: out exceeds in by 3 kWh, 3 / 64.5 = 4.7 % of consumption, past the 3 % tolerated.
    /// Only a measured home can show it: a derived home's day is the balance of the others.
    @Test func aCounterThatMissedAnHourIsNamed() throws {
        var home = EngineHarness(Self.config(exchange: [.imported: .counter(source: "grid_in")], measuredHome: true))
        Self.runDay(home.engine.config, into: &home, missing: true)
        let line = try #require(home.diagnostics.first { $0.message.contains("accounts:") })
        #expect(line.level == .warning)
        #expect(line.message.contains("import 9 "), "\(line.message)")
        #expect(line.message.contains("out exceeds in by 3 kWh (4.7 % of consumption)"), "\(line.message)")
    }

    /// A restart at 12:00: the state saved, read back into a new engine, the day goes on and every
    /// account ends as if nothing happened.
    @Test(arguments: [0, 1])
    func aRestartMidDayKeepsEveryAccount(counters: Int) throws {
        let config = Self.config(
            exchange: counters == 1 ? [.imported: .counter(source: "grid_in"), .exported: .counter(source: "grid_out")] : [:])
        var before = EngineHarness(config)
        Self.runDay(config, through: 12, into: &before)
        let saved = try JSONValue(parsing: before.engine.snapshot().encoded())
        var after = EngineHarness(config)
        try after.engine.restore(saved)
        Self.runDay(config, from: 13, into: &after)
        let closed = try #require(after.engine.lastClosedDay?.accountsKWh["home"])
        for (account, kWh) in Self.day { #expect(abs((closed[account] ?? -1) - kWh) < 1e-9, "\(account)") }
    }

    /// Widgets whose accounts cannot add up (no home, or no grid) close their day with the accounts
    /// alone, never a warning of missed energy; with both, the identity is judged.
    @Test(arguments: [
        ("solar only", [node("solar", total: .integrate)], nil, nil, false),
        ("grid only", [], nil, node("grid", total: .imported), false),
        ("solar and a measured home", [node("solar", total: .integrate)], node("home", total: .integrate), nil, false),
        ("solar, grid and a measured home", [node("solar", total: .integrate)], node("home", total: .integrate), node("grid", total: .imported), true),
    ] as [(String, [NodeConfig], NodeConfig?, NodeConfig?, Bool)])
    func onlyAccountsThatCanAddUpAreJudged(_ what: String, inputs: [NodeConfig], output: NodeConfig?, exchange: NodeConfig?, judged: Bool) throws {
        let sources = ["solar", "home", "grid"].map { source($0, "home/meter", json: $0, maxGap: 86_400) }
        let config = FlowConfig(sources: sources, widgets: [FlowWidgetConfig(name: "home", inputs: inputs, output: output, exchange: exchange, policy: eager)])
        var home = EngineHarness(config)
        // Solar 2500 W and the home 500 W all day; the grid meter reads 1000 W of import, which
        // no measured account explains: judged, the day is off.
        for h in 0...24 { home.send("home/meter", #"{"solar":2500,"home":500,"grid":1000}"#, at: Self.midnight + Double(h) * 3600) }
        let line = try #require(home.diagnostics.first { $0.message.contains("accounts:") })
        #expect((line.level == .warning) == judged, "\(what): \(line.message)")
        #expect(line.message.contains("missed energy") == judged, "\(what): \(line.message)")
        #expect(line.message.contains("need not meet") == !judged, "\(what): \(line.message)")
    }

    /// The battery's charge counter rose 1 kWh before the solar's reading came (the derived home's
    /// balance at −1 kWh, shown as 0); a restart then; the solar's hour of 0 → 2000 W brings the
    /// 1 kWh that went into the battery. The home used nothing, after the restart as without one.
    @Test(arguments: [false, true])
    func aBalanceBelowZeroSurvivesARestart(restart: Bool) throws {
        let sources = [source("solar", "m", json: "solar", maxGap: 7200), source("battery", "m", json: "battery", maxGap: 7200),
            source("bat_in", "m", json: "bat_in", unit: .kilowattHour, maxGap: 7200)]
        var battery = node("battery", total: .charged, name: "Battery")
        battery.accounts = [.charged: .counter(source: "bat_in")]
        let config = FlowConfig(sources: sources, widgets: [FlowWidgetConfig(
            name: "home", inputs: [node("solar", total: .integrate)], output: node("balance", total: .integrate), storage: battery, policy: eager)])
        var home = EngineHarness(config)
        home.send("m", #"{"solar":0,"battery":0,"bat_in":10}"#, at: Self.midnight + 36_000)
        home.send("m", #"{"battery":2000,"bat_in":11}"#, at: Self.midnight + 39_600)
        if restart {
            var restarted = EngineHarness(config)
            try restarted.engine.restore(JSONValue(parsing: home.engine.snapshot().encoded()))
            home = restarted
        }
        home.send("m", #"{"solar":2000}"#, at: Self.midnight + 39_600)
        let accounts = try #require(home.engine.accountTotals(ofWidget: "home"))
        #expect(abs((accounts[.charged] ?? -1) - 1) < 1e-9, "\(accounts)")
        #expect(abs((accounts[.production] ?? -1) - 1) < 1e-9, "\(accounts)")
        #expect(abs(accounts[.consumption] ?? -1) < 1e-9, "\(accounts)")
    }

    /// A state written before accounts (`totals` only): the exchange's import restores into the import
    /// account, the export starts from the restart.
    @Test func anOlderStateRestoresIntoTheAccountItCounted() throws {
        let config = Self.config()
        var home = EngineHarness(config)
        let old = try JSONValue(parsing: #"""
            {"version":1,"day":"2026-06-01","day_start":1780272000,"readings":{},
             "totals":{"home/exchange":{"kind":"import","kwh":2.5},"home/storage":{"kind":"charge","kwh":1.25}}}
            """#)
        let problems = try home.engine.restore(old)
        #expect(problems.isEmpty)
        let accounts = try #require(home.engine.accounts(ofWidget: "home"))
        #expect(accounts[.exchange] == [.imported: 2.5, .exported: 0])
        #expect(accounts[.storage] == [.charged: 1.25, .discharged: 0])
        #expect(accounts[.output] == [.consumption: 0])
    }

    /// Europe/Berlin's spring day has 23 hours: 1000 W of solar and 500 W from the grid all day are
    /// 23 kWh of production, 11.5 kWh of import and 34.5 kWh of consumption; no export.
    @Test func aDSTDayCountsItsHours() throws {
        let zone = try #require(SystemTimeZone(identifier: "Europe/Berlin"))
        let config = FlowConfig(
            sources: ["solar", "grid"].map { source($0, "m", json: $0, maxGap: 7200) },
            widgets: [FlowWidgetConfig(
                name: "home", inputs: [node("solar")], output: node("balance"), exchange: node("grid"), policy: eager)])
        var home = EngineHarness(config, zone: zone)
        let day = zone.day(containing: try #require(RFC3339.parse("2026-03-29T12:00:00Z")))
        var t = day.start.timeIntervalSince1970
        while t <= day.end.timeIntervalSince1970 {
            home.send("m", #"{"solar":1000,"grid":500}"#, at: t)
            t += 3600
        }
        let closed = try #require(home.engine.lastClosedDay)
        #expect(closed.date.description == "2026-03-29")
        let accounts = try #require(closed.accountsKWh["home"])
        let expected: [EnergyAccount: Double] = [.production: 23, .imported: 11.5, .exported: 0, .consumption: 34.5]
        for (account, kWh) in expected { #expect(abs((accounts[account] ?? -1) - kWh) < 1e-9, "\(account)") }
    }

    /// A widget pushed at most every 5 minutes: its accounts still go out at least once a minute
    /// while they move (one reading every 10 s of 3600 W: 0.01 kWh per 10 s).
    @Test func accountsGoOutEveryMinuteThoughTheWidgetWaitsFiveMinutes() {
        var policy = eager
        policy.minIntervalSeconds = 300
        policy.rateDeadband = 10_000  // the rate never moves the widget: only the interval would
        let config = FlowConfig(
            sources: [source("load", "house/power")],
            widgets: [FlowWidgetConfig(name: "home", output: node("load", total: .integrate), policy: policy)])
        var home = EngineHarness(config)
        var t = Self.midnight + 3600
        while t <= Self.midnight + 3600 + 900 {
            home.send("house/power", "3600", at: t)
            t += 10
        }
        home.run(until: t)
        let times = home.accountOutputs.map(\.at.timeIntervalSince1970)
        #expect(times.count >= 15, "\(times.count) account updates in 15 minutes")
        for (earlier, later) in zip(times, times.dropFirst()) { #expect(later - earlier <= 60 + 10, "\(later - earlier) s apart") }
        #expect(home.pushes.count <= 5)
        // The last says the energy so far: 900 s × 3.6 kW = 0.9 kWh, at most one reading behind.
        let last = home.accountOutputs.last?.accounts[.output]?[.consumption] ?? 0
        #expect(last >= 0.8 && last <= 0.9 + 1e-9, "\(last) kWh")
    }

    /// One load whose consumption is integrated, pushed at every change.
    static let integratedLoad = FlowConfig(
        sources: [source("load", "house/power")],
        widgets: [FlowWidgetConfig(name: "home", output: node("load", total: .integrate), policy: eager)])

    /// A widget pushed at every reading hands over its accounts only when one moved by a Wh (what
    /// the sensors carry): 360 W read each second is 0.1 Wh a second, so a minute of pushes at
    /// every reading carries about 6 moves, each a Wh on from the last.
    @Test func accountsGoOutAfterAPushOnlyWhenTheyMovedByAWattHour() {
        var home = EngineHarness(Self.integratedLoad)
        let start = Self.midnight + 3600
        for second in 0...60 {
            // 360 W, then 361 W, and so on: every reading moves the rate, so every reading is pushed.
            home.send("house/power", "\(360 + second % 2)", at: start + Double(second))
        }
        #expect(home.pushes.count == 61)
        let consumption = home.accountOutputs.map { $0.accounts[.output]?[.consumption] ?? -1 }
        #expect((6...8).contains(consumption.count), "\(consumption.count) account updates in 61 pushes")
        for (earlier, later) in zip(consumption, consumption.dropFirst()) {
            #expect(PatchPolicy.quantize(later, step: 0.001) > PatchPolicy.quantize(earlier, step: 0.001), "\(earlier) then \(later) kWh")
        }
    }

    /// A day whose accounts stayed 0 still ends: the new day's accounts go out, though they are
    /// 0 again, so that a sensor that resets at midnight hears of the new day.
    @Test func aNewDayOfZeroAccountsStillGoesOut() {
        var home = EngineHarness(Self.integratedLoad)
        for minute in -10...(-1) { home.send("house/power", "0", at: Self.midnight + 60 * Double(minute)) }
        let before = home.accountOutputs.count
        #expect(before == 1)
        for minute in 0...2 { home.send("house/power", "0", at: Self.midnight + 60 * Double(minute)) }
        let after = home.accountOutputs.dropFirst(before).map(\.at.timeIntervalSince1970)
        #expect(after.count == 1 && after.allSatisfy { $0 >= Self.midnight }, "\(after.map { $0 - Self.midnight })")
    }
}

/// `replay --final` ends with each flow widget's accounts, in kWh at full resolution.
@Suite struct ReplayAccountsTests {
    /// The grid importing, then through a ramp to exporting: both directions, to the joule.
    @Test func theLastLinesAreTheAccounts() throws {
        let config = try DaemonConfig.parse("""
            timezone: UTC
            sources: {grid: {topic: g, max_gap: 1h, stale_after: never}}
            widgets: {w: {template: flow, flow: {exchange: {rate: grid, total: import}}}}
            """, file: "c.yaml")
        var replay = Replay(config: config.flow, zone: SystemTimeZone(identifier: "UTC")!)
        // 00:00 1000 W, 00:30 1000 W, 00:40 −500 W, 01:00 −500 W.
        // Import: 30 min at 1 kW = 0.5 kWh, then the ramp 1000 → −500 over 600 s crosses 0 at 400 s:
        // 1000 W × 400 s / 2 = 200 kJ = 0.0555… kWh. Export: the ramp's rest, 500 W × 200 s / 2 =
        // 50 kJ = 0.01388… kWh, + 20 min at 0.5 kW = 0.1666… kWh.
        for (minute, rate) in [(0, "1000"), (30, "1000"), (40, "-500"), (60, "-500")] {
            _ = replay.feed(TraceMessage(at: Date(timeIntervalSince1970: 1_780_272_000 + Double(minute) * 60), topic: "g", payload: Array(rate.utf8)))
        }
        let lines = try replay.accountLines().map { try JSONValue(parsing: $0) }
        #expect(lines.count == 1)
        #expect(lines.first?["widget"] == "w")
        let importKWh = try #require(lines.first?["accounts"]?["import"]?.numberValue)
        let exportKWh = try #require(lines.first?["accounts"]?["export"]?.numberValue)
        #expect(abs(importKWh - (0.5 + 200_000 / 3_600_000)) < 1e-12)
        #expect(abs(exportKWh - (50_000 / 3_600_000 + 1.0 / 6)) < 1e-12)
    }
}

/// `accounts:` in the config: what each direction reads, and the mistakes named at their key.
@Suite struct AccountConfigTests {
    static func yaml(_ exchange: String) -> String {
        """
        mqtt: {host: localhost}
        sources:
          grid: {topic: m/grid}
          grid_in: {topic: m/in, unit: kWh}
          grid_out: {topic: m/out, unit: kWh}
        widgets:
          power:
            template: flow
            flow:
              exchange: \(exchange)
        """
    }

    @Test(arguments: [
        ("{rate: grid, total: import, accounts: {import: {counter: grid_in}, export: {counter: grid_out}}}",
         [EnergyAccount.imported: TotalSpec.counter(source: "grid_in"), .exported: .counter(source: "grid_out")]),
        ("{rate: grid, total: {counter: grid_in}, accounts: {export: integrate}}", [.imported: .counter(source: "grid_in"), .exported: .exported]),
        ("{rate: grid}", [.imported: .imported, .exported: .exported]),
    ])
    func whatEachDirectionReads(_ exchange: String, expected: [EnergyAccount: TotalSpec]) throws {
        let config = try DaemonConfig.parse(Self.yaml(exchange), file: "test.yaml")
        let node = try #require(config.flow.widgets.first?.exchange)
        let read = Dictionary(uniqueKeysWithValues: node.accountTotals(in: .exchange).map { ($0.account, $0.total) })
        #expect(read == expected)
    }

    @Test(arguments: [
        ("{rate: grid, accounts: {charge: integrate}}", "exchange.accounts.charge", "no direction of the exchange slot"),
        ("{rate: grid, total: {counter: grid_in}, accounts: {import: {counter: grid_out}}}", "exchange.accounts.import", "contradicts it"),
        ("{rate: grid, accounts: {export: {counter: grid}}}", "exchange.accounts.export", "needs energy"),
        ("{rate: grid, accounts: {export: sometimes}}", "exchange.accounts.export", "write integrate"),
    ])
    func mistakesAreNamedAtTheirKey(_ exchange: String, path: String, message: String) throws {
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(Self.yaml(exchange), file: "test.yaml") }
        let problem = try #require(error?.problems.first { $0.path.hasSuffix(path) }, "\(error?.description ?? "")")
        #expect(problem.message.contains(message), "\(problem.message)")
        #expect(problem.line == 10)
    }
}
