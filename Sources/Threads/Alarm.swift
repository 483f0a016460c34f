import CTimerFD
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A thread's wait until a time on the monotonic clock, which any thread can move without waking
/// the waiter: a timerfd. A `Wakeup`'s timed wait can only be cut short, by waking its thread; the
/// clock's beat, taken over by the readings while they come (`Heartbeat`), moves its next time at
/// every beat, and a wake-up per move is what it saves.
public final class Alarm: Sendable {
    private let fd: Int32

    /// Why there is no alarm: the system's reason (out of descriptors).
    public struct SetupError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Not set: `wait()` waits until `set`.
    public init() throws(SetupError) {
        fd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC))
        guard fd >= 0 else { throw SetupError(description: "timerfd_create: \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    /// Sets when `wait()` ends: at `deadline` (`Wakeup.now()`'s nanoseconds), at once when it has
    /// passed. The time set before is forgotten, and with it a ring that was not waited for yet.
    public func set(_ deadline: UInt64) {
        // A time of 0 would disarm it.
        var setting = itimerspec(it_interval: timespec(), it_value: timespec(nanoseconds: max(deadline, 1)))
        timerfd_settime(fd, Int32(TFD_TIMER_ABSTIME), &setting, nil)
    }

    /// Waits until the time last set has come.
    public func wait() {
        var rings: UInt64 = 0
        while read(fd, &rings, MemoryLayout<UInt64>.size) < 0, errno == EINTR {}
    }
}
