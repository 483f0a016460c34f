import Foundation
import Synchronization
import Testing
import Threads
@testable import Mosquitto
import TestSupport

/// The buffer between the network thread and the consumer, on its own: no broker.
/// Producers run on dedicated threads (as the client's network thread does), never on the
/// dispatch or cooperative pools: a producer blocked there would starve the consumer's task.
@Suite(.timeLimit(.minutes(1)), .ownThread)
struct MQTTEventsTests {
    static func message(_ n: Int) -> MQTTEvent {
        .message(MQTTMessage(topic: "t/\(n)", payload: [UInt8(n % 256)]))
    }

    /// Pushes `items` from its own thread; `count` tells how many pushes have returned, `started`
    /// how many were called (the one past `count` is under way, or blocked).
    final class Producer: Sendable {
        let pushed = Atomic<Int>(0)
        let calls = Atomic<Int>(0)
        let results = Mutex<[Bool]>([])
        let total: Int

        init(into events: MQTTEvents, _ items: [MQTTEvent]) {
            total = items.count
            _ = try? NamedThread.start("producer", detached: true) { [self] in
                for item in items {
                    calls.add(1, ordering: .sequentiallyConsistent)
                    let accepted = events.push(item)
                    results.withLock { $0.append(accepted) }
                    pushed.add(1, ordering: .sequentiallyConsistent)
                }
            }
        }

        convenience init(into events: MQTTEvents, count: Int) {
            self.init(into: events, (0..<count).map(MQTTEventsTests.message))
        }

        var count: Int { pushed.load(ordering: .sequentiallyConsistent) }
        var started: Int { calls.load(ordering: .sequentiallyConsistent) }

        /// Waits (bounded) until every push has returned.
        func finished() async -> Bool { await waitFor(total) }

        /// Waits (bounded) until `count` pushes have returned.
        func waitFor(_ expected: Int) async -> Bool { await eventually { count >= expected } }

        /// Waits until the push after the `count` returned ones has been called, then whether it
        /// stays blocked for `window`. A push cannot be seen to block, only to not return; the
        /// window is time given to a push that ignored the capacity to return.
        func staysBlocked(after count: Int, for window: Duration = .milliseconds(200)) async -> Bool {
            guard await waitFor(count), await eventually({ started > count }) else { return false }
            return await consistently(for: window) { self.count == count }
        }
    }

    @Test("order is preserved through a full buffer", arguments: [1, 3, 64, 1024])
    func orderPreserved(capacity: Int) async {
        let events = MQTTEvents(capacity: capacity)
        let total = 2_000
        _ = Producer(into: events, count: total)
        var received: [MQTTEvent] = []
        var iterator = events.makeAsyncIterator()
        while received.count < total, let event = await iterator.next() { received.append(event) }
        #expect(received == (0..<total).map(Self.message))
        #expect(events.bufferedCount == 0)
    }

    @Test("a full buffer blocks the producer until the consumer takes from it")
    func capacityRespected() async {
        let events = MQTTEvents(capacity: 3)
        let producer = Producer(into: events, count: 5)
        // Give a producer that ignored the capacity every chance to show it.
        #expect(await producer.staysBlocked(after: 3))
        #expect(producer.count == 3)
        #expect(events.bufferedCount == 3)

        // The consumer takes the whole buffered burst at once (one lock, not one per message):
        // the buffer has room again, the producer fills it with the rest, and never more than
        // `capacity` events wait in the buffer plus `capacity` in the consumer's hands.
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == Self.message(0))
        #expect(iterator.hasBuffered)
        #expect(await producer.waitFor(5))
        #expect(producer.count == 5)
        #expect(events.bufferedCount == 2)

        for n in 1..<5 { #expect(await iterator.next() == Self.message(n)) }
        #expect(await producer.finished())
        #expect(events.bufferedCount == 0)
    }

