import FlowCore
import FoundationEssentials
import Platform
import Synchronization

/// The window: a read-only view of the running daemon over HTTP. Its routes:
///
/// | path | what |
/// |---|---|
/// | `/` | the status page (`StatusPage`), `style.css` its style |
/// | `/metrics` | Prometheus' text format (`MetricsText`) |
/// | `/api/v1/state` | the snapshot as JSON (`StateDocument`) |
/// | `/api/v1/history` | the day book's periods, JSON or `?format=csv` |
///
/// GET and HEAD only (anything else 405); an unknown path 404, a path is never a file name. Who
/// may look is `WindowAccess`'s; refusals are said in the log at most once a minute, with a count.
public final class Window: Sendable {
    public let settings: WindowSettings
    private let snapshot: @Sendable () -> WindowSnapshot
    private let periods: (any PeriodSource)?
    private let log: Logger
    private let refusals = Mutex(Refusals())

    private struct Refusals {
        var throttle = LogThrottle()
        var count = 0
    }

    public init(settings: WindowSettings, periods: (any PeriodSource)? = nil, log: Logger, snapshot: @escaping @Sendable () -> WindowSnapshot) {
        self.settings = settings
        self.snapshot = snapshot
        self.periods = periods
        self.log = log
    }

    public func respond(_ request: HTTPRequest) -> HTTPResponse {
        var response = route(request)
        response.headers += securityHeaders
        return response
    }

    private func route(_ request: HTTPRequest) -> HTTPResponse {
        switch WindowAccess.decide(peer: request.peer, authorization: request.authorization, settings: settings) {
        case .allowed: break
        case .unauthorized:
            noteRefusal(request, status: 401)
            var response = HTTPResponse(status: 401, contentType: "text/plain; charset=utf-8", text: "credentials needed\n")
            response.headers.append(("WWW-Authenticate", "Basic realm=\"flowbridge\", charset=\"UTF-8\""))
            return response
        case .forbidden:
            noteRefusal(request, status: 403)
            return HTTPResponse(status: 403, contentType: "text/plain; charset=utf-8", text: "not from this address\n")
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            var response = HTTPResponse(status: 405, contentType: "text/plain; charset=utf-8", text: "read-only: GET and HEAD only\n")
            response.headers.append(("Allow", "GET, HEAD"))
            return response
        }
        switch request.path {
        case "/", "":
            return HTTPResponse(status: 200, contentType: "text/html; charset=utf-8", text: StatusPage(snapshot: takeSnapshot(withPeriods: true), refreshSeconds: settings.refreshSeconds).html())
        case "/style.css":
            return HTTPResponse(status: 200, contentType: "text/css; charset=utf-8", text: StatusPage.css)
        case "/metrics":
            return HTTPResponse(status: 200, contentType: MetricsText.contentType, text: MetricsText.render(snapshot()))
        case "/api/v1/state":
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: StateDocument.json(snapshot()).encoded())
        case "/api/v1/history":
            guard let periods = takeSnapshot(withPeriods: true).periods else {
                return HTTPResponse(status: 404, contentType: "text/plain; charset=utf-8", text: "no day book\n")
            }
            if request.format == "csv" {
                return HTTPResponse(status: 200, contentType: "text/csv; charset=utf-8", text: StateDocument.historyCSV(periods))
            }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: StateDocument.history(periods).encoded())
        default:
            return HTTPResponse(status: 404, contentType: "text/plain; charset=utf-8", text: "not found\n")
        }
    }

    /// The snapshot, and the book's periods read outside the daemon's lock.
    private func takeSnapshot(withPeriods: Bool) -> WindowSnapshot {
        var taken = snapshot()
        if withPeriods, let periods { taken.periods = periods.periods(through: taken.at, zone: taken.zone) }
        return taken
    }

    /// A strict policy: nothing but this origin's style sheet; no script, no form, no base; no
    /// framing, except by Home Assistant's frontend under ingress (its own origin).
    private var securityHeaders: [(String, String)] {
        let frame = settings.ingress ? "'self'" : "'none'"
        var headers = [
            ("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors \(frame)"),
            ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-store"),
        ]
        headers.append(("X-Frame-Options", settings.ingress ? "SAMEORIGIN" : "DENY"))
        return headers
    }

    /// Says refusals at most once a minute, with how many there were since the last line.
    private func noteRefusal(_ request: HTTPRequest, status: Int) {
        let count = refusals.withLock { refusals -> Int? in
            refusals.count += 1
            guard refusals.throttle.allows("refused", at: Date()) else { return nil }
            defer { refusals.count = 0 }
            return refusals.count
        }
        guard let count else { return }
        let peer = request.peer?.description ?? "an unknown address"
        log.log(.warning, "window: refused \(counted(count, "request")) (the last: HTTP \(status) to \(peer)); said at most once a minute")
    }
}
