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
///
/// A push that comes after a quiet spell is delivered at once; one that comes within `holdOff` of
/// the last delivery waits for the end of that window, with every push that arrives meanwhile. So
/// a flood of readings costs one wake-up of the delivery thread and one `deliver` per window
/// instead of one per push (a thread wake-up is worth more CPU than making the push itself).
public final class Outbox: Sendable {
    /// The least time between two deliveries: what a push may wait for its batch.
    public static let holdOff = DispatchTimeInterval.milliseconds(5)

    public let capacity: Int
    private let deliver: @Sendable ([OutgoingPush]) -> Void
    private let onCoalesce: @Sendable () -> Void
    private let queue: DispatchQueue

    private struct Waiting {
        var pushes: [WidgetPush] = []
        /// A drain is scheduled or running.
        var draining = false
        /// When the last drain ended: the next one waits until `holdOff` after it.
        var drained: DispatchTime?
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
        let (schedule, drained, firstCoalescing) = waiting.withLock { state -> (Bool, DispatchTime?, Bool) in
            if state.stopped { return (false, nil, false) }
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
            return (!state.draining, state.drained, first)
        }
        if firstCoalescing { onCoalesce() }
        if schedule { scheduleDrain(after: drained) }
    }

    /// Drains at once, or at the end of the hold-off after a drain that ended at `drained`.
    private func scheduleDrain(after drained: DispatchTime?) {
        if let drained, case let due = drained + Self.holdOff, due > .now() {
            queue.asyncAfter(deadline: due) { self.drain() }
        } else {
            queue.async { self.drain() }
        }
    }

    /// Lets the queue empty, up to `timeout`, then takes nothing more. True when all was delivered.
    @discardableResult
    public func stop(timeout: Duration) -> Bool {
        let done = DispatchSemaphore(value: 0)
        queue.async {
            // Whatever waits for the end of a hold-off goes now.
            while self.deliverWaiting() {}
            self.waiting.withLock { $0.stopped = true }
            done.signal()
        }
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        let finished = done.wait(timeout: .now() + .nanoseconds(Int(max(0, nanoseconds)))) == .success
        if !finished { waiting.withLock { $0.stopped = true } }
        return finished
    }

    /// Delivers what waits; then, if more came meanwhile, drains again once the hold-off is over.
    private func drain() {
        guard deliverWaiting() else { return }
        let drained = DispatchTime.now()
        let more = waiting.withLock { state in
            state.drained = drained
            if state.pushes.isEmpty { state.draining = false }
            return state.draining
        }
        if more { scheduleDrain(after: drained) }
    }

    /// Delivers every push waiting; false when none was (and no drain is under way any more).
    private func deliverWaiting() -> Bool {
        let batch = waiting.withLock { state -> [WidgetPush] in
            if state.pushes.isEmpty {
                state.draining = false
                return []
            }
            defer { state.pushes.removeAll(keepingCapacity: true) }
            return state.pushes
        }
        if batch.isEmpty { return false }
        let outgoing = taken.withLock { taken in batch.compactMap { Self.outgoing($0, after: &taken) } }
        if !outgoing.isEmpty { deliver(outgoing) }
        return true
    }

    /// The push as this sink sends it, and the record of what it took; nil when nothing changed
    /// for it (pushes that cancelled out while it waited).
    private static func outgoing(_ push: WidgetPush, after taken: inout [String: Taken]) -> OutgoingPush? {
        defer { taken[push.widget] = Taken(sequence: push.sequence, document: push.document) }
        let previous = taken[push.widget]
        if push.isFullContent || previous.map({ $0.sequence + 1 == push.sequence }) == true {
            return OutgoingPush(
                widget: push.widget, at: push.at, contentPatch: push.contentPatch, document: push.document, held: push.held,
                isFullContent: push.isFullContent)
        }
        guard let previous else {
            return OutgoingPush(
                widget: push.widget, at: push.at, contentPatch: ContentPatch(push.document.json), document: push.document, held: push.held,
                isFullContent: true)
        }
        guard let patch = MergePatch.diff(from: previous.document.json, to: push.document.json) else { return nil }
        return OutgoingPush(
            widget: push.widget, at: push.at, contentPatch: ContentPatch(patch), document: push.document, held: push.held, isFullContent: false)
    }
}
