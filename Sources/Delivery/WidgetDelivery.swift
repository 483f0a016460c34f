import FlowCore

/// The delivery of one widget's documents to the widget HTTP API (DESIGN §2), as a state machine:
/// the engine's documents come in (`offer`), the machine says what to send or how long to wait
/// (`next`), and the fate of each request goes back in (`complete`). It holds no queue: only what
/// the widget shows, as far as known, and the newest document. Whatever the outage, the next
/// request is the diff between the two, so memory stays bounded and the first request after an
/// outage carries the current truth.
///
/// - A full replace goes out first, and whenever the widget's document is in doubt: after a
///   request whose fate is unknown (a timeout after sending, a dropped connection, a gateway that
///   gave up), after a rejected patch (the widget's document differs from ours, or the patch
///   would not have been sent), and after the API said it knows no widget at the URL (it has no
///   document to patch). Every other request is a merge patch.
/// - A rejected full replace is not sent again; the next different document is.
/// - Transient failures back off exponentially with jitter between `retry.minSeconds` and
///   `retry.maxSeconds`, or as long as the server's `Retry-After` says; a refused token or URL waits
///   `retry.maxSeconds`. The retry comes from the clock, not from the next push.
public struct WidgetDelivery: Sendable {
    /// How long to wait after failures.
    public struct Retry: Sendable, Equatable {
        public var minSeconds: Double
        public var maxSeconds: Double

        public init(minSeconds: Double = 1, maxSeconds: Double = 300) {
            self.minSeconds = minSeconds
            self.maxSeconds = maxSeconds
        }
    }

    public enum RequestKind: String, Sendable {
        case replace = "full replace"
        case patch
    }

    public struct Request: Sendable, Equatable {
        public var kind: RequestKind
        /// What goes into the body wrapper: the whole document or the merge patch.
        public var content: JSONValue
        /// What the widget shows once the request is applied.
        public var document: JSONValue
    }

    public enum Action: Sendable, Equatable {
        case send(Request)
        /// Something is pending, but not before then.
        case wait(until: ContinuousClock.Instant)
        /// Nothing to do until the next document.
        case idle
    }

    /// What came of a request, in the terms of the contract's table.
    public enum Outcome: Sendable, Equatable {
        /// 2xx.
        case delivered
        /// The server refused the body (422 and the other 4xx about the request): resync with a
        /// full replace, never the same body again.
        case rejected(reason: String)
        /// The server refuses the token or knows no widget at the URL (401, 403, 404, 405, 410, a
        /// redirect): a configuration problem, retried after a long wait. `widgetUnknown` (404,
        /// 410): whatever the widget showed is gone, so the retry is a full replace.
        case refused(reason: String, widgetUnknown: Bool = false)
        /// 429, 5xx, 408, a timeout, a network failure: retried with backoff (or after `Retry-After`).
        /// `fateUnknown`: the request may have been applied.
        case failed(reason: String, fateUnknown: Bool, retryAfterSeconds: Double? = nil)

        /// The result as the window counts it.
        public var result: DeliveryHealth.Result {
            switch self {
            case .delivered: .delivered
            case .rejected: .rejected
            case .refused: .refused
            case .failed: .failed
            }
        }

        /// What the server said, or why the request failed; nil when it went through.
        public var reason: String? {
            switch self {
            case .delivered: nil
            case .rejected(let reason), .refused(let reason, _), .failed(let reason, _, _): reason
            }
        }
    }

    /// What a restart needs: the widget's document as last delivered, and whether it is in doubt.
    public struct Saved: Sendable, Equatable {
        public var shown: JSONValue
        public var inDoubt: Bool

        public init(shown: JSONValue, inDoubt: Bool) {
            self.shown = shown
            self.inDoubt = inDoubt
        }
    }

