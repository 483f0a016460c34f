/// A part of the running daemon (the broker connection, the engine's clock, a sink, the signals),
/// run by a `ServiceGroup` in the manner of swift-service-lifecycle.
///
/// `run()` does the part's start, waits in `gracefulShutdown()` until the group asks it to stop,
/// then does its stop and returns. A part that returns or throws before it is asked stops the
/// group. Cancellation is the hard stop: `gracefulShutdown()` throws, and the part's stop is skipped.
package protocol Service: Sendable {
    /// Names the part in the log: `mqtt connection`, `push:power`.
    var name: String { get }
    func run() async throws
}

/// Waits until the group asks the calling service to stop. Reaching it means the service has
/// started: the group starts the next one then. Throws `CancellationError` when the task is
/// cancelled instead (the hard stop). Outside a group nothing asks, and only cancellation ends it.
package func gracefulShutdown() async throws {
    let lifecycle = ServiceLifecycle.current ?? ServiceLifecycle()
    lifecycle.started.open()
    try await lifecycle.stopRequested.wait()
}

/// Runs `operation` until the group asks the calling service to stop, then cancels it and returns
/// once it has ended: for a part whose work is a loop (the clock, the signals). An operation that
/// ends or throws by itself ends the wait, and what it threw is thrown. Throws
/// `CancellationError` after the hard stop.
package func cancelOnGracefulShutdown(_ operation: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask(operation: operation)
        group.addTask { try await gracefulShutdown() }
        try await group.next()
        group.cancelAll()
    }
    try Task.checkCancellation()
}

/// A part whose work is at its start and at its stop, with nothing in between: a sink delivers what
/// it still holds at its stop, the state is written at its stop.
struct StartStopService: Service {
    let name: String
    var start: @Sendable () throws -> Void = {}
    var stop: @Sendable () throws -> Void = {}

    func run() async throws {
        try start()
        try await gracefulShutdown()
        try stop()
    }
}
