import Synchronization

/// Something that happens once (a service started, was asked to stop, ended), awaited by any
/// number of tasks without a thread blocked meanwhile.
final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        /// Waits whose task was cancelled before they stored their continuation.
        var cancelled: Set<Int> = []
        var lastWaiter = 0
    }

    private let state = Mutex(State())

    var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Lets every wait, now and later, return.
    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the latch is open; throws `CancellationError` when the task is cancelled first.
    func wait() async throws {
        let id = state.withLock { state in
            state.lastWaiter += 1
            return state.lastWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if state.isOpen { return .success(()) }
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    state.waiters[id] = waiter
                    return nil
                }
                if let outcome { waiter.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                if !state.isOpen { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
