import FlowCore
import Threads
import FoundationEssentials
import Glibc
import Synchronization

/// Delivers one widget to the widget HTTP API (DESIGN §2) from a thread of its own, with libcurl.
///
/// `take` only swaps the widget's newest document into a one-slot mailbox and wakes the thread: it
/// never blocks, and nothing queues up however long the API is away. The thread runs a
/// `WidgetDelivery` (what to send, when to retry) and one request at a time, so at most one request
/// per widget is ever in flight. What the widget was last given, and whether that is in doubt, is
/// the sink's `savedState`: a restart after a clean stop goes on with a patch unless something
/// is in doubt.
public final class WidgetAPISink: Sink {
    public let name: String
    public let widget: String
    public let settings: WidgetAPISettings
    public var destination: String { "\(name) (\(settings.displayURL))" }

    /// What the engine's threads and the delivery thread share.
    fileprivate struct Mailbox {
        /// The newest document taken and not yet picked up by the thread.
        var latest: WidgetContent?
        var restored: WidgetDelivery.Saved?
        /// What `savedState` reports, updated by the thread around every request.
        var saved: WidgetDelivery.Saved?
        var stopping = false
        /// The thread has ended; `settled`: with the newest document delivered.
        var ended = false
        var settled = true
    }

    fileprivate let mailbox = Mutex(Mailbox())
    /// The thread's waits (for a document, the retry's time) and the stop's wait for its end, on
    /// the monotonic clock (see `Wakeup`): a wall clock stepped back must not hold a retry, or
    /// a stop, for as long as the step.
    fileprivate let wake = Wakeup()
    fileprivate let ended = Wakeup()
    fileprivate let abort = AbortFlag()
    fileprivate let log: @Sendable (Diagnostic) -> Void
    /// How the requests went, for the window.
    fileprivate let record = DeliveryRecord()

    public var health: DeliveryHealth? {
        var health = record.current
        if mailbox.withLock({ $0.latest != nil }) { health.waiting = true }
        return health
    }

    public struct SetupError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts the delivery thread for `widget`.
    /// - Parameters:
    ///   - token: the bearer token (never logged; a server that echoes it gets it masked).
    ///   - log: where failures, recoveries and rejections are reported.
    public init(widget: String, settings: WidgetAPISettings, token: String?, log: @escaping @Sendable (Diagnostic) -> Void) throws(SetupError) {
        self.widget = widget
        self.settings = settings
        name = "push:\(widget)"
        self.log = log
        let session: CurlSession
        do {
            session = try CurlSession(CurlSession.Options(
                url: settings.url,
                headers: (token.map { ["Authorization: Bearer \($0)"] } ?? []) + settings.headers.map { "\($0.name): \($0.value)" },
                connectTimeoutSeconds: settings.connectTimeoutSeconds, timeoutSeconds: settings.timeoutSeconds,
                caFile: settings.caFile, insecure: settings.insecure, abort: abort))
        } catch {
            throw SetupError(description: "\(name): \(error)")
        }
        let worker = DeliveryWorker(sink: self, session: session, token: token)
        // The thread holds the worker (and through it this sink) until it ends.
        do { try NamedThread.start("push \(widget)", detached: true) { worker.run() } } catch {
            throw SetupError(description: "\(name): cannot start its thread: \(error)")
        }
        if settings.insecure {
            log(Diagnostic(.warning, "\(name): TLS certificates of \(settings.displayURL) are not verified (insecure: true)"))
        }
    }

    public func take(_ push: WidgetPush) {
        guard push.widget == widget else { return }
        let wasEmpty = mailbox.withLock { mailbox -> Bool in
            guard !mailbox.stopping else { return false }
            defer { mailbox.latest = push.document }
            return mailbox.latest == nil
        }
        if wasEmpty { wake.signal() }
    }

    /// Sends what is still pending (unless the API is in backoff), up to `timeout`; then a request
    /// still in flight is aborted and the widget stays in doubt. True when the widget shows the
    /// newest document.
    @discardableResult
    public func stop(timeout: Duration) -> Bool {
        let first = mailbox.withLock { mailbox in
            defer { mailbox.stopping = true }
            return !mailbox.stopping
        }
        if first { wake.signal() }
        guard ended.wait(until: Wakeup.now() + Wakeup.nanoseconds(timeout)) else {
            abort.set()
            return false
        }
        ended.signal()  // for a later call
        return mailbox.withLock { $0.settled }
    }

