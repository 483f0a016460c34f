import Mosquitto
import TestSupport
import Synchronization
import Threads

/// Collects a client's events on a background task, so a test can wait for one with a timeout
/// without cancelling (and so losing) a pending `next()`. Nothing here can hang a test.
final class EventLog: Sendable {
    private final class Storage: Sendable {
        let state = Mutex<(events: [MQTTEvent], consumed: Int)>(([], 0))
    }
    private let storage = Storage()

    init(_ events: MQTTEvents) {
        // On a thread of its own, as the tests are (`.ownThread`): the shared pool may be busy.
        let executor = try? ThreadExecutor(name: "event log")
        Task(executorPreference: executor) { [storage] in
            for await event in events { storage.state.withLock { $0.events.append(event) } }
            executor?.finish()
        }
    }

    /// Every event seen so far, consumed or not.
    var all: [MQTTEvent] { storage.state.withLock { $0.events } }

    /// The next event in order that matches `predicate`; the ones skipped on the way are consumed.
    /// `nil` when none arrives within `timeout`.
    func next(timeout: Duration = readinessTimeout, where predicate: (MQTTEvent) -> Bool = { _ in true }) async -> MQTTEvent? {
        await poll(timeout: timeout) {
            storage.state.withLock { s in
                while s.consumed < s.events.count {
                    let event = s.events[s.consumed]
                    s.consumed += 1
                    if predicate(event) { return event }
                }
                return nil
            }
        }
    }

    func nextMessage(timeout: Duration = readinessTimeout) async -> MQTTMessage? {
        guard case .message(let message)? = await next(timeout: timeout, where: { if case .message = $0 { true } else { false } })
        else { return nil }
        return message
    }

    func nextConnected(timeout: Duration = readinessTimeout) async -> Bool {
        await next(timeout: timeout, where: { $0 == .connected }) != nil
    }

    /// The reason of the next `.disconnected`, or `nil` on timeout.
    func nextDisconnect(timeout: Duration = readinessTimeout) async -> String? {
        guard case .disconnected(let reason)? = await next(timeout: timeout, where: {
            if case .disconnected = $0 { true } else { false }
        }) else { return nil }
        return reason
    }
}
