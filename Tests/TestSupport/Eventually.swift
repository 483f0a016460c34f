import Dispatch

/// How long a test waits for something that is going to happen (a process that starts, a message
/// that arrives, a log line): generous, because a machine busy with the parallel suite can take
/// seconds for a step, and free, because every wait returns as soon as its condition holds. A
/// wait for something that must NOT happen names its own, short, window (see `consistently`).
public let readinessTimeout: Duration = .seconds(30)

/// How often a wait looks again: at once a few times (most things a test waits for happen within
/// milliseconds), then less and less often, up to the longest pause: a test goes on a moment after
/// the thing happened, and the many tests waiting at once for something slow (a daemon's start on
/// a busy machine) do not add to the load by reading its log a hundred times a second.
let pollIntervals: (first: Duration, longest: Duration) = (.milliseconds(2), .milliseconds(50))

/// Where the pauses between looks end: a queue of its own, so that a pause ends on time while the
/// shared cooperative pool is busy, where `Task.sleep` ends (and resumes the test behind every
/// test waiting for the pool, see `OwnThreadTrait`).
private let pauses = DispatchQueue(label: "flowbridge.tests.pauses")

/// Suspends for `duration`; the test goes on on its own executor (its thread under `.ownThread`).
func pause(for duration: Duration) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        pauses.asyncAfter(deadline: .now() + .nanoseconds(Int(duration / .nanoseconds(1)))) { continuation.resume() }
    }
}

/// Polls `attempt` (without blocking a thread) until it gives a value or `timeout` passes: that
/// value, or nil. Every wait of the tests is this loop: a process that starts or exits, a log line,
/// a message, a delivery. A cancelled test stops waiting (nil).
public func poll<Value>(timeout: Duration = readinessTimeout, _ attempt: () async throws -> Value?) async rethrows -> Value? {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    var interval = pollIntervals.first
    while true {
        if let value = try await attempt() { return value }
        if clock.now >= deadline || Task.isCancelled { return nil }
        await pause(for: interval)
        interval = min(interval * 2, pollIntervals.longest)
    }
}

/// Whether `condition` came to hold within `timeout` (polled; see `poll`).
public func eventually(timeout: Duration = readinessTimeout, _ condition: () async throws -> Bool) async rethrows -> Bool {
    try await poll(timeout: timeout) { try await condition() ? true : nil } ?? false
}

/// Whether `condition` held throughout `window`; false as soon as it breaks. For what must NOT
/// happen, and only after a positive event showed that the code got to the point where it would
/// happen: the one wait that lasts its whole window, because what it shows is that time passed
/// without the thing. Each use says why its window is long enough.
public func consistently(for window: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
    try await !eventually(timeout: window) { try await !condition() }
}
