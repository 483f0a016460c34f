import FlowCore
import FoundationEssentials
import Synchronization
import Threads

/// The bounded queue between the engine and one sink's delivery thread.
///
/// The engine's side (`offer`) only appends under a short lock, never waits. A thread of the sink's
/// own (named for it: `sink stdout`) drains it and calls `deliver` with every push taken, in order,
/// each with the patch from what the sink took before: the engine's patch while the sink keeps up,
/// a diff of its own after it fell behind. When `capacity` pushes wait, a widget's waiting pushes
/// collapse into its latest one (coalescing), so memory stays bounded however long the sink is
/// stuck, and the first push after the jam carries the current truth. The first coalescing is
/// reported once through `onCoalesce`.
///
/// A push that comes after a quiet spell is delivered at once; one that comes within `holdOff` of
/// the last delivery waits for the end of that window, with every push that arrives meanwhile. So
/// a flood of readings costs one wake-up of the delivery thread and one `deliver` per window
/// instead of one per push (a thread wake-up is worth more CPU than making the push itself).
/// The thread sleeps while nothing waits: an offer wakes it only when it sleeps, and the hold-off
/// is its own timed wait, so a push costs at most one wake-up and a quiet sink none.
///
/// A sink that can tell when its delivery would not wait (`isReady`: a descriptor with room) is
/// spared even that one: a push after a quiet spell, with nothing waiting, is delivered on the
/// thread that offers it, when the sink says it is ready. A home's meters send a reading at a time,
/// and at every pushed reading the wake-up of the sink's thread (two context switches, and the
/// signal) cost more than the line it writes. Whatever cannot go at once (the sink not ready, a
/// push within the hold-off, pushes already waiting) goes by the thread as before, in order: one
/// delivery at a time, the one in place first.
///
/// The thread lives as long as the outbox: `stop`, or the outbox let go, ends it once what waits
/// was delivered.
public final class Outbox: Sendable {
    /// The least time between two deliveries: what a push may wait for its batch.
    public static let holdOff = Duration.milliseconds(5)

    public var capacity: Int { drain.capacity }
    private let drain: Drain

    /// - Parameters:
    ///   - label: names the delivery thread (`sink LABEL`).
    ///   - capacity: pushes that may wait before they coalesce (at least 1).
    ///   - deliver: runs on the outbox's own thread, or on the offering thread when `isReady` said
    ///     it would not wait; it may block (a write, a request).
    ///   - onCoalesce: called once, the first time pushes are coalesced.
    ///   - isReady: true when `deliver` of one push would not wait now; then a push after a quiet
    ///     spell is delivered on the offering thread. Nil: every push goes by the outbox's thread.
    public init(
        label: String, capacity: Int, deliver: @escaping @Sendable ([OutgoingPush]) -> Void,
        onCoalesce: @escaping @Sendable () -> Void, isReady: (@Sendable () -> Bool)? = nil
    ) throws(NamedThread.StartError) {
        drain = Drain(capacity: max(1, capacity), deliver: deliver, onCoalesce: onCoalesce, isReady: isReady)
        try NamedThread.start("sink \(label)", detached: true) { [drain] in drain.run() }
    }

    deinit { drain.close() }

    /// Queues a push; never blocks.
    public func offer(_ push: WidgetPush) { drain.offer(push) }

    /// Lets the queue empty, up to `timeout`, then takes nothing more. True when all was delivered.
    @discardableResult
    public func stop(timeout: Duration) -> Bool { drain.stop(timeout: timeout) }
}

/// The outbox's queue and its thread's loop; the thread holds it, the outbox closes it.
private final class Drain: Sendable {
    let capacity: Int
    private let deliver: @Sendable ([OutgoingPush]) -> Void
    private let onCoalesce: @Sendable () -> Void
    private let isReady: (@Sendable () -> Bool)?

    private struct Waiting {
        var pushes: [WidgetPush] = []
        /// The thread waits for a push: the next offer wakes it.
        var asleep = false
        /// A push is being delivered on the thread that offered it: the outbox's thread stays
        /// asleep, and what comes meanwhile waits for that delivery's end.
        var deliveringInPlace = false
        /// The outbox's thread has a batch in hand: nothing is delivered in place meanwhile.
        var deliveringOnThread = false
        /// When the last delivery ended (`Wakeup.now()`), on either thread: the hold-off's start.
        var drainedAt: UInt64?
        /// Asked to end: what waits goes at once, then the thread ends.
        var closing = false
        /// Takes nothing more.
        var stopped = false
        var coalesced = false

        /// Nothing has been delivered within the hold-off before `now`.
        func isQuiet(at now: UInt64) -> Bool { drainedAt.map { now >= $0 + Drain.holdOffNanoseconds } ?? true }
    }

    private let waiting = Mutex(Waiting())
    /// Wakes the thread: a push for a sleeping thread, or the stop. Its hold-off is timed on the
    /// monotonic clock: a wall clock stepped back does not hold a sink up.
    private let wake = Wakeup()
    /// Signalled once the thread has ended.
    private let ended = Wakeup()

