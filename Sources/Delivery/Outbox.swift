import Dispatch
import FlowCore
import FoundationEssentials
import Synchronization

/// The bounded queue between the engine and one sink's delivery thread.
///
/// The engine's side (`offer`) only appends under a short lock, never waits. A serial dispatch
/// queue of the sink's own drains it and calls `deliver` with every push taken, in order, each with
/// the patch from what the sink took before: the engine's patch while the sink keeps up, a diff of
/// its own after it fell behind. When `capacity` pushes wait, a widget's waiting pushes collapse
/// into its latest one (coalescing), so memory stays bounded however long the sink is stuck, and
/// the first push after the jam carries the current truth. The first coalescing is reported once
/// through `onCoalesce`.
public final class Outbox: Sendable {
    public let capacity: Int
    private let deliver: @Sendable ([OutgoingPush]) -> Void
    private let onCoalesce: @Sendable () -> Void
    private let queue: DispatchQueue

    private struct Waiting {
        var pushes: [WidgetPush] = []
        /// A drain is scheduled or running.
        var draining = false
        var stopped = false
        var coalesced = false
    }

    /// What the sink last took, per widget: the base of the next patch. Touched only by the drain.
    private struct Taken {
        var sequence: UInt64
        var document: WidgetContent
    }

    private let waiting = Mutex(Waiting())
    private let taken = Mutex<[String: Taken]>([:])

    /// - Parameters:
    ///   - label: names the delivery thread.
    ///   - capacity: pushes that may wait before they coalesce (at least 1).
    ///   - deliver: runs on the outbox's own thread; it may block (a write, a request).
    ///   - onCoalesce: called once, the first time pushes are coalesced.
    public init(
        label: String, capacity: Int, deliver: @escaping @Sendable ([OutgoingPush]) -> Void,
        onCoalesce: @escaping @Sendable () -> Void
    ) {
        self.capacity = max(1, capacity)
        self.deliver = deliver
        self.onCoalesce = onCoalesce
        queue = DispatchQueue(label: "flowbridge.sink.\(label)")
    }

    /// Queues a push; never blocks.
    public func offer(_ push: WidgetPush) {
        let (schedule, firstCoalescing) = waiting.withLock { state -> (Bool, Bool) in
            if state.stopped { return (false, false) }
            var coalescing = false
            if state.pushes.count >= capacity {
                // The widget's waiting pushes give way to its latest; other widgets' never do, so
                // the queue holds at most `capacity` plus one push per widget.
                let before = state.pushes.count
                state.pushes.removeAll { $0.widget == push.widget }
                coalescing = state.pushes.count < before
            }
            state.pushes.append(push)
            let first = coalescing && !state.coalesced
            if coalescing { state.coalesced = true }
            defer { state.draining = true }
            return (!state.draining, first)
        }
        if firstCoalescing { onCoalesce() }
        if schedule { queue.async { self.drain() } }
    }

    /// Lets the queue empty, up to `timeout`, then takes nothing more. True when all was delivered.
    @discardableResult
    public func stop(timeout: Duration) -> Bool {
        let done = DispatchSemaphore(value: 0)
        queue.async {
            self.waiting.withLock { $0.stopped = true }
            done.signal()
        }
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        let finished = done.wait(timeout: .now() + .nanoseconds(Int(max(0, nanoseconds)))) == .success
        if !finished { waiting.withLock { $0.stopped = true } }
        return finished
    }

    private func drain() {
        while true {
            let batch = waiting.withLock { state -> [WidgetPush] in
                if state.pushes.isEmpty {
                    state.draining = false
                    return []
                }
                defer { state.pushes.removeAll(keepingCapacity: true) }
                return state.pushes
            }
            if batch.isEmpty { return }
            let outgoing = taken.withLock { taken in batch.compactMap { Self.outgoing($0, after: &taken) } }
            if !outgoing.isEmpty { deliver(outgoing) }
        }
    }

    /// The push as this sink sends it, and the record of what it took; nil when nothing changed
    /// for it (pushes that cancelled out while it waited).
    private static func outgoing(_ push: WidgetPush, after taken: inout [String: Taken]) -> OutgoingPush? {
        defer { taken[push.widget] = Taken(sequence: push.sequence, document: push.document) }
        let previous = taken[push.widget]
        if push.isFullContent || previous.map({ $0.sequence + 1 == push.sequence }) == true {
            return OutgoingPush(widget: push.widget, at: push.at, patch: push.patch, document: push.document, isFullContent: push.isFullContent)
        }
        guard let previous else {
            return OutgoingPush(widget: push.widget, at: push.at, patch: push.document.json, document: push.document, isFullContent: true)
        }
        guard let patch = MergePatch.diff(from: previous.document.json, to: push.document.json) else { return nil }
        return OutgoingPush(widget: push.widget, at: push.at, patch: patch, document: push.document, isFullContent: false)
    }
}
