import Commands
import Configuration
import FlowCore
import FoundationEssentials
import Platform
import TestSupport
import Testing

/// A tariff that cannot be right is a `check` error naming its key and line, never a day priced
/// at a wrong unit.
@Suite struct TariffConfigTests {
    static func config(tariff: String, sources: String = "") -> String {
        """
        sources:
          grid: {topic: home/grid}
        \(sources)
        widgets:
          home:
            template: flow
            flow:
              output: {rate: balance, total: integrate}
              exchange: {rate: grid, total: import}
        tariff:
        \(tariff)
        """
    }

    struct BadCase: Sendable, CustomTestStringConvertible {
        var name: String
        var tariff: String
        var sources: String = ""
        var path: String
        var line: Int
        var message: String
        var testDescription: String { name }
    }

    // Line 1 is `sources:`; the extra sources take line 3, `tariff:` is line 10, its first key 11.
    static let badCases: [BadCase] = [
        BadCase(
            name: "a unit flowbridge does not know", tariff: "  import: {price: feed}", sources: "  feed: {topic: p, unit: EUR/GJ}",
            path: "sources.feed.unit", line: 3, message: "'EUR/GJ' is not one of W, kW, Wh, kWh, Wmin, %, or a price per energy"),
        BadCase(
            name: "a price source that is a meter", tariff: "  import: {price: grid}", path: "tariff.import.price", line: 11,
            message: "source 'grid' is power (W); a price source's unit is EUR/kWh, EUR/MWh or ct/kWh"),
        BadCase(
            name: "a price source in another currency", tariff: "  currency: GBP\n  import: {price: feed}", sources: "  feed: {topic: p, unit: EUR/MWh}",
            path: "tariff.import.price", line: 12, message: "source 'feed' gives prices in EUR, and the tariff's currency is GBP"),
        BadCase(
            name: "a zone table with a gap", tariff: "  import:\n    zones:\n      - {days: mon-fri, from: \"07:00\", to: \"22:00\", price: 0.35}",
            path: "tariff.import.zones", line: 13,
            message: "no zone covers mon 00:00–07:00; add one, or a last zone with only a price for the rest"),
        BadCase(
            name: "a zone table with an overlap",
            tariff: "  import:\n    zones:\n      - {days: mon-fri, from: \"07:00\", to: \"22:00\", price: 0.35}\n      - {days: fri-sat, from: \"20:00\", to: \"08:00\", price: 0.2}\n      - {price: 0.25}",
            path: "tariff.import.zones", line: 13, message: "zones 1 and 2 overlap on fri 20:00–22:00"),
        BadCase(
            name: "a negative standing charge", tariff: "  import: {price: 0.3}\n  standing_charge: -0.4", path: "tariff.standing_charge", line: 12,
            message: "must not be negative"),
        BadCase(
            name: "an absurd price", tariff: "  import: {price: 300}", path: "tariff.import.price", line: 11,
            message: "300 EUR/kWh is beyond 100 EUR/kWh: a wrong unit (ct/kWh or EUR/MWh written as EUR/kWh?)"),
        BadCase(
            name: "absurd fees", tariff: "  import: {price: 0.3, fees: 120}", path: "tariff.import.fees", line: 11, message: "120 EUR/kWh is beyond"),
        BadCase(name: "a VAT above 100 %", tariff: "  import: {price: 0.3, vat: 190%}", path: "tariff.import.vat", line: 11, message: "'190%' is not a VAT rate"),
        BadCase(name: "a currency that is no code", tariff: "  currency: €\n  import: {price: 0.3}", path: "tariff.currency", line: 11, message: "is not an ISO 4217 currency code"),
        BadCase(
            name: "a time of day that is none",
            tariff: "  import:\n    zones:\n      - {from: \"7h\", to: \"22:00\", price: 0.35}\n      - {price: 0.25}",
            path: "tariff.import.zones[0].from", line: 13, message: "'7h' is not a local time of day"),
        BadCase(
            name: "a day that is none", tariff: "  import:\n    zones:\n      - {days: weekdays, price: 0.35}\n      - {price: 0.25}",
            path: "tariff.import.zones[0].days", line: 13, message: "'weekdays' is not a day or a range of days"),
        BadCase(
            name: "a price source that sums its topics", tariff: "  import: {price: feed}",
            sources: "  feed: {topic: \"prices/+\", unit: ct/kWh, combine: sum}", path: "tariff.import.price", line: 11,
            message: "source 'feed' adds the prices of its topics (combine: sum); a price source is one price"),
        BadCase(
            name: "a quoted price", tariff: "  import: {price: \"0.30\"}", path: "tariff.import.price", line: 11,
            message: "'0.30' is quoted, so it reads as a source's name: write the price without quotes"),
        BadCase(
            name: "a VAT written as a fraction", tariff: "  import: {price: 0.3, vat: 0.19}", path: "tariff.import.vat", line: 11,
            message: "0.19 reads as 0.19 %; a VAT of 19 % is written 19%"),
        BadCase(name: "no import price", tariff: "  export: {price: 0.08}", path: "tariff.import", line: 11, message: "is required"),
        BadCase(
            name: "both a price and zones", tariff: "  import: {price: 0.3, zones: [{price: 0.2}]}", path: "tariff.import.zones", line: 11,
            message: "a price is either `price:` or `zones:`, not both"),
        BadCase(
            name: "a schedule of a meter", tariff: "  import: {price: 0.3}", sources: "  feed: {topic: p, schedule: true}",
            path: "sources.feed.schedule", line: 3, message: "a schedule is of prices; this source is power (W)"),
        BadCase(
            name: "a schedule with stale_after", tariff: "  import: {price: feed}", sources: "  feed: {topic: p, unit: EUR/kWh, schedule: true, stale_after: 1h}",
            path: "sources.feed.stale_after", line: 3, message: "a schedule's slots say how long each price holds; leave stale_after out"),
        BadCase(
            name: "a schedule read by a pattern", tariff: "  import: {price: feed}", sources: "  feed: {topic: p, unit: EUR/kWh, schedule: true, regex: '([0-9.]+)'}",
            path: "sources.feed.regex", line: 3, message: "belongs to a source of one number; a schedule is a JSON list of slots"),
        BadCase(
            name: "a schedule that adds topics", tariff: "  import: {price: 0.3}", sources: "  feed: {topic: \"p/+\", unit: EUR/kWh, schedule: true, combine: sum}",
            path: "sources.feed.combine", line: 3, message: "a schedule is one list of prices; it does not add up"),
        BadCase(
            name: "a schedule's key left empty", tariff: "  import: {price: feed}", sources: "  feed: {topic: p, unit: EUR/kWh, schedule: {price: \"\"}}",
            path: "sources.feed.schedule.price", line: 3, message: "must not be empty"),
        BadCase(
            name: "a schedule's unknown key", tariff: "  import: {price: feed}", sources: "  feed: {topic: p, unit: EUR/kWh, schedule: {begin: from}}",
            path: "sources.feed.schedule.begin", line: 3, message: "unknown key (known here: end, price, start)"),
        BadCase(
            name: "schedule: false", tariff: "  import: {price: feed}", sources: "  feed: {topic: p, unit: EUR/kWh, schedule: false}",
            path: "sources.feed.schedule", line: 3, message: "leave schedule out for a source of one price"),
    ]

