import Commands
import Configuration
import FlowCore
import Foundation
import Platform
import ReplaySupport
import TestSupport
import Testing

/// A price schedule through `replay`: each slot prices the energy that flowed in it, a retained
/// schedule at a fresh start at once, and where no slot covers a stretch it is unpriced; each
/// amount computed by hand in its case's comment.
@Suite struct ScheduleReplayTests: TariffHome {
    /// evcc's forecast of the grid price, in EUR/MWh here (the unit converts as a single price's).
    static let scheduleSource = "  prices: {topic: evcc/site/forecast/grid, unit: EUR/MWh, schedule: true}"
    static let tariff = "  import: {price: prices}"

    /// evcc's slot objects (`api.Rate`), hourly from `start` with these prices per MWh.
    static func schedule(from start: String, _ prices: [Double]) -> String {
        let first = time(start)
        let slots = prices.enumerated().map { index, price in
            let from = first.addingTimeInterval(Double(index) * 3600)
            return #"{"start":"\#(RFC3339.format(from, utcOffsetSeconds: 7200))","end":"\#(RFC3339.format(from.addingTimeInterval(3600), utcOffsetSeconds: 7200))","value":\#(JSONValue.format(price))}"#
        }
        return "[" + slots.joined(separator: ",") + "]"
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// The schedules: when, retained or live, and the payload.
        var schedules: [(at: String, retained: Bool, payload: String)]
        /// The grid's 1 kW import runs from `from` to `to`, a reading a minute.
        var from: String
        var to: String
        var fees: String = ""
        var importCost: Double
        var unpricedKWh: Double
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        // A fresh start: no state, nothing live, only the broker's retained schedule, heard at
        // 10:00 with the first reading. 10:00–11:00 at 300 EUR/MWh = 0.30/kWh: 1 kWh × 0.30 = 0.30.
        Case(name: "a fresh start with a retained schedule prices the first hour at once",
             schedules: [("2026-06-01T10:00:00Z", true, schedule(from: "2026-06-01T10:00:00Z", [300, 400]))],
             from: "2026-06-01T10:00:00Z", to: "2026-06-01T11:00:00Z", importCost: 0.30, unpricedKWh: 0),
        // The same with fees 0.05 and VAT 20 %: (0.30 + 0.05) × 1.2 = 0.42.
        Case(name: "fees and VAT on a slot's price",
             schedules: [("2026-06-01T10:00:00Z", true, schedule(from: "2026-06-01T10:00:00Z", [300, 400]))],
             from: "2026-06-01T10:00:00Z", to: "2026-06-01T11:00:00Z", fees: ", fees: 0.05, vat: 20%", importCost: 0.42, unpricedKWh: 0),
        // 10:30–11:30 crosses two slots: ½ kWh × 0.30 + ½ kWh × 0.40 = 0.35.
        Case(name: "an hour across two slots is priced per slot",
             schedules: [("2026-06-01T10:30:00Z", true, schedule(from: "2026-06-01T10:00:00Z", [300, 400]))],
             from: "2026-06-01T10:30:00Z", to: "2026-06-01T11:30:00Z", importCost: 0.35, unpricedKWh: 0),
        // The schedule ends at 11:00: 10:30–11:00 priced (½ × 0.30 = 0.15), 11:00–11:30 unpriced
        // (½ kWh), never at the last slot's price.
        Case(name: "where the schedule runs out the energy is unpriced",
             schedules: [("2026-06-01T10:30:00Z", false, schedule(from: "2026-06-01T10:00:00Z", [300]))],
             from: "2026-06-01T10:30:00Z", to: "2026-06-01T11:30:00Z", importCost: 0.15, unpricedKWh: 0.5),
        // At 10:00 slots of 300, 300, 200 (10:00–13:00); at 10:30 a new schedule of 500, 600 for
        // 10:00–12:00. 10:00–10:30 stays at 0.30 (it was in force then: ½ × 0.30 = 0.15),
        // 10:30–11:00 at 0.50 (0.25), 11:00–12:00 at 0.60 (0.60), 12:00–12:30 keeps the old slot
        // the new one leaves out, 0.20 (0.10): 1.10.
        Case(name: "a new schedule replaces the overlapping slots from when it came",
             schedules: [
                ("2026-06-01T10:00:00Z", false, schedule(from: "2026-06-01T10:00:00Z", [300, 300, 200])),
                ("2026-06-01T10:30:00Z", false, schedule(from: "2026-06-01T10:00:00Z", [500, 600])),
             ],
             from: "2026-06-01T10:00:00Z", to: "2026-06-01T12:30:00Z", importCost: 1.10, unpricedKWh: 0),
        // A schedule of yesterday, retained: it covers no stretch, so nothing is priced (1 kWh
        // unpriced), whatever the age of the message.
        Case(name: "a retained schedule of the past prices nothing now",
             schedules: [("2026-06-01T10:00:00Z", true, schedule(from: "2026-05-31T10:00:00Z", [300, 400]))],
             from: "2026-06-01T10:00:00Z", to: "2026-06-01T11:00:00Z", importCost: 0, unpricedKWh: 1),
    ]

