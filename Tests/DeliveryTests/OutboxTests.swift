import Delivery
import Dispatch
import Glibc
import FlowCore
import FoundationEssentials
import Synchronization
import Testing

/// The outbox between the engine and a sink: it never blocks the engine, keeps memory bounded
/// while a sink is stuck, and the patches a sink sends always add up to the engine's document.
@Suite struct OutboxTests {
    /// A widget document whose exchange rate is `rate`.
    static func document(_ rate: Double, label: String = "Power") -> WidgetContent {
        .flow(FlowContent(shared: SharedContent(label: label), unit: "W", exchange: FlowNode(name: "Grid", rate: rate)))
    }

    /// Pushes as the engine makes them: the first whole, every later one the patch from the one before.
    static func pushes(_ rates: [Double], widget: String = "power") -> [WidgetPush] {
        var previous: WidgetContent?
        return rates.enumerated().map { index, rate in
            let document = Self.document(rate)
            defer { previous = document }
            let patch = previous.map { MergePatch.diff(from: $0.json, to: document.json) ?? .object([:]) } ?? document.json
            return WidgetPush(
                widget: widget, at: Date(timeIntervalSince1970: Double(index)), sequence: UInt64(index + 1), patch: patch,
                document: document, held: .none, isFullContent: previous == nil)
        }
    }

    final class Recorder: Sendable {
        let batches = Mutex<[[OutgoingPush]]>([])
        /// The thread each batch was delivered on.
        let threads = Mutex<[pthread_t]>([])
        let coalesced = Mutex(0)
        let gate = DispatchSemaphore(value: 0)
        /// Signalled as each delivery begins, before the gate.
        let deliveryBegan = DispatchSemaphore(value: 0)
        /// Signalled after each batch.
        let batchDelivered = DispatchSemaphore(value: 0)
        let blocking: Bool
        /// What the sink says when asked whether a delivery would wait, when it can tell.
        let ready: Mutex<Bool>
        let canTell: Bool
        /// How often it was asked.
        let asked = Mutex(0)
        /// How long each delivery takes, beyond the gate.
        let deliveryMicroseconds: UInt32
        /// Deliveries under way, and whether two ever were at once.
        let delivering = Atomic(0)
        let overlapped = Atomic(false)
        /// `ready`: nil for a sink that cannot tell.
        init(blocking: Bool, ready: Bool? = nil, deliveryMicroseconds: UInt32 = 0) {
            self.blocking = blocking
            self.ready = Mutex(ready ?? false)
            canTell = ready != nil
            self.deliveryMicroseconds = deliveryMicroseconds
        }

        func outbox(capacity: Int) throws -> Outbox {
            try Outbox(
                label: "test", capacity: capacity,
                deliver: { pushes in
                    if self.delivering.add(1, ordering: .sequentiallyConsistent).newValue > 1 { self.overlapped.store(true, ordering: .relaxed) }
                    defer { self.delivering.subtract(1, ordering: .sequentiallyConsistent) }
                    self.deliveryBegan.signal()
                    if self.blocking { self.gate.wait() }
                    if self.deliveryMicroseconds > 0 { usleep(self.deliveryMicroseconds) }
                    self.batches.withLock { $0.append(pushes) }
                    self.threads.withLock { $0.append(pthread_self()) }
                    self.batchDelivered.signal()
                },
                onCoalesce: { self.coalesced.withLock { $0 += 1 } },
                isReady: canTell
                    ? { @Sendable in
                        self.asked.withLock { $0 += 1 }
                        return self.ready.withLock { $0 }
                    } : nil)
        }

        var delivered: [OutgoingPush] { batches.withLock { $0.flatMap { $0 } } }

        /// What the receiving end shows after applying every patch it got, per widget.
        var shown: [String: JSONValue] {
            var shown: [String: JSONValue] = [:]
            for push in delivered { shown[push.widget] = MergePatch.apply(push.patch, to: shown[push.widget] ?? .null) }
            return shown
        }
    }

