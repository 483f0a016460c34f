import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// 14:02 UTC on a day in 2026.
let afternoon = 86_400.0 * 20_600 + 14 * 3600 + 2 * 60

/// A stale exchange or storage makes the balance unknown, and the widget says what it holds.
@Suite struct StaleBalanceTests {
    /// Solar reads all along; the grid meter falls silent for a while.
    static func config(output: StaleBehavior = .hold) -> FlowConfig {
        FlowConfig(
            sources: [source("solar", "pv"), source("grid", "g", staleAfter: 60)],
            widgets: [
                FlowWidgetConfig(
                    name: "w", inputs: [node("solar", name: "Solar")],
                    output: node("balance", total: .integrate, name: "Home", whenStale: output), exchange: node("grid", name: "Grid"),
                    policy: eager)
            ])
    }

    /// The grid reads 0 until 50 s and from 150 s on, silent (stale from 110 s) between. The
    /// output's day is the balance of what the meters counted, unknown stretch or not: the
    /// solar's 300 s at 1000 W, nothing exchanged.
    @Test func theOutputTotalIsTheBalanceAcrossTheUnknownStretch() throws {
        var home = EngineHarness(Self.config())
        for t in stride(from: 0.0, through: 300, by: 10) {
            home.send("pv", "1000", at: t)
            if t <= 50 || t >= 150 { home.send("g", "0", at: t) }
        }
        let kWh = try #require(home.engine.snapshot()["totals"]?["w/output"]?["kwh"]?.numberValue)
        #expect(abs(kWh - 300.0 / 3600) < 1e-9, "\(kWh * 3600) s at 1 kW")
    }

    @Test(arguments: [(StaleBehavior.hold, 2500.0 as Double?), (.zero, 0), (.clear, nil)])
    func anUnknownBalanceFollowsTheOutputsWhenStale(behavior: StaleBehavior, shown: Double?) {
        var home = EngineHarness(Self.config(output: behavior))
        home.send("pv", "1000", at: 0)
        home.send("g", "500", at: 0)
        home.send("pv", "2000", at: 30)  // the balance is 2500 W now, then the grid goes silent
        home.send("pv", "1500", at: 61)
        #expect(home.rate("output") == shown)
        #expect(home.rate("inputs") == 1500)
        #expect(home.rate("exchange") == 500)  // the exchange holds, and so the output cannot move
    }
}

@Suite struct StaleMarkerTests {
    static func home(marker: Bool = true) -> FlowConfig {
        var config = homeConfig(staleAfter: 60)
        config.widgets[0].shared.subtitle = "Solar · grid · home"
        config.widgets[0].exchange?.color = "cyan"
        config.widgets[0].staleMarker = marker
        return config
    }

