import DayBook
import FlowCore
import Foundation
import Testing

@Suite struct BookPeriodTests {
    /// Today is Wednesday 2026-10-28.
    static let today = CivilDate(year: 2026, month: 10, day: 28)

    @Test(arguments: [
        ("today", "2026-10-28"), ("yesterday", "2026-10-27"), ("week", "2026-10-26..2026-10-28"),
        ("month", "2026-10-01..2026-10-28"), ("year", "2026-01-01..2026-10-28"), ("billing", "2026-10-15..2026-11-14"),
        ("last 30d", "2026-09-29..2026-10-28"), ("last7d", "2026-10-22..2026-10-28"), ("2026-10-25", "2026-10-25"),
        ("2026-02-01..2026-03-31", "2026-02-01..2026-03-31"),
    ])
    func periodsReadRelativeToToday(text: String, expected: String) {
        #expect(BookPeriod.parse(text, today: Self.today, billingDay: 15)?.description == expected)
    }

    @Test(arguments: ["", "fortnight", "last d", "last 0d", "2026-02-30", "2026-03-31..2026-03-01", "2026-01-01...2026-01-02", "last 30"])
    func wordsThatAreNoPeriodAreRefused(text: String) {
        #expect(BookPeriod.parse(text, today: Self.today) == nil)
    }

    /// A billing month from the 15th: before the 15th it is last month's, across a year's end too.
    @Test(arguments: [
        (CivilDate(year: 2026, month: 1, day: 3), "2025-12-15..2026-01-14"), (CivilDate(year: 2026, month: 1, day: 15), "2026-01-15..2026-02-14"),
        (CivilDate(year: 2026, month: 12, day: 31), "2026-12-15..2027-01-14"),
    ])
    func theBillingMonthHoldsTheDate(date: CivilDate, expected: String) {
        #expect(BookPeriod.billing(holding: date, billingDay: 15).description == expected)
    }
}
