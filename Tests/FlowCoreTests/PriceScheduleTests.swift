@testable import FlowCore
import Foundation
import Testing

/// How schedules combine: a newer one is the feed's word from the moment it came, where it
/// overlaps an older one; before that moment, what was known stays, and its past slots only fill
/// gaps. Times in hours after 10:00, prices per kWh.
@Suite struct PriceScheduleTests {
    static let ten = Date(timeIntervalSince1970: 1_780_308_000)  // 2026-06-01T10:00:00Z

    static func slots(_ list: [(Double, Double, Double)]) -> [PriceSlot] {
        list.map { PriceSlot(start: ten.addingTimeInterval($0.0 * 3600), end: ten.addingTimeInterval($0.1 * 3600), basePerKWh: $0.2) }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// Each schedule with the hour it came at.
        var schedules: [(at: Double, slots: [(Double, Double, Double)])]
        var expected: [(Double, Double, Double)]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "the first schedule, past slots and all", schedules: [(0.5, [(0, 1, 0.3), (1, 2, 0.4)])], expected: [(0, 1, 0.3), (1, 2, 0.4)]),
        Case(name: "a newer one replaces from when it came",
             schedules: [(0, [(0, 1, 0.3), (1, 2, 0.3), (2, 3, 0.2)]), (0.5, [(0, 1, 0.5), (1, 2, 0.6)])],
             expected: [(0, 0.5, 0.3), (0.5, 1, 0.5), (1, 2, 0.6), (2, 3, 0.2)]),
        Case(name: "the past a newer one has only fills gaps",
             schedules: [(1.5, [(1, 2, 0.4)]), (1.75, [(0, 1, 0.3), (1, 2, 0.9)])],
             expected: [(0, 1, 0.3), (1, 1.75, 0.4), (1.75, 2, 0.9)]),
        Case(name: "the same schedule again changes nothing",
             schedules: [(0.25, [(0, 1, 0.3), (1, 2, 0.4)]), (0.5, [(0, 1, 0.3), (1, 2, 0.4)]), (1.5, [(0, 1, 0.3), (1, 2, 0.4)])],
             expected: [(0, 1, 0.3), (1, 2, 0.4)]),
        Case(name: "a day ahead added to today",
             schedules: [(0, [(0, 1, 0.3)]), (0.5, [(24, 25, 0.1)])], expected: [(0, 1, 0.3), (24, 25, 0.1)]),
        Case(name: "an empty schedule takes nothing back", schedules: [(0, [(0, 1, 0.3)]), (0.5, [])], expected: [(0, 1, 0.3)]),
    ]

    @Test(arguments: cases)
    func schedulesCombine(_ test: Case) {
        var schedule = PriceSchedule()
        for (at, slots) in test.schedules { schedule.take(Self.slots(slots), at: Self.ten.addingTimeInterval(at * 3600)) }
        #expect(schedule.slots == Self.slots(test.expected))
    }

    /// A timeline prices each instant by the slot in force, changes at slot boundaries, and has no
    /// price where no slot covers: never the last slot's price carried on.
    @Test func aTimelinePricesBySlotAndNotBeyond() {
        var timeline = PriceTimeline(config: PriceConfig(base: .source("prices"), feesPerKWh: 0.05, vatPercent: 20), holdSeconds: nil)
        timeline.take(schedule: Self.slots([(0, 1, 0.3), (1, 2, 0.4)]), at: Self.ten)
        let zone = FixedOffsetZone()
        #expect(timeline.price(at: Self.ten.addingTimeInterval(1800), zone: zone).map { ($0 * 1e9).rounded() / 1e9 } == 0.42)
        #expect(timeline.nextChange(after: Self.ten.addingTimeInterval(1800), zone: zone) == Self.ten.addingTimeInterval(3600))
        #expect(timeline.price(at: Self.ten.addingTimeInterval(2 * 3600), zone: zone) == nil)
        #expect(timeline.price(at: Self.ten.addingTimeInterval(-1), zone: zone) == nil)
        var stretches: [Double?] = []
        timeline.forEachStretch(from: Self.ten.addingTimeInterval(1800), to: Self.ten.addingTimeInterval(3 * 3600), zone: zone) { _, _, price in
            stretches.append(price.map { ($0 * 1e9).rounded() / 1e9 })
        }
        #expect(stretches == [0.42, 0.54, nil])
    }

    /// `price_now` names the next price's time alone within a day, with its date beyond (a
    /// weekend's rest to Monday's day zone).
    @Test(arguments: [
        ("2026-06-01T06:30:00Z", "Now €0.250/kWh, €0.350 from 07:00"),
        ("2026-06-01T21:30:00Z", "Now €0.350/kWh, €0.250 from 22:00"),
        ("2026-06-05T22:30:00Z", "Now €0.250/kWh, €0.350 from 2026-06-08 07:00"),
    ])
    func priceNowSaysWhenTheNextPriceComes(now: String, text: String) throws {
        let table = try TimeOfUseTable(zones: [TimeOfUseZone(days: [.monday, .tuesday, .wednesday, .thursday, .friday], fromMinute: 420, toMinute: 1320, basePerKWh: 0.35), TimeOfUseZone(basePerKWh: 0.25, isRest: true)])
        let config = FlowConfig(sources: [], widgets: [], tariff: TariffConfig(importPrice: PriceConfig(base: .zones(table))))
        #expect(DayPricing(config: config).priceNowText(at: RFC3339.parse(now)!, zone: FixedOffsetZone(), currency: .euro) == text)
    }
}
