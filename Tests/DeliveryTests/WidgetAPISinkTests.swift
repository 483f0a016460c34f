import Delivery
import FlowCore
import FoundationEssentials
import Synchronization
import TestSupport
import Testing

/// The widget API sink against the widget stand-in (a real HTTP server in its own process) that
/// fails on demand: after every failure the widget shows the engine's newest document, at most one
/// request is ever in flight, and what goes out after a failure follows the contract's table.
@Suite(.ownThread) struct WidgetAPISinkTests {
    /// What the sink logged.
    final class LogLines: Sendable {
        let lines = Mutex<[Diagnostic]>([])
        var all: [Diagnostic] { lines.withLock { $0 } }
        func record(_ diagnostic: Diagnostic) { lines.withLock { $0.append(diagnostic) } }
        var text: String { all.map(\.description).joined(separator: "\n") }
    }

    /// Pushes as the engine makes them for one widget.
    struct Engine {
        var sequence: UInt64 = 0
        var previous: WidgetContent?

        /// The next push, whose document has the exchange rate `rate`; `restarted`: the first push
        /// after a start (full content).
        mutating func push(_ rate: Double, widget: String = "power", level: Double? = nil, restarted: Bool = false) -> WidgetPush {
            var flow = FlowContent(shared: SharedContent(label: "Power"), unit: "W", exchange: FlowNode(name: "Grid", rate: rate))
            if let level { flow.storage = FlowNode(name: "Battery", rate: 0, level: level) }
            let document = WidgetContent.flow(flow)
            if restarted { previous = nil }
            defer { previous = document }
            sequence = restarted ? 1 : sequence + 1
            let patch = previous.map { MergePatch.diff(from: $0.json, to: document.json) ?? [:] } ?? document.json
            return WidgetPush(
                widget: widget, at: Date(), sequence: sequence, patch: patch, document: document, held: .none, isFullContent: previous == nil)
        }
    }

    static let quickRetry = WidgetDelivery.Retry(minSeconds: 0.05, maxSeconds: 0.4)

    static func sink(
        _ service: WidgetStandIn, url: String? = nil, token: String? = nil, timeoutSeconds: Double = 5, log: LogLines,
        configure: (inout WidgetAPISettings) -> Void = { _ in }
    ) throws -> WidgetAPISink {
        var settings = WidgetAPISettings(url: url ?? service.url)
        settings.retry = quickRetry
        settings.timeoutSeconds = timeoutSeconds
        configure(&settings)
        return try WidgetAPISink(widget: "power", settings: settings, token: token ?? service.token, log: log.record)
    }

    /// Each test's set-up: the stand-in (`tls`, started with `arguments`), what the sink logs,
    /// and the sink delivering to it (`configure` sees the stand-in, for its TLS files).
    static func setUp(
        tls: Bool = false, arguments: [String] = [], token: String? = nil, timeoutSeconds: Double = 5,
        configure: (inout WidgetAPISettings, WidgetStandIn) -> Void = { _, _ in }
    ) async throws -> (service: WidgetStandIn, log: LogLines, sink: WidgetAPISink) {
        let service = try await WidgetStandIn(tls: tls, arguments: arguments)
        let log = LogLines()
        let sink = try Self.sink(service, token: token, timeoutSeconds: timeoutSeconds, log: log) { configure(&$0, service) }
        return (service, log, sink)
    }

    static func content(_ push: WidgetPush) -> JSONValue { push.document.json }

    @Test func aFullReplaceFirstThenPatchesWithTheTokenAndTheContentTypes() async throws {
        let (service, log, sink) = try await Self.setUp { settings, _ in settings.headers = [.init(name: "X-Client", value: "flowbridge-test")] }
        var engine = Engine()
        let first = engine.push(-1400)
        sink.take(first)
        var other = Engine()
        sink.take(other.push(999, widget: "other"))  // another widget's push is not this sink's
        #expect(await service.waitUntil { $0.document == Self.content(first) } != nil)
        let second = engine.push(-900)
        sink.take(second)
        let seen = try #require(await service.waitUntil { $0.document == Self.content(second) })
        #expect(sink.stop(timeout: .seconds(2)))
        #expect(seen.requests.map(\.method) == ["PUT", "PATCH"])
        #expect(seen.requests.map(\.contentType) == ["application/json", "application/merge-patch+json"])
        #expect(seen.requests.allSatisfy { $0.headers["authorization"] == "right" && $0.headers["x-client"] == "flowbridge-test" })
        #expect(seen.requests[0].body == ["content": Self.content(first)])
        #expect(seen.requests[1].body == ["content": ["flow": ["exchange": ["rate": -900]]]])
        #expect(!log.text.contains(service.token))
    }

