import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// Local days from the system's zone rules: DST days, half-hour offsets, DST at midnight.
@Suite struct LocalDayTests {
    @Test(arguments: [
        ("Europe/Berlin", "2026-06-01T12:00:00Z", "2026-06-01", "2026-05-31T22:00:00Z", 24.0),
        ("Europe/Berlin", "2026-03-29T12:00:00Z", "2026-03-29", "2026-03-28T23:00:00Z", 23),
        ("Europe/Berlin", "2026-10-25T12:00:00Z", "2026-10-25", "2026-10-24T22:00:00Z", 25),
        ("Asia/Kolkata", "2026-06-01T20:00:00Z", "2026-06-02", "2026-06-01T18:30:00Z", 24),
        ("Australia/Adelaide", "2026-04-05T12:00:00Z", "2026-04-05", "2026-04-04T13:30:00Z", 25),
        ("America/Havana", "2026-03-08T12:00:00Z", "2026-03-08", "2026-03-08T05:00:00Z", 23),  // 00:00 does not exist
        ("America/Santiago", "2026-04-04T12:00:00Z", "2026-04-04", "2026-04-04T03:00:00Z", 25),
        ("America/Santiago", "2026-09-06T12:00:00Z", "2026-09-06", "2026-09-06T04:00:00Z", 23),  // 00:00 does not exist
        ("America/Havana", "2026-11-01T12:00:00Z", "2026-11-01", "2026-11-01T04:00:00Z", 25),
        ("America/New_York", "2026-03-08T12:00:00Z", "2026-03-08", "2026-03-08T05:00:00Z", 23),
        ("America/New_York", "2026-11-01T12:00:00Z", "2026-11-01", "2026-11-01T04:00:00Z", 25),
        ("Australia/Lord_Howe", "2026-10-04T12:00:00Z", "2026-10-04", "2026-10-03T13:30:00Z", 23.5),  // 30-minute DST
        ("Australia/Lord_Howe", "2026-04-05T12:00:00Z", "2026-04-05", "2026-04-04T13:00:00Z", 24.5),
        ("Asia/Beirut", "2022-03-27T12:00:00Z", "2022-03-27", "2022-03-26T22:00:00Z", 23),  // 00:00 does not exist
        ("Asia/Beirut", "2022-10-29T12:00:00Z", "2022-10-29", "2022-10-28T21:00:00Z", 25),  // 23:00 twice
        ("Pacific/Apia", "2011-12-29T12:00:00Z", "2011-12-29", "2011-12-29T10:00:00Z", 24),  // the 30th never was
        ("Etc/GMT+5", "2026-06-01T12:00:00Z", "2026-06-01", "2026-06-01T05:00:00Z", 24),
        ("Etc/GMT-14", "2026-06-01T12:00:00Z", "2026-06-02", "2026-06-01T10:00:00Z", 24),
        ("UTC", "2026-06-01T00:00:00Z", "2026-06-01", "2026-06-01T00:00:00Z", 24),
    ])
    func dayBounds(zone name: String, at instant: String, date: String, start: String, hours: Double) throws {
        let zone = try #require(SystemTimeZone(identifier: name))
        let day = zone.day(containing: RFC3339.parse(instant)!)
        #expect(day.date.description == date)
        #expect(day.start == RFC3339.parse(start))
        #expect(day.lengthHours == hours)
        #expect(zone.day(after: day).start == day.end)
    }

    @Test func unknownZonesAreRefused() {
        #expect(SystemTimeZone(identifier: "Mars/Olympus") == nil)
        #expect(SystemTimeZone(identifier: "../etc/passwd") == nil)
    }
}

/// Daily totals end to end through the engine, with Europe/Berlin's rules.
@Suite struct EnergyDayTests {
    static let berlin = SystemTimeZone(identifier: "Europe/Berlin")!

    static func constantLoad(sourceMaxGap: Double = 300) -> FlowConfig {
        FlowConfig(
            sources: [source("load", "house/power", maxGap: sourceMaxGap)],
            widgets: [FlowWidgetConfig(name: "home", output: node("load", total: .integrate), policy: eager)])
    }

