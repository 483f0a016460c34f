import Dispatch
import Synchronization

/// One message received from the broker. The payload is a copy: libmosquitto frees its own buffer
/// as soon as its callback returns.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    /// True when the broker sent a retained message because we subscribed (a stored value that may
    /// be old), false for a live publish.
    public var retained: Bool
    /// MQTT 5 message-expiry-interval, when the publisher set one: the broker has already subtracted
    /// the time the message waited, so this is what is left of its life.
    public var messageExpirySeconds: UInt32?

    public init(topic: String, payload: [UInt8], retained: Bool = false, messageExpirySeconds: UInt32? = nil) {
        self.topic = topic
        self.payload = payload
        self.retained = retained
        self.messageExpirySeconds = messageExpirySeconds
    }
}

/// What the client reports, in the order it happened.
public enum MQTTEvent: Sendable, Equatable {
    /// The broker accepted the connection; subscriptions have been (re)sent.
    case connected
    /// The connection is gone, was refused, or could not be made; `reason` says why, ready for a
    /// log line. The client retries with backoff by itself; retries that fail the same way are not
    /// reported again until a connect succeeds.
    case disconnected(reason: String)
    case message(MQTTMessage)
    /// Every message that had come in has been given: after one or more messages, the socket held
    /// no more when the client looked. A consumer that holds work back while messages keep coming
    /// (one push for a backlog read in one go, not one per reading) does it now. Never twice in a
    /// row, and also at a disconnect that cut a run of messages short.
    case caughtUp
    /// The broker answered a SUBSCRIBE: the messages of `taken` (the filters it did not refuse)
    /// come from now on. A message published before this may not reach the client.
    case subscribed(taken: [String])
    /// The broker refused to subscribe `filter` (a SUBACK code of 0x80 or more: its ACL, most
    /// often): no message of it will come. Said again after every connect that is refused again.
    case subscriptionRefused(filter: String, reason: String)
    /// Under MQTT 5, the broker answered a QoS 1 publish to `topic` with a failing PUBACK (not
    /// authorized, ...): the message went nowhere. 3.1.1 has no way to say so.
    case publishRefused(topic: String, reason: String)
    /// A message larger than `MQTTOptions.maximumPayloadBytes` came (under 3.1.1, or from a broker
    /// that ignores MQTT 5's Maximum Packet Size) and was left unread: only its size is kept.
    case oversizedMessage(topic: String, bytes: Int)
}

/// The bounded buffer between libmosquitto's network thread and the async consumer.
///
/// Nothing is silently lost: when it holds `capacity` events, or `byteCapacity` bytes of topics and
/// payloads, `push` blocks the network thread until the consumer takes one, so backpressure reaches the broker through TCP instead of growing memory
/// or dropping readings. `finish()` (from `MQTTClient.stop()`) wakes everyone: blocked producers
/// return (their event is dropped, the client is stopping), the consumer drains what is buffered and
/// then gets `nil`.
///
/// Meant for one consumer; several concurrent iterators are served in FIFO order. A consumer task
/// that is cancelled while waiting gets `nil` from that call, and the sequence keeps working.
public final class MQTTEvents: AsyncSequence, Sendable {
    public typealias Element = MQTTEvent
    public typealias Failure = Never