    /// Deployments differ: other methods and another wrapper key.
    @Test func methodsAndBodyKeyAreConfigurable() async throws {
        let (service, log, sink) = try await Self.setUp(arguments: ["--methods", "POST,PATCH", "--body-key", "data"]) { settings, _ in
            settings.replaceMethod = .post
            settings.bodyKey = "data"
        }
        var engine = Engine()
        let first = engine.push(100)
        sink.take(first)
        let last = engine.push(200)
        // Shown before the next is taken: a replace and then a patch, not one coalesced request.
        #expect(await service.waitUntil { $0.document == Self.content(first) } != nil, "\(log.text)")
        sink.take(last)
        let seen = await service.waitUntil { $0.document == Self.content(last) }
        #expect(seen?.requests.first?.method == "POST", "\(log.text)")
        #expect(seen?.requests.allSatisfy { $0.body["data"] != nil } == true)
        sink.stop(timeout: .seconds(2))
    }

    /// Each failure mode of the contract's table, met while the engine keeps pushing.
    enum Failure: String, CaseIterable, Sendable {
        case serverErrors, rateLimited, unauthorized, slowAnswer, droppedConnection, rejected

        var fault: (JSONValue, count: Int) {
            switch self {
            case .serverErrors: (["status": 500], 3)
            case .rateLimited: (["status": 429, "retry_after": 1], 1)
            case .unauthorized: (["status": 401], 1)
            case .slowAnswer: (["delay": 3], 1)
            // Two: libcurl itself re-sends once on a fresh connection when a reused one died.
            case .droppedConnection: (["drop": true], 2)
            case .rejected: (["status": 422], 1)
            }
        }

        /// Whether the widget's document is in doubt afterwards (so a full replace resolves it).
        var resolvedByFullReplace: Bool { self == .slowAnswer || self == .droppedConnection || self == .rejected }
    }