    /// A constant 1000 W for a whole day: as many kWh as the day has hours, reset at local midnight,
    /// also where DST moves by 30 minutes or skips midnight itself.
    @Test(arguments: [
        ("Europe/Berlin", "2026-06-01", 24.0), ("Europe/Berlin", "2026-03-29", 23.0), ("Europe/Berlin", "2026-10-25", 25.0),
        ("America/New_York", "2026-03-08", 23), ("America/New_York", "2026-11-01", 25),
        ("Australia/Lord_Howe", "2026-10-04", 23.5), ("Australia/Lord_Howe", "2026-04-05", 24.5),
        ("America/Havana", "2026-03-08", 23), ("America/Santiago", "2026-09-06", 23), ("America/Santiago", "2026-04-04", 25),
        ("Asia/Beirut", "2022-03-27", 23), ("Asia/Beirut", "2022-10-29", 25), ("Etc/GMT+5", "2026-06-01", 24),
    ])
    func constantPowerForAWholeLocalDay(zone name: String, date: String, kWh: Double) throws {
        let zone = try #require(SystemTimeZone(identifier: name))
        var home = EngineHarness(Self.constantLoad(), zone: zone)
        let day = zone.day(containing: RFC3339.parse("\(date)T12:00:00Z")!)
        var t = day.start.timeIntervalSince1970 - 3600
        while t <= day.end.timeIntervalSince1970 + 3600 {
            home.send("house/power", "1000", at: t)
            t += 10
        }
        let closed = try #require(home.engine.lastClosedDay)
        #expect(closed.date.description == date)
        #expect(abs(closed.totalsKWh["home/output"]! - kWh) < 1e-9)
        // The reset went out at local midnight, at once.
        let reset = try #require(home.pushes.first { $0.at == day.end })
        #expect(reset.push.patch["flow"]?["output"]?["total"] == 0)
        #expect(abs(home.total("output")! - 1.0) < 0.002)  // the hour after midnight
    }

    @Test func aLongSilenceAddsNothingAndNeitherDoesAClockStepBack() {
        var home = EngineHarness(Self.constantLoad())
        home.send("house/power", "1000", at: 0)
        home.send("house/power", "1000", at: 3600)  // an hour: longer than max_gap (5 min)
        home.send("house/power", "1000", at: 3600 + 7200)  // two more hours of silence
        #expect(home.total("output") == 0)
        home.send("house/power", "1000", at: 10_800 + 180)  // 3 minutes: counted
        #expect(abs(home.total("output")! - 0.05) < 1e-9)
        home.send("house/power", "1000", at: 10_000)  // the clock stepped back: a late reading
        #expect(abs(home.total("output")! - 0.05) < 1e-9)
        home.send("house/power", "1000", at: 10_060)  // confirmed: the new timeline starts here
        #expect(abs(home.total("output")! - 0.05) < 1e-9)
        home.send("house/power", "1000", at: 10_120)  // and counts on from there
        #expect(abs(home.total("output")! - 0.05 - 1.0 / 60) < 0.001)  // shown to 0.001 kWh
    }

    @Test func importAndExportIntegrateSeparatelyAndAddUpToTheNet() throws {
        let config = FlowConfig(
            sources: [source("grid", "g")],
            widgets: [
                FlowWidgetConfig(name: "in", exchange: node("grid", total: .imported), policy: eager),
                FlowWidgetConfig(name: "out", exchange: node("grid", total: .exported), policy: eager),
            ])
        var engine = FlowEngine(config: config, zone: FixedOffsetZone())
        var net = 0.0
        var previous: (t: Double, w: Double)?
        var random = SplitMix64(seed: 11)
        for step in 0..<2000 {
            let t = Double(step * 7)
            let watts = Double(Int.random(in: -3000...3000, using: &random))
            _ = engine.receive(topic: "g", payload: Array(JSONValue.format(watts).utf8), at: Date(timeIntervalSince1970: t))
            if let previous { net += (previous.w + watts) / 2 * (t - previous.t) / 3_600_000 }
            previous = (t, watts)
        }
        _ = engine.tick(at: Date(timeIntervalSince1970: 14_000))
        let imported = try #require(engine.snapshot()["totals"]?["in/exchange"]?["kwh"]?.numberValue)
        let exported = try #require(engine.snapshot()["totals"]?["out/exchange"]?["kwh"]?.numberValue)
        #expect(imported > 1 && exported > 1)
        #expect(abs(imported - exported - net) < 1e-9)
    }

