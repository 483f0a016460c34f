import DayBook
import FoundationEssentials
import Platform
import Synchronization
import Threads

/// The daemon's part that writes the day book: it takes what waits in the bridge's queue (closed
/// slots and days, kept in the state), writes it in one transaction outside the engine's lock, and
/// lets it go from the queue once it is in the book.
///
/// A book that cannot be written (locked by another program, damaged, a full disk, a read-only
/// folder) stops nothing: today's totals and pushes never depend on it. The log says so once,
/// with the reason; the queue keeps the slots (up to a week, `BookQueue`), and every
/// `retrySeconds` the writer opens the book afresh and tries again. When it succeeds the log says
/// how much caught up.
final class BookWriter: Service, Sendable {
    let name = "day book"
    let path: String
    let clock: Heartbeat
    let bridge: Bridge
    let log: Logger
    /// How long a failing book rests before the next try.
    let retrySeconds: Double

    private struct Writer: ~Copyable {
        var book: DayBook?
        /// Why the last write failed; nil while the book is written.
        var failure: BookError?
        var failedAt: Date?
        /// How many slots and days were let go unwritten, as last said.
        var droppedSaid = 0
    }

    private let writer = Mutex(Writer())

    init(path: String, clock: Heartbeat, bridge: Bridge, retrySeconds: Double = 10, log: Logger) {
        self.path = path
        self.clock = clock
        self.bridge = bridge
        self.retrySeconds = retrySeconds
        self.log = log
    }

    /// The clock's beat looks whether anything waits (a closed slot or day, a failed write) and
    /// only then wakes the writer's task, which writes outside the clock's thread: a book that
    /// waits for SQLite's lock or the disk never holds up the engine's tick.
    ///
    /// The task runs on a thread of its own, `day book`: the daemon's other tasks share one thread
    /// (`tasks`, see `ThreadExecutor`), and a write that waits (SQLite's lock, up to 2 s a try; a
    /// slow SD card at midnight) would hold a reload or the signals' stop meanwhile. The thread
    /// sleeps between writes.
    func run() async throws {
        try await ThreadExecutor.onThread(named: "day book") {
            let (rings, bell) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            try await clock.beating({ [bridge] in
                if !bridge.bookWaiting().isEmpty { bell.yield() }
            }, while: { [self] in
                for await _ in rings { writeWaiting(at: bridge.time.now(), force: false) }
            })
            // At the stop: what closed last goes in now, unless the book is failing (then it waits
            // in the state, which is written after this).
            writeWaiting(at: bridge.time.now(), force: false)
        }
    }

    /// Writes what waits, unless the book failed less than `retrySeconds` ago (`force`: try anyway).
    /// Returns whether nothing waits any more.
    @discardableResult
    func writeWaiting(at now: Date, force: Bool) -> Bool {
        writer.withLock { writer in
            let waiting = bridge.bookWaiting()
            if waiting.dropped > writer.droppedSaid {
                log.log(.warning, "the day book \(path) could not be written for a week: \(waiting.dropped - writer.droppedSaid) slots and days older than that were let go")
                writer.droppedSaid = waiting.dropped
            }
            guard !waiting.isEmpty else { return true }
            if !force, let failedAt = writer.failedAt, now.timeIntervalSince(failedAt) < retrySeconds { return false }
            do throws(BookError) {
                if writer.book == nil { writer.book = try DayBook(path: path) }
                try writer.book?.write(slots: waiting.slots, days: waiting.days)
            } catch {
                // Opened afresh next time: a file replaced or repaired meanwhile is the new one.
                writer.book = nil
                writer.failedAt = now
                if writer.failure == nil {
                    log.log(.error, "\(error); today's totals and pushes go on, and the closed slots wait in the state (up to a week) until the book can be written")
                }
                writer.failure = error
                return false
            }
            bridge.bookWritten(waiting)
            if writer.failure != nil {
                log.log(.info, "the day book \(path) is written again: \(waiting.slots.count) slots and \(waiting.days.count) days caught up")
                writer.failure = nil
                writer.failedAt = nil
            }
            return true
        }
    }
}