    /// Whether the sink can say when it is ready, and what it says, the patches are the engine's.
    @Test(arguments: [nil, true, false])
    func aSinkThatKeepsUpGetsTheEnginesPatchesInOrder(ready: Bool?) throws {
        let recorder = Recorder(blocking: false, ready: ready)
        let outbox = try recorder.outbox(capacity: 100)
        let pushes = Self.pushes([100, 200, -300, -300.5])
        for push in pushes { outbox.offer(push) }
        #expect(outbox.stop(timeout: .seconds(5)))
        let delivered = recorder.delivered
        #expect(delivered.map(\.patch) == pushes.map(\.patch))
        #expect(delivered.first?.isFullContent == true)
        #expect(recorder.coalesced.withLock { $0 } == 0)
        #expect(recorder.shown["power"] == Self.document(-300.5).json)
    }

    /// A stuck sink: 10,000 pushes while its delivery blocks. The engine's side returns at once,
    /// at most `capacity` pushes wait, and once the sink moves again it sends one patch that
    /// carries the current truth: what it shows then equals the engine's latest document.
    @Test(arguments: [1, 8, 64])
    func aStuckSinkCoalescesAndCatchesUpWithTheTruth(capacity: Int) throws {
        let recorder = Recorder(blocking: true)
        let outbox = try recorder.outbox(capacity: capacity)
        let pushes = Self.pushes((0..<10_000).map { Double($0 % 2000) - 1000 })
        outbox.offer(pushes[0])
        // The first is being delivered, and blocks, before the rest come: on a busy machine the
        // sink's thread could otherwise wake only after all of them, and send one whole document.
        try #require(recorder.deliveryBegan.wait(timeout: .now() + .seconds(30)) == .success)
        for push in pushes.dropFirst() { outbox.offer(push) }
        for _ in 0..<3 { recorder.gate.signal() }  // the first batch, then the coalesced rest
        #expect(outbox.stop(timeout: .seconds(5)))
        // Whatever waited behind the stuck batch was never more than `capacity` pushes.
        let batches = recorder.batches.withLock { $0 }
        #expect(batches.dropFirst().allSatisfy { $0.count <= capacity }, "\(batches.map(\.count))")
        let delivered = recorder.delivered
        #expect(recorder.coalesced.withLock { $0 } == 1)  // said once, not per push
        #expect(recorder.shown["power"] == pushes.last!.document.json)
        #expect(delivered.last?.isFullContent == false)
    }

    /// Coalescing one widget never drops another's latest document.
    @Test func coalescingKeepsEveryWidgetsLatestDocument() throws {
        let recorder = Recorder(blocking: true)
        let outbox = try recorder.outbox(capacity: 1)
        let power = Self.pushes([1, 2, 3, 4], widget: "power")
        let battery = Self.pushes([10, 20, 30], widget: "battery")
        outbox.offer(power[0])
        for (a, b) in zip(power.dropFirst(), battery) {
            outbox.offer(a)
            outbox.offer(b)
        }
        for _ in 0..<3 { recorder.gate.signal() }
        #expect(outbox.stop(timeout: .seconds(5)))
        #expect(recorder.shown["power"] == power.last!.document.json)
        #expect(recorder.shown["battery"] == battery.last!.document.json)
    }

    @Test func stopGivesUpOnASinkThatNeverReturns() throws {
        let recorder = Recorder(blocking: true)
        let outbox = try recorder.outbox(capacity: 4)
        outbox.offer(Self.pushes([1])[0])
        #expect(!outbox.stop(timeout: .milliseconds(100)))
        recorder.gate.signal()
    }