    /// A Shelly Pro 3EM `emdata` import counter (Wh) that drops to 0 when the device reboots at 14:00.
    @Test func lifetimeCounterResetKeepsTheMorning() throws {
        let payload = try Repository.payload("shellypro3em-abc/status/emdata:0")
        let config = FlowConfig(
            sources: [
                source("grid", "shellypro3em-abc/status/em:0", json: "total_act_power"),
                source("imported", "shellypro3em-abc/status/emdata:0", json: "total_act", unit: .wattHour),
            ],
            widgets: [FlowWidgetConfig(name: "grid", exchange: node("grid", total: .counter(source: "imported")), policy: eager)])
        var meter = EngineHarness(config, zone: Self.berlin)
        let midnight = RFC3339.parse("2026-06-01T00:00:00+02:00")!.timeIntervalSince1970
        func publish(_ wattHours: Double, at hour: Double) {
            let body = payload.replacingOccurrences(of: "\"total_act\":20269.29", with: "\"total_act\":\(JSONValue.format(wattHours))")
            meter.send("shellypro3em-abc/status/em:0", #"{"total_act_power":500}"#, at: midnight + hour * 3600)
            meter.send("shellypro3em-abc/status/emdata:0", body, at: midnight + hour * 3600)
        }
        #expect(payload.contains("\"total_act\":20269.29"))
        publish(20269.29, at: 0.1)  // just after midnight: the baseline
        publish(20269.29 + 500, at: 0.5)
        publish(20269.29 + 5000, at: 13.9)  // 5 kWh this morning
        publish(0, at: 14.0)  // reboot: one low sample changes nothing yet
        #expect(meter.total("exchange") == 5)
        publish(120, at: 14.1)  // confirmed: count again from 0
        publish(1120, at: 18)
        #expect(abs(meter.total("exchange")! - 6.12) < 1e-9)
        publish(20269.29 + 5000, at: 18.1)  // a glitch back up (240 kW for 6 minutes?) is not energy
        publish(1200, at: 18.2)
        publish(1300, at: 18.3)
        #expect(abs(meter.total("exchange")! - 6.3) < 1e-9)
    }

    /// OpenDTU's `yieldday` (Wh) resets when the inverter powers up at sunrise, not at midnight.
    @Test func deviceDailyCounterResetAtSunriseKeepsTheDayRight() throws {
        let fixture = try Repository.payload("solar/ac/yieldday")
        #expect(fixture == "216")
        let config = FlowConfig(
            sources: [source("pv", "solar/ac/power"), source("yield", "solar/ac/yieldday", unit: .wattHour)],
            widgets: [FlowWidgetConfig(name: "solar", inputs: [node("pv", total: .daily(source: "yield"))], policy: eager)])
        var solar = EngineHarness(config, zone: Self.berlin)
        let midnight = RFC3339.parse("2026-06-01T00:00:00+02:00")!.timeIntervalSince1970
        solar.send("solar/ac/power", "0", at: midnight - 7200)
        solar.send("solar/ac/yieldday", "12300", at: midnight - 7200)  // yesterday's yield, retained overnight
        solar.run(until: midnight + 1)
        #expect(solar.total("inputs") == 0)  // a new day: yesterday's 12.3 kWh is not today's
        solar.send("solar/ac/yieldday", "0", at: midnight + 5 * 3600)  // sunrise: the inverter starts counting
        solar.send("solar/ac/yieldday", fixture, at: midnight + 6 * 3600)
        #expect(abs(solar.total("inputs")! - 0.216) < 1e-9)
        solar.send("solar/ac/yieldday", "4000", at: midnight + 11 * 3600)
        solar.send("solar/ac/yieldday", "0", at: midnight + 12 * 3600)  // a power-up mid-day resets it again
        solar.send("solar/ac/yieldday", "1500", at: midnight + 15 * 3600)
        #expect(abs(solar.total("inputs")! - 5.5) < 1e-9)
    }

    @Test func totalsNeverDecreaseOrGoNegative() {
        var total = EnergyTotal(spec: .counter(source: "c"))
        var random = SplitMix64(seed: 5)
        var shown = 0.0
        for step in 0..<5000 {
            total.read(counterKWh: Double(Int.random(in: 0...1000, using: &random)), at: Date(timeIntervalSince1970: Double(step) * 3600))
            #expect(total.energyKWh >= shown)
            shown = total.energyKWh
        }
    }
}

/// Restarts: the engine's state saved, the daemon down for a while, a new engine started on the
/// saved state. A constant 1000 W load, integrated, beside a lifetime counter (kWh or Wh) that
/// rises by exactly that, both read every minute (at :30) while the daemon runs.
@Suite struct RestartDayTests {
    static let berlin = SystemTimeZone(identifier: "Europe/Berlin")!

    static func config(_ unit: SourceUnit) -> FlowConfig {
        FlowConfig(
            sources: [source("load", "house/power"), source("meter", "meter/energy", unit: unit)],
            widgets: [
                FlowWidgetConfig(
                    name: "home", output: node("load", total: .integrate), exchange: node("load", total: .counter(source: "meter")),
                    policy: eager)
            ])
    }