    public let capacity: Int
    /// Bytes (topics and payloads) the buffer holds before producers wait. An event larger than
    /// that still goes in when the buffer is empty, so a large message slows the flow, never stops it.
    public let byteCapacity: Int
    /// 4 MiB: hundreds of times what meters send in a burst, and a bound on what a flood of huge
    /// payloads can make the buffer hold.
    public static let defaultByteCapacity = 4 << 20

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<MQTTEvent?, Never>
    }

    private struct State {
        var ring: RingBuffer
        var bytes = 0
        var waiters: [Waiter] = []      // non-empty only while `ring` is empty
        var nextWaiterID: UInt64 = 0
        var blockedProducers = 0        // producers waiting on `space`
        var finished = false
    }

    private let state: Mutex<State>
    /// Signalled once per blocked producer when a slot frees up or the buffer finishes. A counting
    /// semaphore, so a signal that arrives before the producer waits is not lost.
    private let space = DispatchSemaphore(value: 0)

    init(capacity: Int, byteCapacity: Int = defaultByteCapacity) {
        precondition(capacity >= 1 && byteCapacity >= 1, "MQTTEvents capacities must be at least 1")
        self.capacity = capacity
        self.byteCapacity = byteCapacity
        state = Mutex(State(ring: RingBuffer(capacity: capacity)))
    }

    /// Hands `event` to a waiting consumer or buffers it; blocks the calling (network) thread while
    /// the buffer is full. Returns false only when the buffer was finished (the event is dropped).
    @discardableResult
    func push(_ event: MQTTEvent) -> Bool {
        enum Action { case handOff(CheckedContinuation<MQTTEvent?, Never>), stored, dropped, wait }
        while true {
            let action: Action = state.withLock { s in
                if s.finished { return .dropped }
                if !s.waiters.isEmpty { return .handOff(s.waiters.removeFirst().continuation) }
                if s.ring.count < capacity, s.ring.count == 0 || s.bytes + event.byteCount <= byteCapacity {
                    s.ring.append(event)
                    s.bytes += event.byteCount
                    return .stored
                }
                s.blockedProducers += 1
                return .wait
            }
            switch action {
            case .handOff(let continuation):
                continuation.resume(returning: event)
                return true
            case .stored: return true
            case .dropped: return false
            case .wait: space.wait()  // then retry: a slot is free, or the buffer finished
            }
        }
    }

    /// Ends the sequence: waiting consumers get `nil` (after whatever is buffered), blocked
    /// producers wake up and drop their event. Idempotent.
    func finish() {
        let (waiters, producers) = state.withLock { s in
            s.finished = true
            defer { s.waiters = []; s.blockedProducers = 0 }
            return (s.waiters, s.blockedProducers)
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
        for _ in 0..<producers { space.signal() }
    }

    /// Number of buffered events (for tests and metrics).
    var bufferedCount: Int { state.withLock { $0.ring.count } }
    /// Bytes of the buffered events (for tests and metrics).
    var bufferedBytes: Int { state.withLock { $0.bytes } }

    /// The next event; `nil` once finished and drained, or if the calling task is cancelled.
    func next() async -> MQTTEvent? {
        if let ready = takeReady() { return ready }
        let id = state.withLock { s in
            defer { s.nextWaiterID &+= 1 }
            return s.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<MQTTEvent?, Never>) in
                // Re-check under the lock: an event may have arrived since `takeBuffered`.
                let ready: MQTTEvent?? = state.withLock { s in
                    if s.ring.count > 0 { return .some(popAndWake(&s)) }
                    if s.finished || Task.isCancelled { return .some(nil) }
                    s.waiters.append(Waiter(id: id, continuation: continuation))
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { s in
                s.waiters.firstIndex { $0.id == id }.map { s.waiters.remove(at: $0) }
            }
            waiter?.continuation.resume(returning: nil)
        }
    }

    /// `.some(event)` when an event is buffered (waking one blocked producer), `.some(nil)` when
    /// finished and drained, `nil` when the caller has to wait.
    private func takeReady() -> MQTTEvent?? {
        state.withLock { s in
            if s.ring.count > 0 { return .some(popAndWake(&s)) }
            if s.finished { return .some(nil) }
            return nil
        }
    }

    /// Called with the lock held. Signalling the semaphore under the lock is fine: it never blocks.
    private func popAndWake(_ s: inout State) -> MQTTEvent? {
        let event = s.ring.removeFirst()
        s.bytes -= event?.byteCount ?? 0
        if s.blockedProducers > 0 {
            s.blockedProducers -= 1
            space.signal()
        }
        return event
    }

    /// Everything buffered, at once (waking every blocked producer), or nil when nothing is.
    /// Taking a batch under one lock keeps the network thread and the consumer from meeting on the
    /// lock for every message when readings arrive in a burst.
    private func takeAll() -> [MQTTEvent]? {
        state.withLock { s in
            guard s.ring.count > 1 else { return nil }
            var batch: [MQTTEvent] = []
            batch.reserveCapacity(s.ring.count)
            while let event = s.ring.removeFirst() { batch.append(event) }
            s.bytes = 0
            for _ in 0..<s.blockedProducers { space.signal() }
            s.blockedProducers = 0
            return batch
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let events: MQTTEvents
        /// Events taken in one batch and not yet returned.
        var batch: [MQTTEvent] = []
        var position = 0

        /// True when the next `next()` returns at once from the batch already taken: a consumer
        /// can hold back work (flushing output) until the burst is over.
        public var hasBuffered: Bool { position < batch.count }

        public mutating func next() async -> MQTTEvent? {
            if position < batch.count {
                defer { position += 1 }
                return batch[position]
            }
            if let taken = events.takeAll() {
                batch = taken
                position = 1
                return batch[0]
            }
            batch = []
            position = 0
            return await events.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: self) }
}

extension MQTTEvent {
    /// What the event holds in memory, as the buffer counts it.
    var byteCount: Int {
        guard case .message(let message) = self else { return 0 }
        return message.topic.utf8.count + message.payload.count
    }
}

/// A fixed-capacity FIFO: O(1) append and removeFirst, allocated once.
private struct RingBuffer {
    private var slots: [MQTTEvent?]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) { slots = Array(repeating: nil, count: capacity) }

    mutating func append(_ event: MQTTEvent) {
        precondition(count < slots.count)
        slots[(head + count) % slots.count] = event
        count += 1
    }

    mutating func removeFirst() -> MQTTEvent? {
        guard count > 0 else { return nil }
        defer {
            slots[head] = nil
            head = (head + 1) % slots.count
            count -= 1
        }
        return slots[head]
    }
}
