import Platform

/// Runs the daemon's parts (`Service`) with one start order and one stop order, in the manner of
/// swift-service-lifecycle's `ServiceGroup`, hand-written and small.
///
/// - Start: in the order given, each once the one before it has started (it waits in
///   `gracefulShutdown()`, or has ended already), so a part may rely on the parts before it.
/// - Graceful stop: on `stop()`, or when a part ends (returns or throws) before it is asked to,
///   the parts are asked to stop in the reverse order, each once the one after it has ended: a part
///   still has the parts before it while it stops. A stop asked for while the group starts waits
///   until every part has started; a part that ends while the group starts keeps the parts after
///   it from starting.
/// - Cancellation of the task that runs the group is the hard stop: every part's
///   `gracefulShutdown()` throws at once, and nothing waits for another.
package final class ServiceGroup: Sendable {
    private let stopRequested = Latch()
    private let log: Logger

    package init(log: Logger) {
        self.log = log
    }

    /// Asks for the graceful stop.
    package func stop() { stopRequested.open() }

    /// Runs `services` until they have stopped. Throws the first error a part threw (later ones
    /// are logged with the part's name), or `CancellationError` after the hard stop.
    package func run(_ services: [any Service]) async throws {
        let lifecycles = services.map { _ in ServiceLifecycle() }
        let failures = try await withThrowingTaskGroup(of: (name: String, error: any Error)?.self) { group in
            var started: [(service: any Service, lifecycle: ServiceLifecycle)] = []
            for (service, lifecycle) in zip(services, lifecycles) {
                log.log(.debug, "starting \(service.name)")
                group.addTask { await self.run(service, lifecycle) }
                started.append((service, lifecycle))
                try await lifecycle.started.wait()
                if started.contains(where: { $0.lifecycle.ended.isOpen }) { break }
            }
            try await stopRequested.wait()
            for (service, lifecycle) in started.reversed() where !lifecycle.ended.isOpen {
                log.log(.debug, "stopping \(service.name)")
                lifecycle.stopRequested.open()
                try await lifecycle.ended.wait()
            }
            var failures: [(name: String, error: any Error)] = []
            for try await case let failure? in group { failures.append(failure) }
            return failures
        }
        for failure in failures.dropFirst() { log.log(.error, "\(failure.name): \(failure.error)") }
        if let first = failures.first { throw first.error }
    }

    /// Runs one part in its child task; a part that ends unasked stops the group.
    private func run(_ service: any Service, _ lifecycle: ServiceLifecycle) async -> (name: String, error: any Error)? {
        var failure: (name: String, error: any Error)?
        do {
            try await ServiceLifecycle.$current.withValue(lifecycle) { try await service.run() }
            if !lifecycle.stopRequested.isOpen { failure = (service.name, EndedUnasked(name: service.name)) }
        } catch {
            failure = (service.name, error)
        }
        // Ended before started: the start loop sees the end as soon as it sees the start.
        lifecycle.ended.open()
        lifecycle.started.open()
        if !lifecycle.stopRequested.isOpen { stopRequested.open() }
        return failure
    }
}

/// A part returned before the group asked it to stop: a part runs for as long as the group does.
struct EndedUnasked: Error, CustomStringConvertible {
    let name: String
    var description: String { "\(name) ended before it was asked to stop" }
}

/// What the group and one of its parts share: whether the part has started, has been asked to
/// stop, has ended.
final class ServiceLifecycle: Sendable {
    /// The part's, in the task that runs it and the tasks that task starts.
    @TaskLocal static var current: ServiceLifecycle?

    let started = Latch()
    let stopRequested = Latch()
    let ended = Latch()
}
