@testable import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// The month's and the billing month's money: which day a period starts on, and the closed days
/// plus today's that a bar, a subtitle and a sensor of the month show.
@Suite struct PeriodTotalsTests {
    static func date(_ text: String) -> CivilDate { CivilDate(text)! }

    /// The calendar month starts on the 1st; a billing month on its `billing_day`, the month
    /// before when the date is earlier in its month (across a year too); the day is itself.
    @Test(arguments: [
        (MoneyPeriod.month, 15, "2026-12-14", "2026-12-01"),
        (.month, 15, "2026-12-01", "2026-12-01"),
        (.billing, 15, "2026-12-14", "2026-11-15"),
        (.billing, 15, "2026-12-15", "2026-12-15"),
        (.billing, 15, "2026-01-03", "2025-12-15"),
        (.billing, 1, "2026-03-31", "2026-03-01"),
        (.billing, 28, "2026-03-01", "2026-02-28"),
        (.day, 15, "2026-12-14", "2026-12-14"),
    ])
    func theFirstDayOfAPeriod(period: MoneyPeriod, billingDay: Int, date: String, first: String) {
        #expect(period.first(holding: Self.date(date), billingDay: billingDay) == Self.date(first))
    }

    /// A closed day with `importCost` of money (and 10 × that in kWh imported) for widget `w`.
    static func day(_ date: String, importCost: Double, currency: Currency = .euro) -> FlowEngine.ClosedDay {
        FlowEngine.ClosedDay(
            date: Self.date(date), totalsKWh: [:], accountsKWh: ["w": [.imported: importCost * 10]],
            money: ["w": MoneyReport(currency: currency, importCost: importCost, exportEarnings: 0.1, standingCharge: 0.5, gridOnlyCost: nil)])
    }

    static func today(_ importCost: Double = 2, currency: Currency = .euro) -> MoneyReport {
        MoneyReport(
            currency: currency, importCost: importCost, exportEarnings: 0.25, standingCharge: 0.25, gridOnlyCost: 9, unpricedKWh: [.imported: 1],
            importPricePerKWh: 0.3)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var closed: [FlowEngine.ClosedDay]
        var today: String
        var period: MoneyPeriod
        /// The import cost and the net cost of the period through today.
        var importCost: Double
        var netCost: Double
        var testDescription: String { name }
    }

    /// Closed days from 2026-11-13 through 2026-12-15, each 1.00 of import, 0.10 earned and 0.50
    /// standing: 1.40 net a day. Today (2026-12-16) 2.00 of import, net 2.00. The month holds
    /// the 1st–15th (15 days: 15.00 import, 21.00 net), the billing month from the 15th the 15th
    /// alone (1.00, 1.40); a closed day of an earlier period counts in neither.
    static let cases: [Case] = {
        let days = (0...32).map { CivilDate(daysSinceEpoch: date("2026-11-13").daysSinceEpoch + $0).description }.map { day($0, importCost: 1) }
        return [
            Case(name: "the month", closed: days, today: "2026-12-16", period: .month, importCost: 15 + 2, netCost: 21 + 2),
            Case(name: "the billing month from the 15th", closed: days, today: "2026-12-16", period: .billing, importCost: 1 + 2, netCost: 1.4 + 2),
            Case(name: "the day: today alone", closed: days, today: "2026-12-16", period: .day, importCost: 2, netCost: 2),
            // On the 14th the billing month began on 2026-11-15: the 16 days of November from the
            // 15th and 13 of December, 29.00 import, 40.60 net.
            Case(name: "the billing month across a month's end", closed: Array(days.prefix(31)), today: "2026-12-14", period: .billing,
                 importCost: 29 + 2, netCost: 40.6 + 2),
            // A new month whose first day has not closed: today's alone.
            Case(name: "a month with no closed day yet", closed: days, today: "2027-01-01", period: .month, importCost: 2, netCost: 2),
            // The last day offered again with 0.50 more of import adds what it gained, once.
            Case(name: "an amended day adds what it gained", closed: days + [day("2026-12-15", importCost: 1.5), day("2026-12-15", importCost: 1.5)],
                 today: "2026-12-16", period: .month, importCost: 15.5 + 2, netCost: 21.5 + 2),
            // A day of an earlier month after the later ones changes nothing.
            Case(name: "a day of an earlier period is ignored", closed: days + [day("2026-11-20", importCost: 7)], today: "2026-12-16",
                 period: .month, importCost: 15 + 2, netCost: 21 + 2),
        ]
    }()

    @Test(arguments: cases)
    func theMoneyOfAPeriod(_ test: Case) throws {
        var periods = PeriodTotals(billingDay: 15)
        for closed in test.closed { periods.add(closed) }
        let zone = FixedOffsetZone(offsetSeconds: 3600)
        let report = try #require(periods.money(test.period, of: "w", today: Self.today(), on: Self.date(test.today), zone: zone))
        #expect(abs(report.importCost - test.importCost) < 1e-9, "\(report.importCost)")
        #expect(abs(report.netCost - test.netCost) < 1e-9, "\(report.netCost)")
        if test.period != .day {
            // What the closed days do not keep is not made up: no saving, no unpriced kWh, no price.
            #expect(report.saved == nil && report.unpricedKWh.isEmpty && report.importPricePerKWh == nil)
            let first = test.period.first(holding: Self.date(test.today), billingDay: 15)
            #expect(report.dayStart == zone.day(on: first)?.start)
        }
    }

    /// Seeded from the book at a start, then a day closes: the seed and the day add up; a seed
    /// of another period (the month before) is replaced by the new period's days.
    @Test func aSeedAndTheDaysAfterIt() throws {
        let zone = FixedOffsetZone()
        var periods = PeriodTotals(billingDay: 15)
        let seed = LifetimeAccounts(
            throughDay: Self.date("2026-12-09"), closedKWh: [:], closedMoney: ["w": {
                var money = LifetimeAccounts.Money(currencyCode: "EUR")
                money.importCost = 8
                return money
            }()])
        periods.seed(.month, holding: Self.date("2026-12-10"), closed: seed)
        periods.add(Self.day("2026-12-10", importCost: 1))
        // The seed 8, the day 1, today 2.
        let month = try #require(periods.money(.month, of: "w", today: Self.today(), on: Self.date("2026-12-11"), zone: zone))
        #expect(month.importCost == 11)
        periods.add(Self.day("2027-01-01", importCost: 1))
        // January: its first day 1, today 2.
        let january = try #require(periods.money(.month, of: "w", today: Self.today(), on: Self.date("2027-01-02"), zone: zone))
        #expect(january.importCost == 3)
    }

    /// Closed days in another currency than today's are not added to it: amounts in two
    /// currencies do not add.
    @Test func anotherCurrencyIsNotAdded() throws {
        let zone = FixedOffsetZone()
        var periods = PeriodTotals()
        periods.add(Self.day("2026-12-01", importCost: 5, currency: Currency(code: "CHF")!))
        #expect(periods.money(.month, of: "w", today: Self.today(), on: Self.date("2026-12-02"), zone: zone)?.importCost == 2)
    }
}