    /// The widget gets 100; then, with the fault waiting, 200…600 are pushed at once. The first
    /// request meets the fault, the rest wait (backoff, Retry-After, a hanging answer). Afterwards
    /// the widget shows 600, and the first request that got through was one patch from 100 to 600
    /// or, where the fault left the widget in doubt, a full replace.
    @Test(arguments: Failure.allCases)
    func afterEachFailureTheWidgetShowsTheNewestDocument(failure: Failure) async throws {
        let (service, log, sink) = try await Self.setUp(timeoutSeconds: 1) { settings, _ in settings.retry = WidgetDelivery.Retry(minSeconds: 0.5, maxSeconds: 1) }
        var engine = Engine()
        let first = engine.push(100)
        sink.take(first)
        #expect(await service.waitUntil { $0.document == Self.content(first) } != nil)
        try service.fail(failure.fault.0, count: failure.fault.count)
        var last = first
        for rate in stride(from: 200.0, through: 600, by: 100) {
            last = engine.push(rate)
            sink.take(last)
        }
        let settled = await service.waitUntil(timeout: .seconds(15)) { $0.document == Self.content(last) && $0.requests.last?.succeeded == true }
        let seen = try #require(settled, "\(log.text)")
        #expect(seen.maxInFlight == 1)
        let afterFirst = Array(seen.requests.dropFirst())
        #expect(afterFirst.first?.succeeded == false)
        let recovery = try #require(afterFirst.first { $0.succeeded })
        if failure.resolvedByFullReplace {
            #expect(recovery.method == "PUT", "\(seen.requests.map(\.method))")
            // After a backoff it carries the newest document (a rejection resyncs at once).
            if failure != .rejected { #expect(recovery.content == Self.content(last)) }
        } else {
            // One patch from what the widget showed to the newest document, not a backlog.
            #expect(recovery.method == "PATCH", "\(seen.requests.map(\.method))")
            #expect(recovery.content.map { MergePatch.apply($0, to: Self.content(first)) } == Self.content(last))
        }
        switch failure {
        case .rateLimited:
            #expect(recovery.time - afterFirst[0].time >= 1, "Retry-After: 1 was not honoured")
        case .rejected:
            // At once exactly one full replace; the rejected patch is never sent again.
            #expect(afterFirst.filter { $0.method == "PUT" }.count == 1, "\(seen.requests.map(\.method))")
            #expect(afterFirst.dropFirst().allSatisfy { $0.body != afterFirst[0].body })
            #expect(log.all.contains { $0.level == .error && $0.message.contains("HTTP 422: told to fail with 422") }, "\(log.text)")
        case .unauthorized:
            #expect(log.all.contains { $0.level == .error && $0.message.contains("HTTP 401") }, "\(log.text)")
        case .slowAnswer, .droppedConnection:
            #expect(log.all.contains { $0.level == .warning && $0.message.contains("next request is a full replace") }, "\(log.text)")
        case .serverErrors:
            #expect(afterFirst.prefix(3).allSatisfy { $0.status == 500 })
        }
        #expect(!log.text.contains(service.token))
        #expect(sink.stop(timeout: .seconds(2)))
    }

    /// A real outage (connections refused): nothing queues up, the sink retries on its own, and the
    /// first request afterwards is one patch that carries the newest document.
    @Test func anOutageEndsWithOnePatchCarryingTheCurrentTruth() async throws {
        let (service, log, sink) = try await Self.setUp()
        var engine = Engine()
        let first = engine.push(100)
        sink.take(first)
        #expect(await service.waitUntil { $0.document == Self.content(first) } != nil)
        try await service.outage(seconds: 3)  // long enough to be seen refusing on a loaded machine
        var last = first
        for step in 1...1000 {
            last = engine.push(100 + Double(step))
            sink.take(last)
        }
        let seen = try #require(await service.waitUntil { $0.document == Self.content(last) }, "\(log.text)")
        #expect(seen.requests.map(\.method) == ["PUT", "PATCH"], "\(log.text)")
        #expect(seen.requests.last?.content == ["flow": ["exchange": ["rate": 1100]]])
        #expect(seen.maxInFlight == 1)
        // Said once the sink has read the answer, which may be a moment after the service had it.
        #expect(await eventually { log.all.contains { $0.level == .info && $0.message.contains("delivered again") } }, "\(log.text)")
        #expect(sink.stop(timeout: .seconds(2)))
    }

    /// A document the service rejects (422 with its reason) is not sent again; the next one is.
    @Test func aRejectedDocumentIsLoggedWithTheReasonAndNotResent() async throws {
        let (service, log, sink) = try await Self.setUp()
        var engine = Engine()
        sink.take(engine.push(100, level: 150))  // a level the spec rejects
        #expect(await service.waitUntil { $0.requests.count >= 1 } != nil)
        // The sink has read the rejection; a resend would come within the longest backoff (0.4 s).
        #expect(await eventually { log.all.contains { $0.level == .error && $0.message.contains("flow.storage.level: must be between 0 and 100") } }, "\(log.text)")
        #expect(await consistently(for: .milliseconds(600)) { (try? service.snapshot().requests.count) == 1 })
        let good = engine.push(100, level: 50)
        sink.take(good)
        let seen = await service.waitUntil { $0.document == Self.content(good) }
        #expect(seen?.requests.map(\.method) == ["PUT", "PUT"])
        #expect(sink.stop(timeout: .seconds(2)))
    }

    /// A wrong token: said loudly, retried only after the long wait, never in a loop.
    @Test func aWrongTokenIsRefusedAndRetriedSlowly() async throws {
        let (service, log, sink) = try await Self.setUp(token: "not-the-token")
        var engine = Engine()
        sink.take(engine.push(100))
        let seen = try #require(await service.waitUntil { $0.requests.count >= 3 })
        sink.stop(timeout: .seconds(1))
        let gaps = zip(seen.requests, seen.requests.dropFirst()).map { $1.time - $0.time }
        #expect(gaps.allSatisfy { $0 >= Self.quickRetry.maxSeconds }, "\(gaps)")
        #expect(seen.requests.allSatisfy { $0.status == 401 && $0.headers["authorization"] == "wrong" })
        #expect(log.all.filter { $0.level == .error && $0.message.contains("HTTP 401: invalid token") }.count >= 2, "\(log.text)")
        #expect(!log.text.contains("not-the-token"))
        #expect(seen.document == nil)
    }

    /// TLS is verified: against `ca_file`, or the system's certificates (which do not know the test
    /// CA); only `insecure: true` delivers to a server whose certificate does not verify.
    enum Trust: String, CaseIterable, Sendable {
        case itsCA, anotherCA, systemStore, insecure
    }

    @Test(arguments: Trust.allCases)
    func tlsIsVerifiedUnlessTheUserSaysOtherwise(trust: Trust) async throws {
        let (service, log, sink) = try await Self.setUp(tls: true) { settings, service in
            guard let files = service.tlsFiles else { return }
            switch trust {
            case .itsCA: settings.caFile = files.caFile
            case .anotherCA: settings.caFile = files.wrongCAFile
            case .systemStore: break
            case .insecure:
                settings.caFile = files.wrongCAFile
                settings.insecure = true
            }
        }
        #expect(service.tlsFiles != nil)
        var engine = Engine()
        let push = engine.push(100)
        sink.take(push)
        if trust == .itsCA || trust == .insecure {
            #expect(await service.waitUntil { $0.document == Self.content(push) } != nil, "\(log.text)")
        } else {
            _ = await eventually { log.text.contains("certificate") }
            #expect(log.all.contains { $0.level == .warning && $0.message.contains("certificate") }, "\(log.text)")
            #expect(!log.text.contains("whether it arrived is unknown"), "\(log.text)")  // refused before anything was sent
            #expect(try service.snapshot().requests.isEmpty)
        }
        #expect(log.all.contains { $0.message.contains("not verified (insecure: true)") } == (trust == .insecure), "\(log.text)")
        sink.stop(timeout: .seconds(1))
    }

    /// A restart with saved delivery state sends a patch, unless the saved state is in doubt or
    /// belongs to another URL.
    enum SavedState: String, CaseIterable, Sendable {
        case clean, inDoubt, otherURL
    }

    @Test(arguments: SavedState.allCases)
    func aRestartGoesOnFromTheSavedDelivery(saved: SavedState) async throws {
        let service = try await WidgetStandIn()
        let log = LogLines()
        var engine = Engine()
        let before = try Self.sink(service, log: log)
        let first = engine.push(100)
        before.take(first)
        let shown = engine.push(200)
        // Shown before the next is taken: two requests, not one coalesced.
        #expect(await service.waitUntil { $0.document == Self.content(first) } != nil)
        before.take(shown)
        #expect(await service.waitUntil { $0.document == Self.content(shown) && $0.requests.count == 2 } != nil)
        #expect(before.stop(timeout: .seconds(2)))
        var state = try #require(before.savedState)
        #expect(state["in_doubt"] == false)
        #expect(state["shown"] == Self.content(shown))
        switch saved {
        case .clean: break
        case .inDoubt: state = MergePatch.apply(["in_doubt": true], to: state)
        case .otherURL: state = MergePatch.apply(["url": "0"], to: state)
        }

        let after = try Self.sink(service, log: log)
        after.restore(state)
        let next = engine.push(300, restarted: true)
        #expect(next.isFullContent)
        after.take(next)
        let seen = try #require(await service.waitUntil { $0.document == Self.content(next) })
        #expect(seen.requests.count == 3)
        #expect(seen.requests.last?.method == (saved == .clean ? "PATCH" : "PUT"))
        if saved == .clean { #expect(seen.requests.last?.content == ["flow": ["exchange": ["rate": 300]]]) }
        #expect(after.stop(timeout: .seconds(2)))
    }

    /// A state saved while the sink delivers may be older than what the widget shows by the time
    /// the daemon dies: taken then, it is in doubt; taken after a stop, it is exact.
    @Test func aStateTakenWhileTheSinkRunsIsInDoubt() async throws {
        let (service, _, sink) = try await Self.setUp()
        var engine = Engine()
        let first = engine.push(100)
        sink.take(first)
        #expect(await service.waitUntil { $0.document == Self.content(first) } != nil)
        // The service has the document before the sink's thread has read the answer.
        #expect(await eventually { sink.savedState?["shown"] == Self.content(first) })
        let running = try #require(sink.savedState)
        #expect(running["in_doubt"] == true)
        #expect(running["shown"] == Self.content(first))
        #expect(sink.stop(timeout: .seconds(2)))
        #expect(sink.savedState?["in_doubt"] == false)
        #expect(sink.savedState?["shown"] == Self.content(first))
    }

    /// Stopping during a request that outlasts the stop leaves the widget in doubt in the saved state.
    @Test func aStopDuringAHangingRequestLeavesTheWidgetInDoubt() async throws {
        let (service, _, sink) = try await Self.setUp(timeoutSeconds: 30)
        var engine = Engine()
        let first = engine.push(100)
        sink.take(first)
        #expect(await service.waitUntil { $0.document == Self.content(first) } != nil)
        try service.fail(["delay": 20])
        sink.take(engine.push(200))
        #expect(await service.waitUntil { $0.requests.count >= 2 } != nil)
        #expect(!sink.stop(timeout: .milliseconds(200)))
        #expect(sink.savedState?["in_doubt"] == true)
        sink.take(engine.push(300))  // taken after the stop: ignored
    }
}
