import Synchronization
import Testing
import Threads

/// A wait another thread ends early, timed on the monotonic clock (the clock's beat, a sink's
/// hold-off).
@Suite(.timeLimit(.minutes(1))) struct WakeupTests {
    /// Signals given before the wait, and the deadline the wait has (nanoseconds from now; nil:
    /// none); what the wait returns, and what a second wait with a deadline already past returns.
    struct Case: Sendable, CustomTestStringConvertible {
        var signals: Int
        var deadlineFromNow: Int64?
        var first: Bool
        var second: Bool
        var testDescription: String { "\(signals) signals, deadline \(deadlineFromNow.map { "\($0) ns" } ?? "none")" }
    }

    @Test(arguments: [
        Case(signals: 1, deadlineFromNow: nil, first: true, second: false),
        Case(signals: 1, deadlineFromNow: -1_000_000, first: true, second: false),
        Case(signals: 3, deadlineFromNow: 1_000_000_000, first: true, second: false),
        Case(signals: 0, deadlineFromNow: -1_000_000, first: false, second: false),
        Case(signals: 0, deadlineFromNow: 0, first: false, second: false),
    ])
    func aWaitTakesTheSignalsGivenBeforeIt(_ example: Case) {
        let wakeup = Wakeup()
        for _ in 0..<example.signals { wakeup.signal() }
        let now = Int64(Wakeup.now())
        #expect(wakeup.wait(until: example.deadlineFromNow.map { UInt64(now + $0) }) == example.first)
        #expect(wakeup.wait(until: Wakeup.now() - 1) == example.second)
    }

    /// The deadline is on the monotonic clock: a wall clock's deadline read as a monotonic one (or
    /// the reverse) is decades away or long past, and the wait would not end 20 ms on.
    @Test func aWaitWithoutASignalEndsAtItsDeadline() {
        let wakeup = Wakeup()
        let start = Wakeup.now()
        #expect(!wakeup.wait(until: start + 20_000_000))
        #expect(Wakeup.now() - start >= 20_000_000)
    }

    @Test func aSignalFromAnotherThreadEndsAWaitWithoutDeadline() throws {
        let wakeup = Wakeup()
        let waited = Wakeup()
        let result = Mutex<Bool?>(nil)
        try NamedThread.start("test waiter", detached: true) {
            let signalled = wakeup.wait()
            result.withLock { $0 = signalled }
            waited.signal()
        }
        wakeup.signal()
        waited.wait()
        #expect(result.withLock { $0 } == true)
    }

    /// A duration as the waits count it: nanoseconds, a fraction of one dropped, none below 0.
    @Test(arguments: [
        (Duration.seconds(1), 1_000_000_000 as UInt64),
        (Duration.milliseconds(5), 5_000_000 as UInt64),
        (Duration.seconds(3600) + .nanoseconds(7), 3_600_000_000_007 as UInt64),
        (Duration(secondsComponent: 0, attosecondsComponent: 999_999_999), 0 as UInt64),
        (Duration.zero, 0 as UInt64),
        (Duration.milliseconds(-5), 0 as UInt64),
    ])
    func aDurationInNanoseconds(duration: Duration, nanoseconds: UInt64) {
        #expect(Wakeup.nanoseconds(duration) == nanoseconds)
    }
}