    static func trace(_ test: Case) -> [String] {
        let grid = lines(minutes(from: time(test.from), to: time(test.to)) { _ in 1000 })
        var all = grid
        for schedule in test.schedules {
            let line = TraceMessage(at: time(schedule.at), topic: "evcc/site/forecast/grid", payload: Array(schedule.payload.utf8), retained: schedule.retained).line
            // Before the grid's reading of the same second: the schedule is heard first.
            let index = all.firstIndex { ((try? TraceMessage(line: Array($0.utf8)))?.at ?? .distantPast) >= time(schedule.at) } ?? all.count
            all.insert(line, at: index)
        }
        return all
    }

    @Test(arguments: cases)
    func aScheduleSetsEachSlotsPrice(_ test: Case) throws {
        let config = Self.config(tariff: "  import: {price: prices\(test.fees)}", sources: Self.scheduleSource)
        let run = try replayWithLog(config: config, trace: Self.trace(test), final: false)
        let report = try #require(run.engine.money(ofWidget: "home"))
        #expect(abs(report.importCost - test.importCost) < 1e-9, "\(report.text)")
        #expect(abs((report.unpricedKWh[.imported] ?? 0) - test.unpricedKWh) < 1e-9, "\(report.text)")
        let said = run.log.map(\.diagnostic.message).filter { $0.contains("flows without a price") }
        #expect(said.count == (test.unpricedKWh > 0 ? 1 : 0), "\(said)")
        if test.unpricedKWh > 0 {
            #expect(said.first?.contains("its schedule source 'prices' (topic evcc/site/forecast/grid) has no slot for this time") == true, "\(said)")
        }
    }

    /// The same retained message as a single price is of unknown age: it prices nothing, and the
    /// first hour is unpriced. (What a schedule is for.)
    @Test func aRetainedSinglePriceLeavesTheFirstHourUnpriced() throws {
        let config = Self.config(tariff: Self.tariff, sources: "  prices: {topic: evcc/site/tariffGrid, unit: EUR/MWh, stale_after: 20m}")
        var lines = Self.lines(Self.minutes(from: Self.time("2026-06-01T10:00:00Z"), to: Self.time("2026-06-01T11:00:00Z")) { _ in 1000 })
        lines.insert(TraceMessage(at: Self.time("2026-06-01T10:00:00Z"), topic: "evcc/site/tariffGrid", payload: Array("300".utf8), retained: true).line, at: 0)
        let run = try replayWithLog(config: config, trace: lines, final: false)
        let report = try #require(run.engine.money(ofWidget: "home"))
        #expect(report.importCost == 0 && abs((report.unpricedKWh[.imported] ?? 0) - 1) < 1e-9, "\(report.text)")
    }

    /// `price_now` says the next slot's price and when: 0.30 until 11:00, then 0.40 until 12:00,
    /// where the schedule ends.
    @Test func priceNowSaysWhatComesNext() throws {
        let config = Self.config(tariff: Self.tariff, sources: Self.scheduleSource, subtitle: "{show: price_now}")
        let test = Case(
            name: "", schedules: [("2026-06-01T10:00:00Z", true, Self.schedule(from: "2026-06-01T10:00:00Z", [300, 400]))],
            from: "2026-06-01T10:00:00Z", to: "2026-06-01T12:30:00Z", importCost: 0, unpricedKWh: 0)
        let (lines, _) = try replay(config: config, trace: Self.trace(test))
        let shown = ProgressReplayTests.documents(of: "home", in: lines).filter { $0.patch["subtitle"] != nil }
        #expect(shown.map(\.content["subtitle"]) == ["Now €0.300/kWh, €0.400 from 11:00", "Now €0.400/kWh", "No price now"])
        #expect(shown.map(\.at) == [Self.time("2026-06-01T10:00:00Z"), Self.time("2026-06-01T11:00:00Z"), Self.time("2026-06-01T12:00:00Z")])
    }

