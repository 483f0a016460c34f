import DayBook
import FlowCore

/// `replay --book`: the trace's closed slots and days into a day book, through the same queue the
/// daemon fills, written a day at a time (a year's trace never holds more than a day's slots).
struct ReplayBook {
    let book: DayBook
    let zone: any LocalTimeZone
    var waiting = BookQueue()
    /// The first error; the rest of the trace is still replayed, and the command fails at its end.
    var failure: BookError?

    init(path: String, zone: any LocalTimeZone) throws(BookError) {
        book = try DayBook(path: path)
        self.zone = zone
    }

    mutating func take(_ outputs: [FlowEngine.Output]) {
        for output in outputs {
            waiting.take(output, zone: zone)
            if case .closedDay = output { try? flush() }
        }
    }

    /// Writes what waits, in one transaction.
    mutating func flush() throws(BookError) {
        if let failure { throw failure }
        do {
            try book.write(slots: waiting.slots, days: waiting.days)
            waiting = BookQueue()
        } catch {
            failure = error
            throw error
        }
    }
}
