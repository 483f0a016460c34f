import DayBook
import FlowCore
import Foundation
import Testing

@Suite struct BookQueueTests {
    /// What waits goes through the state file and comes back the same.
    @Test func theQueueReadsBackFromTheState() throws {
        var queue = BookQueue()
        let (slots, day) = homeDay(CivilDate(year: 2026, month: 10, day: 25))
        slots.prefix(5).forEach { queue.add($0) }
        queue.add(day)
        let state: JSONValue = ["version": 1]
        let saved = queue.saved(in: state)
        let text = saved.description
        #expect(BookQueue(state: try JSONValue(parsing: text)) == queue)
        #expect(BookQueue().saved(in: state) == state)
    }

    /// A week is kept; older slots go, counted.
    @Test func aWeekIsKept() {
        var queue = BookQueue()
        let start = Date(timeIntervalSince1970: 1_780_000_200)
        for index in 0..<(8 * 96) { queue.add(homeSlot(start.addingTimeInterval(Double(index) * ClosedSlot.seconds))) }
        #expect(queue.slots.count == 7 * 96 + 1)
        #expect(queue.dropped == 96 - 1)
    }

    /// What a writer wrote goes, however the queue moved meanwhile: a slot added after the copy
    /// stays, one dropped at the bound is not taken for another.
    @Test func whatWasWrittenGoesAndNothingElse() {
        var queue = BookQueue()
        let start = Date(timeIntervalSince1970: 1_780_000_200)
        for index in 0..<3 { queue.add(homeSlot(start.addingTimeInterval(Double(index) * ClosedSlot.seconds))) }
        let taken = queue
        queue.add(homeSlot(start.addingTimeInterval(3 * ClosedSlot.seconds)))
        // A restart closed the second slot again with other figures: that one was not written.
        var again = queue.slots[1]
        again.energyKWh["exchange"]?[.imported] = 9
        queue.add(again)
        queue.written(slots: taken.slots, days: taken.days)
        #expect(queue.slots.map(\.start) == [start.addingTimeInterval(3 * ClosedSlot.seconds), start.addingTimeInterval(ClosedSlot.seconds)])
        #expect(queue.slots.last == again)
    }
}