    /// `schedule:` with the defaults (evcc's keys) or a feed's own, and no staleness.
    @Test(arguments: [
        ("schedule: true", ScheduleFormat()),
        ("schedule: {price: price}", ScheduleFormat(priceKey: "price")),
        ("schedule: {start: start_time, end: end_time, price: price_ct_per_kwh}", ScheduleFormat(startKey: "start_time", endKey: "end_time", priceKey: "price_ct_per_kwh")),
    ])
    func aScheduleSourceReadsItsKeys(written: String, format: ScheduleFormat) throws {
        let config = try DaemonConfig.parse(
            Self.config(tariff: "  import: {price: feed}", sources: "  feed: {topic: evcc/site/forecast/grid, unit: EUR/kWh, json: raw_today, \(written)}"), file: "t.yaml")
        let feed = try #require(config.flow.sources.first { $0.name == "feed" })
        #expect(feed.schedule == format)
        #expect(feed.staleAfterSeconds == nil)
        #expect(feed.decoder.path?.description == "raw_today")
        #expect(config.flow.tariff?.importPrice.base == .source("feed"))
    }

    @Test(arguments: badCases)
    func aTariffThatCannotBeRightIsAnError(_ test: BadCase) {
        var error: ConfigError?
        do { _ = try DaemonConfig.parse(Self.config(tariff: test.tariff, sources: test.sources), file: "t.yaml") } catch let caught { error = caught }
        let problem = error?.problems.first { $0.path == test.path }
        #expect(problem?.line == test.line, "\(error?.description ?? "no error")")
        #expect(problem?.message.contains(test.message) == true, "\(error?.description ?? "no error")")
    }

