import Glibc
import Synchronization
import Threads

/// The daemon's one clock: a thread of its own (`clock`) that wakes once a second and runs each
/// part's work of that second (the engine's tick, the window's cut of slow clients, a look at what
/// waits for the day book), in the order the parts started.
///
/// Each of those parts used to sleep a second in a task of its own, and each sleep woke Dispatch's
/// timer thread and a worker: an idle daemon switched threads about ten times a second, and at ten
/// readings a second that was most of its wake-ups beyond the readings' own. One thread for every
/// part wakes once a second.
///
/// A beat must be short: it delays every part's next one. A part whose work may block (the day
/// book's writes wait for SQLite's lock and the disk) does it in its own task, which its beat
/// wakes only when there is work (`beating(_:while:)`).
final class Heartbeat: Service {
    let name = "clock"
    /// Between two beats.
    let interval: Duration

    private struct Beats {
        var beats: [(id: Int, beat: @Sendable () -> Void)] = []
        var lastID = 0
        var stopped = false
    }

    private let beats = Mutex(Beats())
    /// Held while beats run: a part that stops waits for its running beat to end.
    private let beating = Mutex(())
    /// Signalled to end the thread's wait early: at the stop. On the monotonic clock, so that a
    /// wall clock stepped back does not hold the beats up.
    private let wake = Wakeup()

    init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// Runs the thread from the start until the stop; it is started before the parts that beat and
    /// stopped after them.
    func run() async throws {
        let thread: pthread_t
        do { thread = try NamedThread.start(name) { [self] in beatUntilStopped() } } catch {
            throw RunFailure(status: .failure, message: "cannot start the clock's thread: \(error)")
        }
        defer {
            beats.withLock { $0.stopped = true }
            wake.signal()
            pthread_join(thread, nil)
        }
        try await gracefulShutdown()
    }

    /// Runs `beat` on the clock's thread once every `interval` while the calling part runs, and
    /// `work` (when given) in the calling task; both until the group asks the part to stop. When
    /// this returns, `beat` has run for the last time.
    func beating(_ beat: @escaping @Sendable () -> Void, while work: (@Sendable () async throws -> Void)? = nil) async throws {
        let id = beats.withLock { beats in
            beats.lastID += 1
            beats.beats.append((beats.lastID, beat))
            return beats.lastID
        }
        defer {
            beating.withLock { _ in
                beats.withLock { beats in beats.beats.removeAll { $0.id == id } }
            }
        }
        if let work { try await cancelOnGracefulShutdown(work) } else { try await gracefulShutdown() }
    }

    /// The thread: a beat every `interval` from its start, each due time from the first, so the
    /// beats do not drift by what they take; after a pause longer than a beat (a suspended
    /// machine, a stopped process) the next one is an interval from now.
    private func beatUntilStopped() {
        let step = Wakeup.nanoseconds(interval)
        var due = Wakeup.now() + step
        while !beats.withLock({ $0.stopped }) {
            // Signalled: the stop, which the loop's condition sees.
            guard !wake.wait(until: due) else { continue }
            let now = Wakeup.now()
            due = now >= due + step ? now + step : due + step
            beating.withLock { _ in
                for beat in beats.withLock({ $0.beats }) { beat.beat() }
            }
        }
    }
}