    /// The engine a restart makes: a new one, with the state the old one would have written.
    static func restarted(_ old: EngineHarness, _ config: FlowConfig) throws -> EngineHarness {
        var fresh = EngineHarness(config, zone: berlin)
        try fresh.engine.restore(JSONValue(parsing: old.engine.snapshot().encoded()))
        return fresh
    }

    /// Minutes since the local midnight that starts `date`: where the daemon reads last, starts again
    /// and where the totals are looked at. The totals must be what the readings say about the day
    /// that holds the end: the integral over the stretches between readings no longer than
    /// `max_gap` (5 min), and the counter's rise since midnight (a rise across it is split, its
    /// share before going to the day just closed), or since its last reading when that came
    /// before the day just closed (two midnights passed in the silence) or the day closed before
    /// the restart.
    @Test(arguments: [
        ("2026-06-01", 600, 603, 720),  // down for 3 minutes: within max_gap, integrated across
        ("2026-06-01", 600, 615, 720),  // 15 minutes: not integrated across
        ("2026-06-01", 600, 840, 960),  // 4 hours
        ("2026-06-01", -60, 30, 120),  // across midnight
        ("2026-06-01", -10, 3, 120),  // across midnight, back within max_gap of it
        ("2026-06-01", -3, 3, 120),  // 6 minutes across midnight: longer than max_gap
        ("2026-06-01", -1, 4, 120),  // stopped after closing the day: 5 minutes, max_gap
        ("2026-06-01", -1, 5, 120),  // stopped after closing the day: 6 minutes
        ("2026-06-01", -60, 1470, 1560),  // across two midnights
        ("2026-10-25", 90, 270, 360),  // across the end of DST (a 25-hour day)
        ("2026-03-29", 90, 210, 360),  // across the start of DST (a 23-hour day)
        ("2026-10-25", 1494, 1503, 1560),  // across the midnight that ends a 25-hour day
    ], [SourceUnit.kilowattHour, .wattHour])
    func aRestartKeepsWhatTheReadingsSay(restart: (date: String, stop: Int, start: Int, end: Int), unit: SourceUnit) throws {
        let (date, stop, start, end) = restart
        let config = Self.config(unit)
        let midnight = Self.berlin.day(containing: RFC3339.parse("\(date)T12:00:00Z")!).start.timeIntervalSince1970
        let scale = unit == .wattHour ? 1000.0 : 1
        var times: [Double] = []
        func readings(_ minutes: ClosedRange<Int>, _ home: inout EngineHarness) {
            for minute in minutes {
                let t = midnight + Double(minute) * 60 + 30
                home.send("house/power", "1000", at: t)
                home.send("meter/energy", JSONValue.format((20_000 + (t - midnight) / 3600) * scale), at: t)
                times.append(t)
            }
        }
        var before = EngineHarness(config, zone: Self.berlin)
        readings(-240...stop, &before)
        before.run(until: midnight + Double(stop) * 60 + 90)  // it stops just before the next reading
        var after = try Self.restarted(before, config)
        readings(start...end, &after)

        let day = Self.berlin.day(containing: Date(timeIntervalSince1970: times.last!))
        #expect(after.engine.day == day)
        let dayStart = day.start.timeIntervalSince1970
        var integratedSeconds = 0.0
        for (from, to) in zip(times, times.dropFirst()) where to - from <= 300 {
            integratedSeconds += max(0, to - max(from, dayStart))
        }
        let lastBefore = times.last { $0 < dayStart }!
        let closedDayStart = Self.berlin.day(containing: Date(timeIntervalSince1970: dayStart - 1)).start.timeIntervalSince1970
        // Split unless the day closed before the restart and its first reading came after it: a
        // restart keeps no closed day to amend.
        let stoppedAt = midnight + Double(stop) * 60
        let closedDayLost = stoppedAt + 90 >= dayStart && stoppedAt + 30 < dayStart
        let split = lastBefore >= closedDayStart && !closedDayLost
        let counterSeconds = times.last! - (split ? dayStart : lastBefore)
        let totals = try #require(after.engine.snapshot()["totals"])
        let integrated = try #require(totals["home/output"]?["kwh"]?.numberValue)
        let counted = try #require(totals["home/exchange"]?["kwh"]?.numberValue)
        #expect(abs(integrated - integratedSeconds / 3600) < 1e-9, "integrated \(integrated) kWh")
        #expect(abs(counted - counterSeconds / 3600) < 1e-6, "counted \(counted) kWh")
    }
}
