/// How long a test waits for something that is going to happen (a process that starts, a message
/// that arrives, a log line): generous, because a machine busy with the parallel suite can take
/// seconds for a step, and free, because every wait returns as soon as its condition holds. A
/// wait for something that must NOT happen names its own, short, timeout.
public let readinessTimeout: Duration = .seconds(30)

/// Polls `condition` (without blocking a thread) until it holds or `timeout` passes; whether it held.
public func eventually(timeout: Duration = readinessTimeout, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while true {
        if try await condition() { return true }
        if clock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
}