    /// What the widget was last given, and whether that is in doubt. While the delivery thread
    /// runs, this is in doubt whatever it says: the state is saved every few seconds, requests go
    /// on in between, and a crash (`kill -9`, power) before the next save would restore a document
    /// older than the widget's, from which a patch leaves wrong whatever changed back meanwhile.
    /// Once the thread has ended (a stop), it is exact: a restart after a clean stop goes on with
    /// a patch, one after a crash with a full replace.
    public var savedState: JSONValue? {
        let (saved, ended) = mailbox.withLock { ($0.saved, $0.ended) }
        return saved.map { saved in
            ["shown": saved.shown, "in_doubt": .bool(saved.inDoubt || !ended), "url": .string(settings.urlFingerprint)]
        }
    }

    /// Takes back what an earlier run delivered to the same URL.
    public func restore(_ saved: JSONValue) {
        guard saved["url"]?.stringValue == settings.urlFingerprint else {
            log(Diagnostic(.info, "\(name): the saved delivery was for another URL; the widget gets a full replace first"))
            return
        }
        guard let shown = saved["shown"], shown.objectValue != nil else { return }
        let restored = WidgetDelivery.Saved(shown: shown, inDoubt: saved["in_doubt"]?.boolValue ?? true)
        mailbox.withLock { mailbox in
            mailbox.restored = restored
            mailbox.saved = restored
        }
    }
}

/// The half of a sink that lives on its thread: the libcurl session and the delivery state.
/// `@unchecked Sendable`: handed to its thread at the start, and used by that thread alone.
private final class DeliveryWorker: @unchecked Sendable {
    let sink: WidgetAPISink
    let session: CurlSession
    let token: String?
    var delivery: WidgetDelivery

    init(sink: WidgetAPISink, session: CurlSession, token: String?) {
        self.sink = sink
        self.session = session
        self.token = token
        delivery = WidgetDelivery(name: sink.name, retry: sink.settings.retry)
    }

    func run() {
        defer {
            let settled = delivery.isSettled
            sink.mailbox.withLock { mailbox in
                mailbox.ended = true
                mailbox.settled = settled
            }
            sink.ended.signal()
        }
        while true {
            let (restored, latest, stopping) = sink.mailbox.withLock { mailbox in
                defer { (mailbox.restored, mailbox.latest) = (nil, nil) }
                return (mailbox.restored, mailbox.latest, mailbox.stopping)
            }
            if let restored { delivery.restore(restored) }
            if let latest { delivery.offer(latest.json) }
            switch delivery.next(at: .now) {
            case .send(let request):
                if sink.abort.isSet { return }
                send(request)
            case .wait(let until):
                if stopping { return }
                sink.wake.wait(until: Wakeup.now() + Wakeup.nanoseconds(until - .now))
            case .idle:
                if stopping { return }
                sink.wake.wait()
            }
        }
    }

    private func send(_ request: WidgetDelivery.Request) {
        publish(requestInFlight: true)
        let settings = sink.settings
        let body: JSONValue = settings.bodyKey.isEmpty ? request.content : .object([settings.bodyKey: request.content])
        let (method, contentType) = request.kind == .replace
            ? (settings.replaceMethod, "application/json") : (settings.patchMethod, "application/merge-patch+json")
        let outcome: WidgetDelivery.Outcome
        switch session.perform(method: method, contentType: contentType, body: body.encoded()) {
        case .response(let status, let retryAfter, let responseBody):
            outcome = WidgetDelivery.outcome(status: status, retryAfterSeconds: retryAfter, body: responseBody)
            report(Diagnostic(.debug, "\(sink.name): \(method) \(settings.displayURL): HTTP \(status)"))
        case .failure(let reason, let requestSent):
            outcome = .failed(reason: reason, fateUnknown: requestSent)
        }
        if let diagnostic = delivery.complete(request, outcome, at: .now, jitter: .random(in: 0..<1)) { report(diagnostic) }
        sink.record.record(outcome.result, detail: outcome.reason)
        sink.record.setWaiting(!delivery.isSettled)
        publish(requestInFlight: false)
    }

    private func publish(requestInFlight: Bool) {
        let saved = delivery.saved(requestInFlight: requestInFlight)
        sink.mailbox.withLock { $0.saved = saved }
    }

    /// Logs, with the token masked should a server have echoed it.
    private func report(_ diagnostic: Diagnostic) {
        var diagnostic = diagnostic
        if let token, !token.isEmpty { diagnostic.message = diagnostic.message.replacing(token, with: "***") }
        sink.log(diagnostic)
    }
}

/// Tells a libcurl transfer on another thread to end.
final class AbortFlag: Sendable {
    private let flag = Atomic(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}
