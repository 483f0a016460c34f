import Delivery
import FlowCore
import Testing

/// The delivery state machine on its own: what goes out after each answer of the widget API, and
/// when, with time as an input.
@Suite struct WidgetDeliveryTests {
    static let retry = WidgetDelivery.Retry(minSeconds: 1, maxSeconds: 300)
    static let start = ContinuousClock.now

    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }
    static func document(_ rate: Double) -> JSONValue { OutboxTests.document(rate).json }

    /// The request `next` says to send at `seconds`, or nil.
    static func request(_ delivery: WidgetDelivery, at seconds: Double) -> WidgetDelivery.Request? {
        if case .send(let request) = delivery.next(at: at(seconds)) { return request }
        return nil
    }

    /// A delivery that got `document(100)` through.
    static func delivered() -> WidgetDelivery {
        var delivery = WidgetDelivery(name: "push:power", retry: retry)
        delivery.offer(document(100))
        let first = request(delivery, at: 0)!
        #expect(first.kind == .replace)
        #expect(delivery.complete(first, .delivered, at: at(0), jitter: 0.5) == nil)
        return delivery
    }

    @Test func firstAFullReplaceThenPatchesThenNothingWhileInSync() {
        var delivery = Self.delivered()
        #expect(delivery.next(at: Self.at(1)) == .idle)
        delivery.offer(Self.document(-200))
        let patch = Self.request(delivery, at: 1)
        #expect(patch?.kind == .patch)
        #expect(patch?.content == ["flow": ["exchange": ["rate": -200]]])
        _ = delivery.complete(patch!, .delivered, at: Self.at(1), jitter: 0.5)
        #expect(delivery.shown == Self.document(-200))
        #expect(delivery.isSettled)
    }

    /// Backoff doubles from the minimum, stays within min…max whatever the jitter, and retries
    /// come from the clock, not from a new document.
    @Test(arguments: [0.0, 0.5, 0.999])
    func backoffGrowsWithinItsBounds(jitter: Double) {
        let waits = (1...14).map { WidgetDelivery.backoffSeconds(attempt: $0, retry: Self.retry, jitter: jitter) }
        #expect(waits.allSatisfy { (1...300).contains($0) }, "\(waits)")
        #expect(zip(waits, waits.dropFirst()).allSatisfy { $0 <= $1 }, "\(waits)")
        #expect(waits.last! >= 300 * 0.75)  // at the ceiling, jitter spreads below it
        #expect(waits[3] >= 8 * 0.75 && waits[3] <= 8 * 1.25)
    }

    /// A transient failure: the changes meanwhile go out as one patch from what the widget shows,
    /// once the backoff has passed.
    @Test func aFailedPatchIsComposedWithLaterChanges() {
        var delivery = Self.delivered()
        delivery.offer(Self.document(200))
        let patch = Self.request(delivery, at: 1)!
        let line = delivery.complete(patch, .failed(reason: "HTTP 500", fateUnknown: false), at: Self.at(1), jitter: 0)
        #expect(line?.level == .warning)
        delivery.offer(Self.document(300))
        delivery.offer(Self.document(400))
        guard case .wait(let until) = delivery.next(at: Self.at(1.1)) else {
            Issue.record("expected a wait")
            return
        }
        #expect(until >= Self.at(1.75) && until <= Self.at(2.25))
        let retried = Self.request(delivery, at: 2.5)
        #expect(retried?.kind == .patch)
        #expect(retried.map { MergePatch.apply($0.content, to: Self.document(100)) } == Self.document(400))
        let recovered = delivery.complete(retried!, .delivered, at: Self.at(2.5), jitter: 0)
        #expect(recovered?.level == .info)
        #expect(recovered?.message.contains("after 1 failed attempt") == true)
    }

    /// Unknown fate (a timeout after sending, a dropped connection, a gateway): a full replace next,
    /// and the saved state says so while a request is out.
    @Test func aRequestOfUnknownFateIsResolvedWithAFullReplace() {
        var delivery = Self.delivered()
        delivery.offer(Self.document(200))
        #expect(delivery.saved(requestInFlight: true)?.inDoubt == true)
        #expect(delivery.saved(requestInFlight: false)?.inDoubt == false)
        let patch = Self.request(delivery, at: 1)!
        _ = delivery.complete(patch, .failed(reason: "timeout", fateUnknown: true), at: Self.at(1), jitter: 0)
        #expect(delivery.inDoubt)
        #expect(delivery.saved(requestInFlight: false)?.inDoubt == true)
        let replace = Self.request(delivery, at: 10)
        #expect(replace?.kind == .replace)
        #expect(replace?.content == Self.document(200))
    }

    /// 422 on a patch: at once exactly one full replace. 422 on a full replace: that document is not
    /// sent again; the next different one is, after the backoff.
    @Test func rejectedBodiesAreNeverResent() {
        var delivery = Self.delivered()
        delivery.offer(Self.document(200))
        let patch = Self.request(delivery, at: 1)!
        let patchLine = delivery.complete(patch, .rejected(reason: "HTTP 422: no"), at: Self.at(1), jitter: 0)
        #expect(patchLine?.level == .error)
        #expect(patchLine?.message.contains("HTTP 422: no") == true)
        let replace = Self.request(delivery, at: 1)
        #expect(replace?.kind == .replace)
        _ = delivery.complete(replace!, .rejected(reason: "HTTP 422: still no"), at: Self.at(1), jitter: 0)
        #expect(delivery.next(at: Self.at(100)) == .idle)
        delivery.offer(Self.document(300))
        #expect(Self.request(delivery, at: 1.1) == nil)  // backoff
        #expect(Self.request(delivery, at: 100)?.content == Self.document(300))
    }

    /// An API that rejects every patch (and takes every full replace) is reported once a minute,
    /// not on every push.
    @Test func rejectionsAreLoggedAtMostOnceAMinute() {
        var delivery = Self.delivered()
        var lines: [Diagnostic] = []
        for second in 1...90 {
            delivery.offer(Self.document(Double(second * 10)))
            let patch = Self.request(delivery, at: Double(second))!
            #expect(patch.kind == .patch)
            delivery.complete(patch, .rejected(reason: "HTTP 400"), at: Self.at(Double(second)), jitter: 0).map { lines.append($0) }
            let replace = Self.request(delivery, at: Double(second))!
            #expect(replace.kind == .replace)
            #expect(delivery.complete(replace, .delivered, at: Self.at(Double(second)), jitter: 0) == nil)
        }
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.last?.message.contains("(59 more rejections since the last report)") == true, "\(lines)")
    }

    @Test func retryAfterAndRefusalsSetTheWait() {
        var delivery = Self.delivered()
        delivery.offer(Self.document(200))
        let patch = Self.request(delivery, at: 1)!
        _ = delivery.complete(patch, .failed(reason: "HTTP 429", fateUnknown: false, retryAfterSeconds: 30), at: Self.at(1), jitter: 0)
        #expect(delivery.next(at: Self.at(2)) == .wait(until: Self.at(31)))
        let again = Self.request(delivery, at: 31)!
        let refused = delivery.complete(again, .refused(reason: "HTTP 401"), at: Self.at(31), jitter: 0)
        #expect(refused?.level == .error)
        #expect(delivery.next(at: Self.at(32)) == .wait(until: Self.at(331)))
    }

    /// A refused request changed nothing, so after the long wait the widget gets a patch; but a
    /// widget the API does not know (404, 410) has no document to patch: a full replace then.
    @Test(arguments: [(401, WidgetDelivery.RequestKind.patch), (403, .patch), (404, .replace), (410, .replace)])
    func afterARefusalAWidgetTheAPIDoesNotKnowGetsAFullReplace(status: Int, expected: WidgetDelivery.RequestKind) {
        var delivery = Self.delivered()
        delivery.offer(Self.document(200))
        let patch = Self.request(delivery, at: 1)!
        let outcome = WidgetDelivery.outcome(status: status, retryAfterSeconds: nil, body: Array(#"{"error":"no"}"#.utf8))
        #expect(delivery.complete(patch, outcome, at: Self.at(1), jitter: 0)?.level == .error)
        #expect(delivery.next(at: Self.at(2)) == .wait(until: Self.at(301)))
        let retried = Self.request(delivery, at: 301)
        #expect(retried?.kind == expected)
        #expect(retried?.document == Self.document(200))
    }

    /// A long outage says so once a minute, not once per attempt.
    @Test func failuresAreLoggedAtMostOnceAMinute() {
        var delivery = Self.delivered()
        delivery.offer(Self.document(200))
        var lines: [Diagnostic] = []
        var now = 1.0
        for _ in 0..<40 {
            guard let request = Self.request(delivery, at: now) else {
                now += 1
                continue
            }
            if let line = delivery.complete(request, .failed(reason: "refused", fateUnknown: false), at: Self.at(now), jitter: 0) {
                lines.append(line)
            }
            now += 20
        }
        #expect(lines.count >= 2 && lines.count <= 40 * 20 / 60 + 1, "\(lines)")
        #expect(lines.dropFirst().allSatisfy { $0.message.contains("still failing") })
    }

    /// A restart: the saved document makes the first request a patch, unless it is in doubt.
    @Test(arguments: [(false, WidgetDelivery.RequestKind.patch), (true, .replace)])
    func aRestoredDeliveryContinuesWithAPatchUnlessInDoubt(inDoubt: Bool, expected: WidgetDelivery.RequestKind) {
        var delivery = WidgetDelivery(name: "push:power", retry: Self.retry)
        delivery.restore(WidgetDelivery.Saved(shown: Self.document(100), inDoubt: inDoubt))
        delivery.offer(Self.document(150))
        #expect(Self.request(delivery, at: 0)?.kind == expected)
    }

    /// The contract's table.
    @Test(arguments: [
        (200, "delivered"), (204, "delivered"), (422, "rejected"), (400, "rejected"), (409, "rejected"),
        (401, "refused"), (403, "refused"), (404, "refused"), (301, "refused"), (429, "failed"), (500, "failed"),
        (503, "failed"), (408, "failed"), (502, "unknown"), (504, "unknown"),
    ])
    func statusesMapOntoTheContract(status: Int, expected: String) {
        let outcome = WidgetDelivery.outcome(status: status, retryAfterSeconds: nil, body: Array(#"{"error":"why"}"#.utf8))
        let kind: String = switch outcome {
        case .delivered: "delivered"
        case .rejected: "rejected"
        case .refused: "refused"
        case .failed(_, let fateUnknown, _): fateUnknown ? "unknown" : "failed"
        }
        #expect(kind == expected)
        if case .rejected(let reason) = outcome { #expect(reason == "HTTP \(status): why") }
    }
}