    /// The sink's thread lives as long as its outbox: an outbox let go without a stop (a sink that
    /// was replaced) still delivers what waited, then its thread ends.
    @Test func anOutboxLetGoDeliversWhatWaited() throws {
        let recorder = Recorder(blocking: true)
        let pushes = Self.pushes([1, 2, 3])
        do {
            let outbox = try recorder.outbox(capacity: 8)
            for push in pushes { outbox.offer(push) }  // the first's delivery blocks; two wait
        }
        // One batch after another (the first push alone or with the others), each let through.
        while recorder.delivered.count < pushes.count {
            recorder.gate.signal()
            try #require(recorder.batchDelivered.wait(timeout: .now() + .seconds(30)) == .success)
        }
        #expect(recorder.delivered.map(\.patch) == pushes.map(\.patch))
    }

    /// A lone push to a sink that is ready is delivered before `offer` returns, on the offering
    /// thread: no wake-up of the sink's own. A push to a sink that is not ready (or that cannot
    /// tell) goes by the sink's thread, after what went before.
    @Test(arguments: [nil, true, false])
    func aLonePushToAReadySinkIsDeliveredWhereItIsOffered(ready: Bool?) throws {
        let recorder = Recorder(blocking: false, ready: ready)
        let outbox = try recorder.outbox(capacity: 8)
        let pushes = Self.pushes([1, 2])
        let offeringThread = pthread_self()
        outbox.offer(pushes[0])
        if ready == true {
            #expect(recorder.delivered.map(\.patch) == [pushes[0].patch])  // already, before any wait
            #expect(recorder.threads.withLock { $0 } == [offeringThread])
            recorder.ready.withLock { $0 = false }
        }
        outbox.offer(pushes[1])
        #expect(outbox.stop(timeout: .seconds(5)))
        #expect(recorder.delivered.map(\.patch) == pushes.map(\.patch))
        let threads = recorder.threads.withLock { $0 }
        #expect(threads.last != offeringThread)
        if ready != true { #expect(!threads.contains(offeringThread)) }
        #expect((recorder.asked.withLock { $0 } > 0) == (ready != nil))
    }

    /// Offers from several threads at once, to a sink that is ready: some pushes go in place, the
    /// rest by the sink's thread, never two deliveries at once, and every widget's patches arrive
    /// in the order they were made and add up to its last document. The offers come a few
    /// milliseconds apart, around the hold-off, so that both ways are taken, and each delivery
    /// takes a while, so that one in place and one on the thread would meet if they could.
    @Test func offersFromManyThreadsArriveInOrderWhereverTheyAreDelivered() throws {
        let recorder = Recorder(blocking: false, ready: true, deliveryMicroseconds: 500)
        let widgets = (0..<4).map { "widget\($0)" }
        let pushes = widgets.map { Self.pushes((0..<150).map(Double.init), widget: $0) }
        let outbox = try recorder.outbox(capacity: 10_000)
        let offering = Mutex<Set<UInt>>([])
        DispatchQueue.concurrentPerform(iterations: widgets.count) { index in
            offering.withLock { _ = $0.insert(UInt(pthread_self())) }
            for (count, push) in pushes[index].enumerated() {
                outbox.offer(push)
                usleep(UInt32((count * 7 + index * 3) % 10) * 1000)  // 0 to 9 ms
            }
        }
        #expect(outbox.stop(timeout: .seconds(30)))
        let wereTwoAtOnce = recorder.overlapped.load(ordering: .relaxed)
        #expect(!wereTwoAtOnce)
        let delivered = recorder.delivered
        for (index, widget) in widgets.enumerated() {
            #expect(delivered.filter { $0.widget == widget }.map(\.patch) == pushes[index].map(\.patch))
            #expect(recorder.shown[widget] == pushes[index].last!.document.json)
        }
        // Both ways were taken.
        let threads = recorder.threads.withLock { $0 }
        let offeringThreads = offering.withLock { $0 }
        #expect(threads.contains { offeringThreads.contains(UInt($0)) })
        #expect(threads.contains { !offeringThreads.contains(UInt($0)) })
    }
}