    /// Names the widget in log lines (`push:power`).
    public let name: String
    public let retry: Retry
    /// What the widget shows, as far as known; nil before the first delivery.
    public private(set) var shown: JSONValue?
    /// `shown` may be wrong: the next request is a full replace.
    public private(set) var inDoubt = false
    /// The newest document of the engine.
    public private(set) var current: JSONValue?
    /// A full replace the API rejected: never sent again.
    private var rejected: JSONValue?
    /// No request before this (backoff, Retry-After).
    private var retryAt: ContinuousClock.Instant?
    /// Failed requests since the last delivery.
    private var failures = 0
    private var failingSince: ContinuousClock.Instant?
    private var lastFailureReport: ContinuousClock.Instant?
    /// Rejections are logged at most once a minute, counting the ones held back.
    private var lastRejectionReport: ContinuousClock.Instant?
    private var rejectionsSinceReport = 0
    private var sentAny = false

    public init(name: String, retry: Retry) {
        self.name = name
        self.retry = retry
    }

    /// Takes back what an earlier run delivered; ignored once a request went out.
    public mutating func restore(_ saved: Saved) {
        guard !sentAny else { return }
        shown = saved.shown
        inDoubt = saved.inDoubt
    }

    /// The engine's newest document; it replaces any older one not yet sent.
    public mutating func offer(_ document: JSONValue) {
        current = document
    }

    /// What to keep across a restart. A request in flight may land after the state was written,
    /// so while one is out the saved document is in doubt.
    public func saved(requestInFlight: Bool) -> Saved? {
        shown.map { Saved(shown: $0, inDoubt: inDoubt || requestInFlight) }
    }

    /// The widget shows the newest document.
    public var isSettled: Bool { current == nil || (!inDoubt && shown == current) }

    /// What to do at `now`.
    public func next(at now: ContinuousClock.Instant) -> Action {
        guard let request = pending else { return .idle }
        if let retryAt, now < retryAt { return .wait(until: retryAt) }
        return .send(request)
    }

    /// The request the widget needs, regardless of backoff; nil when it shows the newest document
    /// (or the newest document is one the API rejected).
    private var pending: Request? {
        guard let current else { return nil }
        guard let shown, !inDoubt else {
            return current == rejected ? nil : Request(kind: .replace, content: current, document: current)
        }
        return MergePatch.diff(from: shown, to: current).map { Request(kind: .patch, content: $0, document: current) }
    }

    /// Records what came of `request` (sent at the latest `next`). `jitter` in 0..<1 spreads the
    /// backoff. Returns what the log should say, if anything.
    public mutating func complete(_ request: Request, _ outcome: Outcome, at now: ContinuousClock.Instant, jitter: Double) -> Diagnostic? {
        sentAny = true
        switch outcome {
        case .delivered:
            shown = request.document
            inDoubt = false
            rejected = nil
            retryAt = nil
            defer { (failures, failingSince, lastFailureReport) = (0, nil, nil) }
            guard failures > 0, let failingSince else { return nil }
            return Diagnostic(.info, "\(name): delivered again after \(failures) failed attempt\(failures == 1 ? "" : "s") over \(Self.format(seconds: (now - failingSince).seconds))")

        case .rejected(let reason):
            let message: String
            if request.kind == .patch {
                inDoubt = true  // resync at once: exactly one full replace
                message = "\(name): the widget API rejected the patch (\(reason)); resyncing with a full replace"
            } else {
                rejected = request.document
                let delay = recordFailure(at: now, seconds: backoffSeconds(jitter: jitter))
                message = "\(name): the widget API rejected the full replace (\(reason)); it is not sent again, the next change goes out in \(Self.format(seconds: delay)) at the earliest"
            }
            // An API that rejects every patch would otherwise log on every push.
            if let last = lastRejectionReport, (now - last).seconds < 60 {
                rejectionsSinceReport += 1
                return nil
            }
            defer { (lastRejectionReport, rejectionsSinceReport) = (now, 0) }
            let held = rejectionsSinceReport > 0 ? " (\(rejectionsSinceReport) more rejections since the last report)" : ""
            return Diagnostic(.error, message + held)

        case .refused(let reason, let widgetUnknown):
            if widgetUnknown { inDoubt = true }
            let delay = recordFailure(at: now, seconds: retry.maxSeconds)
            return Diagnostic(.error, "\(name): the widget API refuses the request (\(reason)); check the push url and token; trying again in \(Self.format(seconds: delay))")

        case .failed(let reason, let fateUnknown, let retryAfter):
            if fateUnknown { inDoubt = true }
            let delay = recordFailure(
                at: now, seconds: retryAfter.map { min(3600, max(retry.minSeconds, $0)) } ?? backoffSeconds(jitter: jitter))
            let doubt = fateUnknown ? "; whether it arrived is unknown, so the next request is a full replace" : ""
            if failures == 1 {
                return Diagnostic(.warning, "\(name): the \(request.kind.rawValue) did not go through (\(reason))\(doubt); trying again in \(Self.format(seconds: delay)), changes meanwhile go out as one request")
            }
            // A long outage: one line a minute, not one per attempt.
            if let last = lastFailureReport, (now - last).seconds < 60 { return nil }
            lastFailureReport = now
            return Diagnostic(.warning, "\(name): still failing after \(failures) attempts (\(reason))\(doubt); next attempt in \(Self.format(seconds: delay))")
        }
    }