    /// What the sink last took, per widget: the base of the next patch.
    private struct Taken {
        var sequence: UInt64
        var document: WidgetContent
    }

    /// Held by whichever thread delivers; only one does at a time (`deliveringInPlace`,
    /// `deliveringOnThread`).
    private let taken = Mutex<[String: Taken]>([:])

    /// `Outbox.holdOff`, as the thread's timed wait takes it.
    private static let holdOffNanoseconds = Wakeup.nanoseconds(Outbox.holdOff)

    init(
        capacity: Int, deliver: @escaping @Sendable ([OutgoingPush]) -> Void, onCoalesce: @escaping @Sendable () -> Void,
        isReady: (@Sendable () -> Bool)?
    ) {
        self.capacity = capacity
        self.deliver = deliver
        self.onCoalesce = onCoalesce
        self.isReady = isReady
    }

    func offer(_ push: WidgetPush) {
        if let isReady, deliveredInPlace(push, ifReady: isReady) { return }
        let (wakeUp, firstCoalescing) = waiting.withLock { state -> (Bool, Bool) in
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
            // A delivery in place wakes the thread when it ends.
            guard !state.deliveringInPlace else { return (false, first) }
            defer { state.asleep = false }
            return (state.asleep, first)
        }
        if firstCoalescing { onCoalesce() }
        if wakeUp { wake.signal() }
    }

    /// Delivers `push` on this thread when nothing else is being delivered or waits, the last
    /// delivery is a hold-off ago, and the sink is ready; false when the push is to be queued.
    private func deliveredInPlace(_ push: WidgetPush, ifReady isReady: () -> Bool) -> Bool {
        let now = Wakeup.now()
        let claimed = waiting.withLock { state in
            guard !state.deliveringInPlace, !state.deliveringOnThread, state.pushes.isEmpty, !state.closing, !state.stopped,
                state.isQuiet(at: now)
            else { return false }
            state.deliveringInPlace = true
            return true
        }
        guard claimed else { return false }
        let ready = isReady()
        if ready { send(CollectionOfOne(push)) }
        let wakeUp = waiting.withLock { state in
            state.deliveringInPlace = false
            if ready {
                state.drainedAt = Wakeup.now()
            } else {
                // First in line: whatever came meanwhile was offered after it.
                state.pushes.insert(push, at: 0)
            }
            guard state.asleep, !state.pushes.isEmpty || state.closing else { return false }
            state.asleep = false
            return true
        }
        if wakeUp { wake.signal() }
        return true
    }

    /// Delivers `batch`, each push with the patch from what the sink took before. (A push
    /// delivered in place comes as a collection of one, not an array made for it.)
    private func send(_ batch: some Collection<WidgetPush>) {
        let outgoing = taken.withLock { taken in batch.compactMap { Self.outgoing($0, after: &taken[$0.widget]) } }
        if !outgoing.isEmpty { deliver(outgoing) }
    }

    /// Asks the thread to deliver what waits and end, without waiting for it.
    func close() {
        let wakeUp = waiting.withLock { state in
            state.closing = true
            defer { state.asleep = false }
            return state.asleep
        }
        if wakeUp { wake.signal() }
    }

    func stop(timeout: Duration) -> Bool {
        close()
        // Also ends a hold-off: whatever waits for its end goes now.
        wake.signal()
        guard ended.wait(until: Wakeup.now() + Wakeup.nanoseconds(timeout)) else {
            waiting.withLock { $0.stopped = true }
            return false
        }
        ended.signal()  // for a later call
        return true
    }

    /// The thread: sleeps until a push comes, holds off until `holdOff` after the last delivery
    /// unless closing, delivers every push waiting; ends once closing finds nothing waiting.
    func run() {
        while true {
            let (sleep, closing, drained) = waiting.withLock { state in
                if (state.pushes.isEmpty && !state.closing) || state.deliveringInPlace { state.asleep = true }
                return (state.asleep, state.closing, state.drainedAt)
            }
            if sleep {
                wake.wait()
                continue
            }
            if !closing, let drained, case let due = drained + Self.holdOffNanoseconds, due > Wakeup.now() {
                // Pushes that come meanwhile join the batch; only the stop cuts the wait short.
                wake.wait(until: due)
            }
            let batch = waiting.withLock { state -> [WidgetPush] in
                if state.pushes.isEmpty && state.closing { state.stopped = true }
                state.deliveringOnThread = !state.pushes.isEmpty
                defer { state.pushes.removeAll(keepingCapacity: true) }
                return state.pushes
            }
            if batch.isEmpty {
                guard !closing else { break }
                continue
            }
            send(batch)
            let now = Wakeup.now()
            waiting.withLock { state in
                state.drainedAt = now
                state.deliveringOnThread = false
            }
        }
        ended.signal()
    }

    /// The push as this sink sends it, and the record of what it took; nil when nothing changed
    /// for it (pushes that cancelled out while it waited).
    /// `previous`: what the sink took of the widget before, replaced in place (its entry is
    /// found once).
    private static func outgoing(_ push: WidgetPush, after previous: inout Taken?) -> OutgoingPush? {
        defer { previous = Taken(sequence: push.sequence, document: push.document) }
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