    @Test("finish: buffered events drain, then nil; a blocked producer wakes and its event is dropped")
    func finishWakesProducerAndDrains() async {
        let events = MQTTEvents(capacity: 2)
        let producer = Producer(into: events, count: 3)
        #expect(await producer.staysBlocked(after: 2, for: .milliseconds(50)))
        #expect(producer.count == 2)  // the third push is blocked

        events.finish()
        #expect(await producer.finished())
        #expect(producer.results.withLock { $0 } == [true, true, false])

        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == Self.message(0))
        #expect(await iterator.next() == Self.message(1))
        #expect(await iterator.next() == nil)
        #expect(await iterator.next() == nil)
        #expect(events.push(Self.message(9)) == false)
    }

    /// A task waiting in `events.next()`. The buffer does not show its waiters, so this gives the
    /// task a moment to get there: the one fixed sleep here, a wait for nothing a test can see.
    /// A task that is late meets the event, the finish or its cancellation already there, answers the
    /// same, and the test passes without exercising the wait: it never fails for it.
    static func waitingConsumer(_ events: MQTTEvents) async -> Task<MQTTEvent?, Never> {
        let consumer = Task { await events.next() }
        try? await Task.sleep(for: .milliseconds(50))
        return consumer
    }

    @Test("finish wakes a waiting consumer with nil")
    func finishWakesConsumer() async {
        let events = MQTTEvents(capacity: 4)
        let consumer = await Self.waitingConsumer(events)
        events.finish()
        #expect(await consumer.value == nil)
    }

    @Test("an event pushed while the consumer waits is handed over directly")
    func handOffToWaitingConsumer() async {
        let events = MQTTEvents(capacity: 1)
        let consumer = await Self.waitingConsumer(events)
        #expect(events.push(Self.message(7)))
        #expect(await consumer.value == Self.message(7))
        #expect(events.bufferedCount == 0)
    }

    @Test("cancelling a waiting consumer returns nil and the sequence keeps working")
    func cancellation() async {
        let events = MQTTEvents(capacity: 4)
        let consumer = await Self.waitingConsumer(events)
        consumer.cancel()
        #expect(await consumer.value == nil)
        #expect(events.push(Self.message(1)))
        #expect(await events.next() == Self.message(1))
    }

    @Test("a consumer already cancelled before it waits returns nil at once")
    func cancelledBeforeWaiting() async {
        let events = MQTTEvents(capacity: 4)
        let consumer = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await events.next()
        }
        #expect(await consumer.value == nil)
    }

    @Test("for-await ends after finish")
    func forAwaitEnds() async {
        let events = MQTTEvents(capacity: 8)
        for n in 0..<5 { events.push(Self.message(n)) }
        events.finish()
        var count = 0
        for await _ in events { count += 1 }
        #expect(count == 5)
    }

    @Test("the buffer blocks on bytes as well as on count, and a message larger than the cap passes alone")
    func byteCapacityRespected() async {
        let events = MQTTEvents(capacity: 100, byteCapacity: 1000)
        @Sendable func message(_ n: Int, bytes: Int) -> MQTTEvent {
            .message(MQTTMessage(topic: "t", payload: [UInt8](repeating: UInt8(n), count: bytes - 1)))
        }
        let sizes = [600, 300, 200, 5000, 10]
        let producer = Producer(into: events, sizes.enumerated().map { message($0.offset, bytes: $0.element) })
        // 600 + 300 fit; 200 more would pass 1000 bytes: the producer waits.
        #expect(await producer.staysBlocked(after: 2))
        #expect(producer.count == 2)
        #expect(events.bufferedBytes == 900)
        var received: [MQTTEvent] = []
        var iterator = events.makeAsyncIterator()
        // Taking the buffered burst frees the bytes: 200 goes in; the 5000-byte one waits until the
        // buffer is empty, then goes in alone.
        while received.count < sizes.count, let event = await iterator.next() {
            received.append(event)
            #expect(events.bufferedBytes <= 1000 || events.bufferedCount == 1)
        }
        #expect(received == sizes.enumerated().map { message($0.offset, bytes: $0.element) })
        #expect(events.bufferedBytes == 0)
    }
}