    /// A bad schedule is refused with its reason, named, and takes back no price: the slots of the
    /// good schedule before it still price (1 kWh × 0.30).
    @Test(arguments: [
        ("[[1780308000, 1780311600, 0.3], [1780310000, 1780315200, 0.4]]", "overlap"),
        (#"[{"start": "2026-06-01T10:00:00", "end": "2026-06-01T11:00:00", "value": 300}]"#, "has no zone"),
        ("[[1780308000, 1780311600, 300000]]", "a price of 300 per kWh is beyond 100 per kWh"),
        ("[[1780308000, 1780308000, 300]]", "not after its start"),
        ("{broken", "not JSON"),
    ])
    func aBadScheduleIsRefusedAndCorruptsNothing(payload: String, reason: String) throws {
        let config = Self.config(tariff: Self.tariff, sources: Self.scheduleSource)
        var test = Case(
            name: "", schedules: [("2026-06-01T10:00:00Z", true, Self.schedule(from: "2026-06-01T10:00:00Z", [300]))],
            from: "2026-06-01T10:00:00Z", to: "2026-06-01T11:00:00Z", importCost: 0, unpricedKWh: 0)
        test.schedules.append(("2026-06-01T10:10:00Z", false, payload))
        let run = try replayWithLog(config: config, trace: Self.trace(test), final: false)
        let report = try #require(run.engine.money(ofWidget: "home"))
        #expect(abs(report.importCost - 0.30) < 1e-9, "\(report.text)")
        let said = run.log.map(\.diagnostic.message).filter { $0.hasPrefix("source 'prices' (topic evcc/site/forecast/grid): ") }
        #expect(said.count == 1 && said.first?.contains(reason) == true, "\(said)")
        #expect(said.first?.hasSuffix("; schedule ignored, the prices already known kept (1 so far)") == true, "\(said)")
    }
}

/// A schedule through a restart: the state keeps its slots, and a run stopped at any moment and
/// restarted (the broker sending its retained schedule again) prices as the run without a stop.
@Suite struct ScheduleRestartTests: TariffHome {
    static let config = config(tariff: "  import: {price: prices}", sources: ScheduleReplayTests.scheduleSource)

    /// The trace: the retained schedule (0.30 then 0.40 from 11:00, 10:00–12:00) and 1 kW from
    /// 10:00, a grid reading every 7 minutes (the last at 11:59).
    static func messages() -> [TraceMessage] {
        let schedule = ScheduleReplayTests.schedule(from: "2026-06-01T10:00:00Z", [300, 400])
        var messages = [TraceMessage(at: time("2026-06-01T10:00:00Z"), topic: "evcc/site/forecast/grid", payload: Array(schedule.utf8), retained: true)]
        messages += minutes(from: time("2026-06-01T10:00:00Z"), to: time("2026-06-01T12:00:00Z"), every: 420) { _ in 1000 }.map {
            TraceMessage(at: $0.0, topic: $0.1, payload: Array($0.2.utf8))
        }
        return messages
    }

    static func engine() throws -> FlowEngine {
        let config = try DaemonConfig.parse(Self.config, file: "test.yaml")
        return FlowEngine(config: config.flow, zone: SystemTimeZone(identifier: "UTC")!)
    }

    static func feed(_ engine: inout FlowEngine, _ messages: some Sequence<TraceMessage>) {
        for message in messages {
            if engine.subscribedAt == nil { _ = engine.subscribed(at: message.at) }
            _ = engine.tick(through: message.at)
            _ = engine.receive(topic: message.topic, payload: message.payload, at: message.at, retained: message.retained)
        }
    }

    /// Stopped after message `stop` (its state as written, a text, read back), restarted with the
    /// broker's retained schedule first, as a reconnect sends it: the money equals the run without
    /// a stop, to the cent and beyond.
    @Test(arguments: [1, 2, 5, 9, 10, 14, 17])
    func aStateSavedMidScheduleRestoresThePrices(stop: Int) throws {
        let all = Self.messages()
        var whole = try Self.engine()
        Self.feed(&whole, all)
        let expected = try #require(whole.money(ofWidget: "home"))
        // 1 kW until the last reading at 11:59: 1 kWh × 0.30 + 59/60 kWh × 0.40.
        #expect(abs(expected.importCost - (0.30 + 59.0 / 60 * 0.40)) < 1e-9, "\(expected.text)")

        var first = try Self.engine()
        Self.feed(&first, all.prefix(stop))
        let saved = try JSONValue(parsing: first.snapshot().description)
        #expect(saved["prices"]?["import"]?["slots"]?.arrayValue?.isEmpty == false, "\(saved)")
        var second = try Self.engine()
        let skipped = try second.restore(saved)
        #expect(skipped.isEmpty, "\(skipped)")
        let retained = all[0]
        Self.feed(&second, [TraceMessage(at: all[stop].at, topic: retained.topic, payload: retained.payload, retained: true)] + all.dropFirst(stop))
        let report = try #require(second.money(ofWidget: "home"))
        #expect(abs(report.importCost - expected.importCost) < 1e-9, "\(report.text) against \(expected.text)")
        #expect((report.unpricedKWh[.imported] ?? 0) < MoneyReport.unpricedShownKWh, "\(report.text)")
    }

    /// Without the broker's copy after the restart, the state's slots alone price the rest.
    @Test func theStateAlonePricesTheRest() throws {
        let all = Self.messages()
        var first = try Self.engine()
        Self.feed(&first, all.prefix(3))
        var second = try Self.engine()
        try second.restore(try JSONValue(parsing: first.snapshot().description))
        Self.feed(&second, all.dropFirst(3))
        let report = try #require(second.money(ofWidget: "home"))
        #expect(abs(report.importCost - (0.30 + 59.0 / 60 * 0.40)) < 1e-9, "\(report.text)")
    }
}
