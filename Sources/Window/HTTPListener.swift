import CMicroHTTPD
import Glibc
import Synchronization

/// An HTTP listener on libmicrohttpd: its own thread polls with epoll, and every request is
/// answered by `respond`, a pure function of the request, on that thread. Bounded by libmicrohttpd
/// itself: connections at once and per address, an idle timeout, and the memory of one connection
/// (a request line and headers beyond it are refused before the handler sees them). A request's
/// body is never read: the answer is queued at the first call, before any upload.
///
/// libmicrohttpd's timeout is an idle one: a client that sends a byte a second is never idle, and
/// would hold its connection until its headers reach the memory bound (32 KiB: nine hours). So the
/// listener keeps its own deadline: a connection whose request is not whole `requestTimeoutSeconds`
/// after it opened (or after its last answer) is shut down by `cutOverdue`, which its owner calls
/// every second. libmicrohttpd then sees the end of the stream and closes it.
///
/// The C handler finds this listener through its context pointer (`Unmanaged`), never a global.
public final class HTTPListener: Sendable {
    public struct Limits: Sendable, Equatable {
        public var connections: UInt32 = 64
        public var perAddress: UInt32 = 32
        public var idleTimeoutSeconds: UInt32 = 15
        /// From a connection's start (or its last answer) to its request's last header.
        public var requestTimeoutSeconds: UInt32 = 10
        public var memoryPerConnectionBytes = 32 * 1024

        public init() {}
    }

    public typealias Respond = @Sendable (HTTPRequest) -> HTTPResponse

    /// What the C handler reaches through its context pointer; kept for as long as the listener runs.
    private let responder: Responder
    private let daemon: Mutex<Daemon?>
    /// The port taken (the one the system gave when 0 was asked for).
    public let port: UInt16

    /// Starts listening on `address`; throws when the address cannot be taken.
    public init(address: ListenAddress, limits: Limits, respond: @escaping Respond) throws(ListenError) {
        let responder = Responder(respond: respond, requestTimeout: .seconds(Int(limits.requestTimeoutSeconds)))
        let context = Unmanaged.passUnretained(responder).toOpaque()
        let cLimits = flowbridge_mhd_limits(
            connections: limits.connections, per_address: limits.perAddress, idle_timeout_seconds: limits.idleTimeoutSeconds,
            memory_per_connection: limits.memoryPerConnectionBytes)
        let started: OpaquePointer? = address.withSocketAddress { socketAddress in
            flowbridge_mhd_start(socketAddress, cLimits, { context, connection, url, method, _, _, _, _ in
                guard let context, let connection else { return .NO }
                let responder = Unmanaged<Responder>.fromOpaque(context).takeUnretainedValue()
                return responder.answer(connection, url: url, method: method)
            }, { context, connection, _, code in
                guard let context, let connection else { return }
                Unmanaged<Responder>.fromOpaque(context).takeUnretainedValue().note(connection, code)
            }, context)
        }
        guard let started else { throw ListenError(address: address, errno: errno) }
        self.responder = responder
        daemon = Mutex(Daemon(pointer: started))
        port = flowbridge_mhd_port(started)
    }

    deinit { stop() }

    /// Shuts down each connection whose request is overdue (see the type's comment); returns how many.
    @discardableResult
    public func cutOverdue(at now: ContinuousClock.Instant = .now) -> Int {
        responder.cutOverdue(at: now)
    }

    /// Closes the listening socket and every connection, and waits for the listener's thread.
    public func stop() {
        let running = daemon.withLock { daemon -> Daemon? in
            defer { daemon = nil }
            return daemon
        }
        if let running { MHD_stop_daemon(running.pointer) }
    }

    /// libmicrohttpd's daemon: made and stopped here only, and its stop may come from any thread.
    private struct Daemon: @unchecked Sendable {
        let pointer: OpaquePointer
    }

}

/// The listener's answering half, which the C handler finds through its context pointer, and its
/// table of open connections with when each request began.
private final class Responder: Sendable {
    let respond: HTTPListener.Respond
    let requestTimeout: Duration
    /// By connection: its socket and when its request began (nil once it was shut down). Entries
    /// come and go on the listener's thread, before libmicrohttpd closes the socket: under this
    /// lock, `cutOverdue` never shuts down a descriptor that another connection reuses.
    private let open = Mutex<[UInt: (socket: Int32, since: ContinuousClock.Instant?)]>([:])

    init(respond: @escaping HTTPListener.Respond, requestTimeout: Duration) {
        self.respond = respond
        self.requestTimeout = requestTimeout
    }

    /// A connection opened or closed.
    func note(_ connection: OpaquePointer, _ code: MHD_ConnectionNotificationCode) {
        let key = UInt(bitPattern: connection)
        if code == .CONNECTION_NOTIFY_STARTED {
            let socket = flowbridge_mhd_socket(connection)
            open.withLock { $0[key] = (socket, .now) }
        } else {
            _ = open.withLock { $0.removeValue(forKey: key) }
        }
    }

    func cutOverdue(at now: ContinuousClock.Instant) -> Int {
        open.withLock { open in
            var cut = 0
            for (key, entry) in open {
                guard let since = entry.since, now - since >= requestTimeout, entry.socket >= 0 else { continue }
                shutdown(entry.socket, Int32(SHUT_RDWR))
                open[key]?.since = nil
                cut += 1
            }
            return cut
        }
    }

    /// Reads what a request says (on the listener's thread), answers it and queues the answer.
    func answer(_ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?) -> MHD_Result {
        // The request is whole: the next one on this connection has its own time from now.
        open.withLock { open in
            let key = UInt(bitPattern: connection)
            if open[key]?.since != nil { open[key]?.since = .now }
        }
        func header(_ name: String) -> String? {
            MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
        }
        let request = HTTPRequest(
            method: method.map { String(cString: $0) } ?? "",
            path: url.map { String(cString: $0) } ?? "",
            authorization: header("Authorization"),
            format: MHD_lookup_connection_value(connection, .GET_ARGUMENT_KIND, "format").map { String(cString: $0) },
            peer: flowbridge_mhd_client(connection).flatMap(PeerAddress.init))
        let response = respond(request)
        let body = response.body
        guard let made = body.withUnsafeBytes({ bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }) else { return .NO }
        defer { MHD_destroy_response(made) }
        for (name, value) in response.headers { MHD_add_response_header(made, name, value) }
        return MHD_queue_response(connection, UInt32(response.status), made)
    }
}

/// A listener that could not start: the address is taken, or not this machine's.
public struct ListenError: Error, CustomStringConvertible {
    public let address: ListenAddress
    public let errno: Int32
    public var description: String {
        "cannot listen on \(address): \(errno == 0 ? "libmicrohttpd refused to start" : String(cString: strerror(errno)))"
    }
}
