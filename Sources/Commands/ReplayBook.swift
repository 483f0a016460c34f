import DayBook
import FlowCore

/// Where replay's closed slots and days go, through the same queue the daemon fills: with
/// `--book`, into that day book a day at a time (a year's trace never holds more than a day's
/// slots); with `--state` alone, into the state's queue, which the daemon writes to its book (a
/// restart replayed loses none of the day's slots); else nowhere.
struct ReplayBook {
    let book: DayBook?
    let zone: any LocalTimeZone
    /// What waits: from the state, then what the trace closes.
    var waiting: BookQueue
    /// The first error; the rest of the trace is still replayed, and the command fails at its end.
    var failure: BookError?

    init(path: String?, zone: any LocalTimeZone, waiting: BookQueue) throws(BookError) {
        book = try path.map { path throws(BookError) in try DayBook(path: path) }
        self.zone = zone
        self.waiting = waiting
    }

    mutating func take(_ outputs: [FlowEngine.Output]) {
        for output in outputs {
            waiting.take(output, zone: zone)
            if case .closedDay = output, book != nil { try? flush() }
        }
    }

    /// Writes what waits to the book, in one transaction (without a book it stays in `waiting`).
    mutating func flush() throws(BookError) {
        if let failure { throw failure }
        guard let book else { return }
        do {
            try book.write(slots: waiting.slots, days: waiting.days)
            waiting = BookQueue()
        } catch {
            failure = error
            throw error
        }
    }
}
