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
/// While readings come faster than `grace` apart, they take the beat: the network thread, done
/// with a batch, runs the beat that is due (`beatIfDue`) and moves the clock's alarm past the next
/// one, so the clock's thread sleeps on. At 10 readings a second its wake-up each second was a
/// tenth of every reading's cost again, for a beat of a few thousand instructions. The beats keep
/// their cadence, a second apart on average, each up to `grace` late.
///
/// A beat must be short: it delays every part's next one, and the reading that takes it. A part
/// whose work may block (the day book's writes wait for SQLite's lock and the disk) does it in its
/// own task, which its beat wakes only when there is work (`beating(_:while:)`).
final class Heartbeat: Service {
    let name = "clock"
    /// Between two beats.
    let interval: Duration
    /// How late a beat may come, waiting for a reading to take it: a quarter of `interval`.
    let grace: Duration

    private struct Beats {
        var beats: [(id: Int, beat: @Sendable () -> Void)] = []
        var lastID = 0
        var stopped = false
    }

    private let beats = Mutex(Beats())
    /// When the next beat is due (`Wakeup.now()`'s nanoseconds); 0 before the thread starts.
    /// Atomic: every batch of readings looks, and nearly always it is not yet; a beat is claimed
    /// by moving it on, and only one thread can.
    private let due = Atomic<UInt64>(0)
    /// Held while beats run: a part that stops waits for its running beat to end, and two
    /// threads' beats do not overlap.
    private let beating = Mutex(())
    /// The clock's thread's wait, until `grace` after the beat due: moved by whoever beats, and
    /// set to now at the stop. On the monotonic clock, so that a wall clock stepped back does not
    /// hold the beats up.
    private let alarm: Alarm

    init(interval: Duration = .seconds(1)) throws(Alarm.SetupError) {
        self.interval = interval
        grace = interval / 4
        alarm = try Alarm()
    }

    /// Runs the thread from the start until the stop; it is started before the parts that beat and
    /// stopped after them.
    func run() async throws {
        let thread: pthread_t
        do { thread = try NamedThread.start(name) { [self] in beatUntilStopped() } } catch {
            throw RunFailure(status: .failure, message: "cannot start the clock's thread: \(error)")
        }
        defer {
            beats.withLock { beats in
                beats.stopped = true
                alarm.set(0)  // under the lock: no beat moves it later again
            }
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
    /// machine, a stopped process) the next one is an interval from now. It sleeps until `grace`
    /// after the beat due, and a beat that readings took meanwhile moves that on.
    private func beatUntilStopped() {
        due.store(Wakeup.now() + Wakeup.nanoseconds(interval), ordering: .relaxed)
        while setAlarm() {
            alarm.wait()
            beatIfDue()
        }
    }

    /// Sets the alarm `grace` after the beat due now, unless the clock has stopped (false). Under
    /// the lock, so that the stop's alarm, set at once, is not moved later again; and from the
    /// latest due time, so that a thread slow to set it after its beat cannot set it back.
    private func setAlarm() -> Bool {
        beats.withLock { beats in
            if !beats.stopped { alarm.set(due.load(ordering: .relaxed) + Wakeup.nanoseconds(grace)) }
            return !beats.stopped
        }
    }

    /// Runs the beat if one is due now: on the clock's thread when its alarm rings, and on the
    /// network thread after each batch of readings (`BrokerConnection`), which so takes the beat
    /// while readings come. Whoever takes it sets the next one, and the alarm after it.
    func beatIfDue() {
        let now = Wakeup.now()
        let current = due.load(ordering: .relaxed)
        guard current > 0, now >= current else { return }
        let step = Wakeup.nanoseconds(interval)
        let next = now >= current + step ? now + step : current + step
        guard due.compareExchange(expected: current, desired: next, ordering: .relaxed).exchanged, setAlarm() else { return }
        beating.withLock { _ in
            for beat in beats.withLock({ $0.beats }) { beat.beat() }
        }
    }
}