    /// Counts a failure and sets the time of the next attempt; returns the wait in seconds.
    private mutating func recordFailure(at now: ContinuousClock.Instant, seconds: Double) -> Double {
        failures += 1
        if failingSince == nil {
            failingSince = now
            lastFailureReport = now
        }
        retryAt = now + .seconds(seconds)
        return seconds
    }

    /// The wait after the current failure (`failures` not yet counted): `retry.minSeconds` doubled
    /// per earlier failure, ±25 % jitter, never outside `retry.minSeconds…retry.maxSeconds`.
    private func backoffSeconds(jitter: Double) -> Double {
        Self.backoffSeconds(attempt: failures + 1, retry: retry, jitter: jitter)
    }

    /// The wait after failed attempt number `attempt` (1: the first).
    public static func backoffSeconds(attempt: Int, retry: Retry, jitter: Double) -> Double {
        var base = retry.minSeconds
        for _ in 1..<max(1, attempt) where base < retry.maxSeconds { base *= 2 }
        return min(retry.maxSeconds, max(retry.minSeconds, min(base, retry.maxSeconds) * (0.75 + 0.5 * jitter)))
    }

    /// The contract's table: which outcome an HTTP answer (or its absence) is.
    public static func outcome(status: Int, retryAfterSeconds: Double?, body: [UInt8]) -> Outcome {
        let reason = "HTTP \(status)" + (reasonText(body).map { ": \($0)" } ?? "")
        switch status {
        case 200..<300: return .delivered
        case 429, 503: return .failed(reason: reason, fateUnknown: false, retryAfterSeconds: retryAfterSeconds)
        // A gateway that timed out or got a broken answer cannot say whether the service applied it.
        case 502, 504: return .failed(reason: reason, fateUnknown: true, retryAfterSeconds: retryAfterSeconds)
        case 408, 500..<600: return .failed(reason: reason, fateUnknown: false, retryAfterSeconds: retryAfterSeconds)
        case 300..<400: return .refused(reason: reason + " (a redirect; flowbridge does not follow it with the token)")
        case 404, 410: return .refused(reason: reason, widgetUnknown: true)
        case 401, 403, 405: return .refused(reason: reason)
        case 400..<500: return .rejected(reason: reason)
        default: return .failed(reason: reason, fateUnknown: true, retryAfterSeconds: nil)
        }
    }

    /// The server's reason for a log line: the `error`, `message`, `detail` or `reason` text of a
    /// JSON body, else the body as text; at most 300 characters, on one line.
    static func reasonText(_ body: [UInt8]) -> String? {
        var text: String?
        if let json = try? JSONValue(parsing: body) {
            text = ["error", "message", "detail", "reason"].lazy.compactMap { json[$0]?.stringValue ?? json[$0]?["message"]?.stringValue }.first
                ?? (json == .null ? nil : json.description)
        } else {
            text = String(decoding: body, as: UTF8.self)
        }
        guard var text else { return nil }
        text = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        if text.count > 300 { text = String(text.prefix(300)) + "…" }
        return text.isEmpty ? nil : text
    }

    static func format(seconds: Double) -> String {
        if seconds < 10 { return "\(JSONValue.format((seconds * 10).rounded() / 10)) s" }
        if seconds < 120 { return "\(Int(seconds.rounded())) s" }
        return "\(JSONValue.format((seconds / 6).rounded() / 10)) min"
    }
}
