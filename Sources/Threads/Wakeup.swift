#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A thread's wait that another thread can end early, timed on the monotonic clock: a sink's
/// hold-off and retry, the broker's reconnect backoff, a stop's bounded wait. (The clock's beat
/// waits on an `Alarm`, whose time other threads move without waking it.)
///
/// `DispatchSemaphore.wait(timeout:)` waits in `sem_timedwait`, whose deadline is on the wall
/// clock: a wall clock stepped back during the wait (NTP at boot, a person, a Pi's saved clock)
/// makes the wait that much longer, and a clock thread asleep for an hour is an engine without
/// ticks and a watchdog that kills the service. This waits on a condition variable whose clock is
/// `CLOCK_MONOTONIC`, which no one steps.
public final class Wakeup: @unchecked Sendable {
    // Allocated once and never moved, as pthread's types must be; guarded by `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var signalled = false

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Now on the monotonic clock, in nanoseconds: what `wait(until:)` takes.
    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// `duration` as `now()` and `wait(until:)` count: nanoseconds, none below 0.
    public static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }

    /// Ends the wait under way, or else the next one at once. Signals do not add up: one wait
    /// takes every signal given before it.
    public func signal() {
        pthread_mutex_lock(mutex)
        signalled = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits for `signal()`, or until `deadline` (`now()`'s nanoseconds; nil: no deadline). True
    /// when signalled.
    @discardableResult
    public func wait(until deadline: UInt64? = nil) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var limit = deadline.map { timespec(nanoseconds: $0) }
        while !signalled {
            if limit == nil {
                pthread_cond_wait(condition, mutex)
            } else if pthread_cond_timedwait(condition, mutex, &limit!) == ETIMEDOUT {
                return false
            }
        }
        signalled = false
        return true
    }
}

extension timespec {
    /// A time in nanoseconds as `Wakeup.now()` counts them, as the system takes it: the deadline of
    /// a `Wakeup`'s wait and an `Alarm`'s time.
    init(nanoseconds: UInt64) {
        self.init(tv_sec: Int(clamping: nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    }
}