    @Test func aHeldSlotIsGrayAndNamedWhileStaleAndRestoredWhenReadingsReturn() {
        var home = EngineHarness(Self.home())
        home.send("shellypro3em/status/em:0", #"{"total_act_power":300}"#, at: afternoon)
        for t in stride(from: afternoon, through: afternoon + 200, by: 10) {
            home.send("solar/ac/power", "1000", at: t)
            home.send("evcc/site/battery/power", "0", at: t)
        }
        #expect(home.rate("exchange") == 300)  // held
        #expect(home.shown?["flow"]?["exchange"]?["color"] == "gray")
        #expect(home.shown?["flow"]?["output"]?["color"] == "gray")  // held too: it cannot be known without the grid
        #expect(home.rate("output") == 1300)
        #expect(home.shown?["subtitle"] == "Grid: no reading since 14:02")
        #expect(home.shown?["flow"]?["storage"]?["color"] == nil)
        home.send("shellypro3em/status/em:0", #"{"total_act_power":200}"#, at: afternoon + 210)
        #expect(home.lastPatch?["subtitle"] == "Solar · grid · home")
        #expect(home.lastPatch?["flow"]?["exchange"]?["color"] == "cyan")
        #expect(home.lastPatch?["flow"]?["output"]?["color"] == .null)
        #expect(home.rate("output") == 1200)
    }

    @Test func severalSilentSlotsAreNamedTogetherWithTheEarliestTime() {
        var home = EngineHarness(Self.home())
        home.send("shellypro3em/status/em:0", #"{"total_act_power":300}"#, at: afternoon)
        home.send("evcc/site/battery/power", "0", at: afternoon + 60)
        for t in stride(from: afternoon, through: afternoon + 200, by: 10) { home.send("solar/ac/power", "1000", at: t) }
        #expect(home.shown?["subtitle"] == "Battery, Grid: no reading since 14:02")
    }

    @Test func staleMarkerOffLeavesColorsAndSubtitleAlone() {
        var home = EngineHarness(Self.home(marker: false))
        home.send("shellypro3em/status/em:0", #"{"total_act_power":300}"#, at: afternoon)
        for t in stride(from: afternoon, through: afternoon + 200, by: 10) {
            home.send("solar/ac/power", "1000", at: t)
            home.send("evcc/site/battery/power", "0", at: t)
        }
        #expect(home.rate("exchange") == 300)
        #expect(home.shown?["flow"]?["exchange"]?["color"] == "cyan")
        #expect(home.shown?["subtitle"] == "Solar · grid · home")
    }

    /// A retained copy is stale at once (no energy, no balance), but its meter is silent only once
    /// a live update is overdue: a normal start is not gray.
    @Test func aRetainedCopyIsMarkedOnlyWhenNoLiveUpdateFollows() {
        var home = EngineHarness(Self.home())
        home.record(home.engine.receive(
            topic: "shellypro3em/status/em:0", payload: Array(#"{"total_act_power":300}"#.utf8), at: Date(timeIntervalSince1970: afternoon),
            retained: true))
        for t in stride(from: afternoon + 1, through: afternoon + 50, by: 10) {
            home.send("solar/ac/power", "1000", at: t)
            home.send("evcc/site/battery/power", "0", at: t)
        }
        #expect(home.rate("exchange") == 300)
        #expect(home.shown?["flow"]?["exchange"]?["color"] == "cyan")
        #expect(home.shown?["flow"]?["output"] == nil)  // the balance needs a live grid reading
        home.run(until: afternoon + 60)
        #expect(home.shown?["flow"]?["exchange"]?["color"] == "gray")
        #expect(home.shown?["subtitle"] == "Grid: no reading since 14:02")
        home.send("shellypro3em/status/em:0", #"{"total_act_power":100}"#, at: afternoon + 70)
        #expect(home.rate("output") == 1100)
        #expect(home.shown?["flow"]?["exchange"]?["color"] == "cyan")
    }

    /// A battery's charge is published on change (and retained): its age never grays the node.
    @Test func aLevelNeverGraysItsNode() {
        var config = Self.home()
        config.sources[3].staleAfterSeconds = 60
        var home = EngineHarness(config)
        home.record(home.engine.receive(
            topic: "evcc/site/battery/soc", payload: Array("76".utf8), at: Date(timeIntervalSince1970: afternoon), retained: true))
        for t in stride(from: afternoon, through: afternoon + 900, by: 10) {
            home.send("solar/ac/power", "1000", at: t)
            home.send("shellypro3em/status/em:0", #"{"total_act_power":300}"#, at: t)
            home.send("evcc/site/battery/power", "-200", at: t)
        }
        #expect(home.shown?["flow"]?["storage"]?["level"] == 76)
        #expect(home.shown?["flow"]?["storage"]?["color"] == nil)
        #expect(home.shown?["subtitle"] == "Solar · grid · home")
    }

    /// After a restart hours later, restored readings are not live: marked, and no balance from them.
    @Test func aRestoredReadingOlderThanStaleAfterIsNeverShownAsLive() throws {
        var before = EngineHarness(Self.home())
        before.send("solar/ac/power", "1000", at: afternoon)
        before.send("shellypro3em/status/em:0", #"{"total_act_power":300}"#, at: afternoon)
        before.send("evcc/site/battery/power", "-500", at: afternoon)
        var after = EngineHarness(Self.home())
        try after.engine.restore(before.engine.snapshot())
        after.send("solar/ac/power", "800", at: afternoon + 7200)
        #expect(after.pushes.first?.push.isFullContent == true)
        #expect(after.shown?["flow"]?["storage"]?["color"] == "gray")
        #expect(after.shown?["flow"]?["exchange"]?["color"] == "gray")
        #expect(after.shown?["flow"]?["output"] == nil)
        #expect(after.shown?["subtitle"] == "Battery, Grid: no reading since 14:02")
    }
}

/// A source that never speaks is said once; `silentSources` lists it for the status line.
@Suite struct SilenceTests {
    static let config = FlowConfig(
        sources: [
            source("solar", "solar/ac/power", staleAfter: 600), source("grid", "meter/grid", staleAfter: 600),
            source("soc", "bms/soc", unit: .percent),
        ],
        widgets: [FlowWidgetConfig(name: "w", inputs: [node("solar")], storage: node("solar", level: "soc"), exchange: node("grid"), policy: eager)])

    @Test func aSourceThatNeverSpeaksIsWarnedAboutOnceNamingItsTopic() {
        var home = EngineHarness(Self.config)
        home.record(home.engine.subscribed(at: Date(timeIntervalSince1970: afternoon)))
        home.send("solar/ac/power", "100", at: afternoon + 5)
        home.run(until: afternoon + 59)
        #expect(home.engine.silentSources.isEmpty)
        home.run(until: afternoon + 3000)
        let warnings = home.diagnostics.filter { $0.message.contains("no message at all") }
        #expect(warnings.count == 2)
        #expect(warnings.first?.level == .warning)
        #expect(warnings.first?.message.contains("source 'soc' (topic bms/soc)") == true)  // stale_after never: a minute
        #expect(warnings.last?.message.contains("source 'grid' (topic meter/grid): no message at all in the 10 min since the subscription at 14:02") == true)
        #expect(home.engine.silentSources == ["grid", "soc"])
        home.send("meter/grid", "garbage", at: afternoon + 3001)  // unreadable, but it speaks
        #expect(home.diagnostics.contains { $0.level == .info && $0.message.contains("source 'grid' (topic meter/grid) reports after all") })
        #expect(home.engine.silentSources == ["soc"])
        home.run(until: afternoon + 20_000)
        #expect(home.diagnostics.filter { $0.message.contains("no message at all") }.count == 2)
    }

    @Test func withoutASubscriptionNothingIsCalledSilent() {
        var home = EngineHarness(Self.config)
        home.send("solar/ac/power", "100", at: afternoon)
        home.run(until: afternoon + 5000)
        #expect(!home.diagnostics.contains { $0.message.contains("no message at all") })
        #expect(home.engine.silentSources.isEmpty)
    }
}

/// `combine: sum`: one input from a wildcard's topics, each with its own staleness.
@Suite struct CombineSumTests {
    static let config = FlowConfig(
        sources: [source("solar", "solar/+/0/power", staleAfter: 60, combine: .sum)],
        widgets: [FlowWidgetConfig(name: "w", inputs: [node("solar", total: .integrate, name: "Solar", whenStale: .zero)], policy: eager)])

    @Test func eachTopicCountsWhileFreshAndTheSumSurvivesARestart() throws {
        var solar = EngineHarness(Self.config)
        let t0 = afternoon
        solar.send("solar/111/0/power", "400", at: t0)
        solar.send("solar/222/0/power", "300", at: t0 + 1)
        #expect(solar.rate("inputs") == 700)
        for t in stride(from: t0 + 10, through: t0 + 90, by: 10) { solar.send("solar/111/0/power", "400", at: t) }
        #expect(solar.rate("inputs") == 400)  // 222 silent since 1 s: stale at 61 s
        solar.send("solar/222/0/power", "250", at: t0 + 95)
        #expect(solar.rate("inputs") == 650)
        #expect(solar.engine.readings["solar"]?.value == 650)

        var restarted = EngineHarness(Self.config)
        try restarted.engine.restore(solar.engine.snapshot())
        restarted.send("solar/111/0/power", "450", at: t0 + 100)
        #expect(restarted.rate("inputs") == 700)  // 450 + 222's 250, both still fresh
        restarted.run(until: t0 + 156)
        #expect(restarted.rate("inputs") == 450)  // 222 stale at 155 s, counted from its own reading
    }

    /// Two inverters (`dtu/a`, `dtu/b`), their power and their daily yields each added up, the
    /// yields counting the input's day: each `(seconds, inverter, kWh)` after `start` sent with
    /// 100 W of power.
    static func dailyYields(from start: Double, _ readings: [(seconds: Double, inverter: String, kWh: Double)]) -> EngineHarness {
        let config = FlowConfig(
            sources: [
                source("solar", "dtu/+/power", staleAfter: 600, combine: .sum),
                source("today", "dtu/+/yieldday", unit: .kilowattHour, staleAfter: 600, combine: .sum),
            ],
            widgets: [FlowWidgetConfig(name: "w", inputs: [node("solar", total: .daily(source: "today"), name: "Solar")], policy: eager)])
        var home = EngineHarness(config)
        for (seconds, inverter, kWh) in readings {
            home.send("dtu/\(inverter)/yieldday", JSONValue.format(kWh), at: start + seconds)
            home.send("dtu/\(inverter)/power", "100", at: start + seconds)
        }
        return home
    }

    /// Two inverters' daily yields added up: one falls asleep at dusk with its count, the other
    /// reports on. The sleeper's count stays in the sum (its yield is still today's), so the sum
    /// never drops, and no reset counts the other's yield of the day twice.
    @Test func aQuietTopicOfACounterSumKeepsItsCount() {
        // The second topic's first count is a jump of the sum: taken as a new count from 14 kWh.
        let home = Self.dailyYields(from: afternoon, [
            (0, "a", 10), (1, "b", 4), (60, "a", 10.1), (120, "b", 4.1),  // a asleep from here on
            (400, "b", 4.2), (800, "b", 4.3), (900, "b", 4.4),  // a stale at 660 s
        ])
        #expect(abs(home.engine.readings["today"]!.value - 14.5) < 1e-9)
        #expect(abs((home.total("inputs") ?? 0) - 0.5) < 1e-9, "\(home.total("inputs") ?? -1)")
        #expect(!home.diagnostics.contains { $0.message.contains("the counter went back") }, "\(home.diagnostics)")
    }

    /// The next day: the daily counts reset at midnight, and a topic silent since yesterday (an
    /// inverter gone, or a retained copy of one) leaves the sum, so the other's reset is seen and
    /// its yield counts from 0.
    @Test func aCountOfYesterdayLeavesTheSum() {
        let home = Self.dailyYields(from: 86_400.0 * 20_601, [
            (-36_000, "a", 10), (-35_999, "b", 4), (-30_000, "a", 15), (-3_600, "b", 5),  // a silent from noon on
            (21_600, "b", 0.1), (21_700, "b", 0.2), (21_800, "b", 0.3),  // b counts today's from 0
        ])
        #expect(home.engine.lastClosedDay?.date == CivilDate(daysSinceEpoch: 20_600))
        #expect(abs(home.engine.readings["today"]!.value - 0.3) < 1e-9)
        #expect(abs((home.total("inputs") ?? 0) - 0.3) < 1e-9, "\(home.total("inputs") ?? -1)")
    }

    @Test func aSumOfStaleTopicsHoldsWhatWasFreshAtTheLastReading() {
        let config = FlowConfig(
            sources: [source("grid", "meter/+/power", staleAfter: 60, combine: .sum)],
            widgets: [FlowWidgetConfig(name: "w", exchange: node("grid", name: "Grid"), policy: eager)])
        var meter = EngineHarness(config)
        meter.send("meter/old/power", "100", at: 0)  // a topic gone quiet long before
        meter.send("meter/a/power", "500", at: 100)
        meter.send("meter/b/power", "-200", at: 101)
        meter.run(until: 300)
        #expect(meter.rate("exchange") == 300)
        #expect(meter.shown?["flow"]?["exchange"]?["color"] == "gray")
    }
}

@Suite struct PayloadLimitTests {
    @Test func aPayloadBeyondMaxPayloadIsCountedAndLoggedNeverParsed() {
        let config = FlowConfig(
            sources: [source("grid", "g", maxPayload: 64)],
            widgets: [FlowWidgetConfig(name: "w", exchange: node("grid"), policy: eager)])
        var meter = EngineHarness(config)
        meter.send("g", "1000", at: 0)
        meter.send("g", String(repeating: " ", count: 100) + "2000", at: 1)
        #expect(meter.rate("exchange") == 1000)
        #expect(meter.engine.sourceStats["grid"]?.oversized == 1)
        #expect(meter.engine.sourceStats["grid"]?.readings == 1)
        #expect(meter.diagnostics.contains {
            $0.level == .warning && $0.message.contains("source 'grid' (topic g): a payload of 104 bytes is beyond its max_payload (64 bytes); not read")
        })
    }
}

/// Log lines that say what happened and why.
@Suite struct ExplainingLogTests {
    static func counter(_ unit: SourceUnit = .kilowattHour, daily: Bool = false) -> FlowConfig {
        FlowConfig(
            sources: [source("grid", "g"), source("meter", "m", unit: unit)],
            widgets: [
                FlowWidgetConfig(
                    name: "w", exchange: node("grid", total: daily ? .daily(source: "meter") : .counter(source: "meter")), policy: eager)
            ])
    }

    @Test func aCounterJumpTakenAsANewCountIsSaid() {
        var meter = EngineHarness(Self.counter())
        for (hour, kWh) in [1000, 1001, 9001, 9001.5].enumerated() {
            meter.send("g", "100", at: Double(hour) * 3600)
            meter.send("m", JSONValue.format(kWh), at: Double(hour) * 3600)
        }
        #expect(abs(meter.total("exchange")! - 1.5) < 1e-9)
        let line = meter.diagnostics.first { $0.message.contains("counter jumped") }
        #expect(line?.level == .warning)
        #expect(line?.message.contains("source 'meter' (topic m): the counter jumped from 1001 to 9001 kWh") == true)
        #expect(line?.message.contains("taken as a new count") == true)
    }

    @Test func aDailyCounterThatStartsOverIsSaidAsInfo() {
        var meter = EngineHarness(Self.counter(daily: true))
        for (hour, kWh) in [1.0, 2, 3, 0, 0.5].enumerated() {
            meter.send("g", "100", at: Double(hour) * 3600)
            meter.send("m", JSONValue.format(kWh), at: Double(hour) * 3600)
        }
        #expect(abs(meter.total("exchange")! - 3.5) < 1e-9)
        #expect(meter.diagnostics.contains { $0.level == .info && $0.message.contains("went back from 3 to 0 kWh") })
    }

    @Test func anImplausibleReadingSaysWhy() {
        var meter = EngineHarness(Self.counter())
        meter.send("g", "250000", at: 0)
        #expect(meter.diagnostics.contains {
            $0.message.contains("source 'grid' (topic g): 250000 W is beyond the source's max_power (100000 W): a glitch, or a wrong unit or scale")
        })
    }

    static func shelly(_ t: Double, _ index: Int) -> String {
        switch index % 5 {
        case 0: #"{"src":"shellypro3em-abc","dst":"shellypro3em-abc/events","method":"NotifyStatus","params":{"ts":\#(t),"em:0":{"id":0,"total_act_power":\#(500 + index)}}}"#
        case 1, 2: #"{"src":"shellypro3em-abc","dst":"shellypro3em-abc/events","method":"NotifyStatus","params":{"ts":\#(t),"emdata:0":{"id":0,"total_act":20269.29}}}"#
        default: #"{"src":"shellypro3em-abc","dst":"shellypro3em-abc/events","method":"NotifyEvent","params":{"ts":\#(t),"events":[{"component":"sys","event":"scheduled_restart","ts":\#(t)}]}}"#
        }
    }

    /// Shelly's events/rpc: most messages are of other kinds. An info summary with counts a minute
    /// after the first, not a warning per message.
    @Test func aTopicOfManyKindsOfMessagesGetsOneSummary() {
        let config = FlowConfig(
            sources: [source("grid", "shellypro3em-abc/events/rpc", json: #"params["em:0"].total_act_power"#)],
            widgets: [FlowWidgetConfig(name: "w", exchange: node("grid"), policy: eager)])
        var meter = EngineHarness(config)
        for index in 0...65 { meter.send("shellypro3em-abc/events/rpc", Self.shelly(afternoon + Double(index) * 2, index), at: afternoon + Double(index) * 2) }
        #expect(meter.rate("exchange") == 565)
        #expect(meter.diagnostics.count == 1, "\(meter.diagnostics)")
        #expect(meter.diagnostics.first?.level == .info)
        #expect(meter.diagnostics.first?.message.contains(#"24 of 31 messages since 14:02 held no field params["em:0"].total_act_power and were skipped"#) == true)
        #expect(meter.engine.sourceStats["grid"]?.withoutField == 52)
    }

    @Test func aFieldThatNoMessageHoldsIsAWarning() {
        let config = FlowConfig(
            sources: [source("grid", "shellypro3em-abc/events/rpc", json: "params.em0.total_act_power")],
            widgets: [FlowWidgetConfig(name: "w", exchange: node("grid"), policy: eager)])
        var meter = EngineHarness(config)
        for index in 0...40 { meter.send("shellypro3em-abc/events/rpc", Self.shelly(afternoon + Double(index) * 2, index), at: afternoon + Double(index) * 2) }
        #expect(meter.diagnostics.count == 1, "\(meter.diagnostics)")
        #expect(meter.diagnostics.first?.level == .warning)
        #expect(meter.diagnostics.first?.message.contains("none of the 31 messages since 14:02 held the field params.em0.total_act_power") == true)
    }
}