    @Test func aPriceSourceReadsItsUnitAndTheTariffItsParts() throws {
        let config = try DaemonConfig.parse(
            Self.config(
                tariff: """
                      currency: EUR
                      import: {price: feed, fees: 0.12, vat: 19%}
                      export:
                        zones:
                          - {days: "sat,sun", price: 0.10}
                          - {days: [mon, tue, wed, thu], from: "22:00", to: "06:00", price: 0.05}
                          - {price: 0.08}
                      standing_charge: 0.40
                    """, sources: "  feed: {topic: market/price, unit: EUR/MWh, stale_after: 20m}"), file: "t.yaml")
        let tariff = try #require(config.flow.tariff)
        let feed = try #require(config.flow.sources.first { $0.name == "feed" })
        #expect(feed.unit == .perMegawattHour && feed.priceCurrency == "EUR" && feed.convert(250) == 0.25)
        #expect(tariff.importPrice == PriceConfig(base: .source("feed"), feesPerKWh: 0.12, vatPercent: 19))
        #expect(tariff.standingChargePerDay == 0.40)
        guard case .zones(let table) = tariff.exportPrice?.base else { Issue.record("no zones"); return }
        // Tuesday 05:59 UTC is in Monday's night zone, 06:00 not; Saturday noon is the weekend's.
        let zone = FixedOffsetZone()
        let tuesday = RFC3339.parse("2026-06-02T05:59:00Z")!
        #expect(table.zone(at: tuesday, in: zone).basePerKWh == 0.05)
        #expect(table.zone(at: tuesday.addingTimeInterval(60), in: zone).basePerKWh == 0.08)
        #expect(table.zone(at: RFC3339.parse("2026-06-06T12:00:00Z")!, in: zone).basePerKWh == 0.10)
        #expect(table.nextChange(after: tuesday, in: zone) == tuesday.addingTimeInterval(60))
    }
}

/// `check` says which price applies now and when it next changes.
@Suite struct TariffCheckTests {
    struct NowCase: Sendable, CustomTestStringConvertible {
        var now: String
        var line: String
        var testDescription: String { now }
    }

    // Europe/Berlin; (0.35 by day on weekdays, 0.25 the rest + 0.12 fees) × 1.19: 0.5593 and 0.4403.
    static let cases: [NowCase] = [
        // Monday 1 June 2026, 06:30 CEST: night, until 07:00.
        NowCase(now: "2026-06-01T04:30:00Z", line: "      now: €0.440/kWh until 07:00, then €0.559/kWh"),
        // 21:59:30 CEST: the day price for 30 more seconds.
        NowCase(now: "2026-06-01T19:59:30Z", line: "      now: €0.559/kWh until 22:00, then €0.440/kWh"),
        // Friday 5 June, 23:00: the rest runs through the weekend to Monday 07:00.
        NowCase(now: "2026-06-05T21:00:00Z", line: "      now: €0.440/kWh until 2026-06-08 07:00, then €0.559/kWh"),
        // Saturday 24 October 2026, 23:00 CEST: the night through the change back to CET (no
        // change of price) to Monday 07:00 CET.
        NowCase(now: "2026-10-24T21:00:00Z", line: "      now: €0.440/kWh until 2026-10-26 07:00, then €0.559/kWh"),
    ]

    @Test(arguments: cases)
    func checkSaysThePriceNowAndItsNextChange(_ test: NowCase) throws {
        let tariff = """
              import:
                zones:
                  - {days: mon-fri, from: "07:00", to: "22:00", price: 0.35}
                  - {price: 0.25}
                fees: 0.12
                vat: 19%
              standing_charge: 0.40
            """
        let config = try DaemonConfig.parse("timezone: Europe/Berlin\n" + TariffConfigTests.config(tariff: tariff), file: "t.yaml")
        let text = ConfigSummary(config: config, zone: SystemTimeZone(identifier: "Europe/Berlin")!, statePath: "/s", now: RFC3339.parse(test.now)!).text
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.contains(test.line), "\(text)")
        #expect(lines.contains("      mon-fri 07:00–22:00: €0.350/kWh"), "\(text)")
        #expect(lines.contains("      billed: (price + €0.120/kWh fees) × 1.19 (VAT 19 %)"), "\(text)")
        #expect(lines.contains("  standing charge: €0.40 per day, accrued through the local day"), "\(text)")
        #expect(lines.contains("  export: none (exported energy earns nothing)"), "\(text)")
    }

    /// A schedule source: `check` says what it is and that the price waits for a slot for now.
    @Test func checkSaysWhatAScheduleIs() throws {
        let config = try DaemonConfig.parse(
            TariffConfigTests.config(tariff: "  import: {price: prices}", sources: "  prices: {topic: evcc/site/forecast/grid, unit: EUR/kWh, schedule: true}"),
            file: "t.yaml")
        let text = ConfigSummary(config: config, zone: SystemTimeZone(identifier: "UTC")!, statePath: "/s", now: RFC3339.parse("2026-06-01T12:00:00Z")!).text
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.contains("  import: the schedule of source 'prices' (topic evcc/site/forecast/grid, EUR/kWh): each slot's price over its own times, unpriced where no slot covers"), "\(text)")
        #expect(lines.contains("      now: unknown until the price source sends a schedule with a slot for now (energy before it is counted as unpriced)"), "\(text)")
    }
}
