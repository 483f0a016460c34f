// A stand-in for the widget service, for tests: a real HTTP/1.1 server on 127.0.0.1.
//
//   WidgetStandIn --token TOKEN [--path /widgets/power] [--port 0] [--body-key content]
//                 [--methods PUT,PATCH] [--tls CERT_FILE KEY_FILE]
//
// It prints `listening on 127.0.0.1:PORT` once it accepts connections (HTTPS with `--tls`, and then
// first `control on 127.0.0.1:PORT`: /state and /control in plain HTTP), then serves:
// - PUT PATH (application/json) and PATCH PATH (application/merge-patch+json), body
//   {"content": …}, with `Authorization: Bearer TOKEN` (else 401): a full replace or an RFC 7396
//   merge patch of the document, which must then pass the widget spec (else 422 with the reason);
//   a patch before any document is a 409. `--methods` and `--body-key` change the two methods
//   and the wrapper's key.
// - POST /control, to make it fail on purpose. `{"fault": F, "count": N}` queues N faults, each
//   taken by the next widget request: F = {"status": 500, "retry_after": "1"} answers with that
//   status (and header); {"delay": 2} applies the request and answers after 2 s, unless the client
//   hung up before; {"drop": true, "apply": true} reads the request, applies it (or not) and
//   closes the connection without an answer. `{"outage": 1.5}` closes the listener and every
//   connection for 1.5 s (connections are refused), then listens again on the same port.
// - GET /state: {"document": …, "requests": [{"t", "method", "path", "content_type", "body",
//   "headers" (the token as right or wrong), "status", "outcome": answered | slow | dropped}], "in_flight": n, "max_in_flight": n}. A
//   request is in flight from the end of its headers until its answer is written or its client
//   is gone.
import COpenSSL
import FlowCore
import FoundationEssentials
import Glibc
import Synchronization
import Threads

signal(SIGPIPE, SIG_IGN)

/// Writes a line to a descriptor (1, 2) unbuffered: the test reads it while the process runs.
func say(_ line: String, to fd: Int32) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

struct Options {
    var token = ""
    var path = "/widget"
    var port = 0
    var bodyKey = "content"
    var replaceMethod = "PUT"
    var patchMethod = "PATCH"
    var tls: (certFile: String, keyFile: String)?
}

var options = Options()
var arguments = CommandLine.arguments.dropFirst()
while let word = arguments.popFirst() {
    switch word {
    case "--token": options.token = arguments.popFirst() ?? ""
    case "--path": options.path = arguments.popFirst() ?? options.path
    case "--port": options.port = Int(arguments.popFirst() ?? "") ?? 0
    case "--tls":
        guard let cert = arguments.popFirst(), let key = arguments.popFirst() else {
            say("WidgetStandIn: --tls needs CERT_FILE KEY_FILE", to: 2)
            exit(64)
        }
        options.tls = (cert, key)
    case "--body-key": options.bodyKey = arguments.popFirst() ?? options.bodyKey
    case "--methods":
        let methods = (arguments.popFirst() ?? "").split(separator: ",").map(String.init)
        if methods.count == 2 { (options.replaceMethod, options.patchMethod) = (methods[0], methods[1]) }
    default:
        say("WidgetStandIn: unknown argument \(word)", to: 2)
        exit(64)
    }
}

/// A fault the next widget request meets.
enum Fault: Sendable {
    case status(Int, retryAfter: String?)
    case delay(seconds: Double)
    case drop(apply: Bool)

    init?(_ json: JSONValue) {
        if let status = json["status"]?.numberValue {
            self = .status(Int(status), retryAfter: json["retry_after"]?.stringValue ?? json["retry_after"]?.numberValue.map { JSONValue.format($0) })
        } else if let seconds = json["delay"]?.numberValue {
            self = .delay(seconds: seconds)
        } else if json["drop"]?.boolValue == true {
            self = .drop(apply: json["apply"]?.boolValue ?? true)
        } else {
            return nil
        }
    }
}

/// One request as parsed off the wire.
struct HTTPRequest {
    var method: String
    var path: String
    var headers: [String: String]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// An answer, or none (a dropped connection).
struct Answer {
    var status: Int
    var body: JSONValue
    var extraHeaders: [String] = []
    var delaySeconds: Double = 0
    var drop = false
    /// Runs once the answer is written.
    var then: (@Sendable () -> Void)?
}

final class StandIn: Sendable {
    struct State {
        var document: JSONValue?
        var requests: [JSONValue] = []
        var inFlight = 0
        var maxInFlight = 0
        var faults: [Fault] = []
        var outageUntil: Double?
        var connections: Set<Int32> = []
    }

    let options: Options
    let state = Mutex(State())
    let listener = Mutex<Int32>(-1)
    /// The server's SSL_CTX with `--tls`; set up before the first connection, then only read.
    nonisolated(unsafe) let tls: OpaquePointer?

    init(options: Options) {
        self.options = options
        tls = options.tls.map { files in
            guard let context = SSL_CTX_new(TLS_server_method()),
                  SSL_CTX_use_certificate_chain_file(context, files.certFile) == 1,
                  SSL_CTX_use_PrivateKey_file(context, files.keyFile, SSL_FILETYPE_PEM) == 1
            else {
                say("WidgetStandIn: cannot use \(files.certFile) and \(files.keyFile) for TLS", to: 2)
                exit(1)
            }
            return context
        }
    }

    static func now() -> Double { Date().timeIntervalSince1970 }

    // MARK: Listening

    /// The widget's listener on 127.0.0.1:`port` (0: any free one); returns the port.
    func listen(port: Int) -> Int? {
        guard let (fd, port) = Self.listeningSocket(port: port) else { return nil }
        listener.withLock { $0 = fd }
        return port
    }

    /// A listening socket on 127.0.0.1:`port`, and its port.
    static func listeningSocket(port: Int) -> (fd: Int32, port: Int)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound, Glibc.listen(fd, 64) == 0 else {
            close(fd)
            return nil
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// With TLS, /state and /control are also served in plain HTTP on a listener of their own.
    func controlLoop(_ fd: Int32) -> Never {
        while true {
            let client = accept(fd, nil, nil)
            if client >= 0 { spawn("http client") { self.serve(client, tls: nil) } }
        }
    }

    func acceptLoop(port: Int) -> Never {
        while true {
            let fd = listener.withLock { $0 }
            let client = accept(fd, nil, nil)
            if client >= 0 {
                state.withLock { _ = $0.connections.insert(client) }
                spawn("https client") { self.serve(client, tls: self.tls) }
                continue
            }
            // The listener was closed for an outage: wait for its end (the time it was told to
            // last) and listen again, as soon as the port can be bound.
            if let until = state.withLock({ $0.outageUntil }) {
                let remaining = until - Self.now()
                if remaining > 0 { usleep(UInt32(remaining * 1_000_000)) }
                close(fd)
                while listen(port: port) == nil { usleep(10_000) }
                state.withLock { $0.outageUntil = nil }
            } else if errno != EINTR {
                usleep(1000)  // a failed accept (out of descriptors): not a busy loop
            }
        }
    }

    /// A real outage: no listener, no connection, until `seconds` have passed.
    func startOutage(seconds: Double) {
        let connections = state.withLock { state -> Set<Int32> in
            state.outageUntil = Self.now() + seconds
            return state.connections
        }
        for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) }
        shutdown(listener.withLock { $0 }, Int32(SHUT_RDWR))
    }

    // MARK: Connections

    func serve(_ fd: Int32, tls: OpaquePointer?) {
        defer {
            state.withLock { _ = $0.connections.remove(fd) }
            close(fd)
        }
        guard let connection = Connection(fd: fd, tls: tls) else { return }  // a failed TLS handshake
        var buffer: [UInt8] = []
        while let request = read(connection, &buffer) {
            let counted = request.path == options.path
            if counted {
                state.withLock { state in
                    state.inFlight += 1
                    state.maxInFlight = max(state.maxInFlight, state.inFlight)
                }
            }
            let answer = handle(request)
            var clientStayed = true
            if answer.delaySeconds > 0 { clientStayed = waitUnlessHungUp(fd, seconds: answer.delaySeconds) }
            if clientStayed && !answer.drop { write(answer, to: connection) }
            answer.then?()
            if counted { state.withLock { $0.inFlight -= 1 } }
            if answer.drop || !clientStayed || request.header("connection")?.lowercased() == "close" { return }
        }
    }

    /// Sleeps up to `seconds`; false when the client closed its end meanwhile.
    func waitUnlessHungUp(_ fd: Int32, seconds: Double) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = Self.now() + seconds
        while true {
            let remaining = deadline - Self.now()
            if remaining <= 0 { return true }
            let ready = poll(&poller, 1, Int32(remaining * 1000) + 1)
            if ready > 0 {
                var byte: UInt8 = 0
                if recv(fd, &byte, 1, Int32(MSG_PEEK)) <= 0 { return false }
                usleep(UInt32(remaining * 1_000_000))  // more bytes: the client is there
                return true
            }
        }
    }

    /// The next request on the connection; nil at its end or on garbage.
    func read(_ connection: Connection, _ buffer: inout [UInt8]) -> HTTPRequest? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        while headerEnd == nil {
            headerEnd = buffer.firstRange(of: separator)?.upperBound
            if headerEnd == nil, !connection.receive(into: &buffer) { return nil }
        }
        let lines = String(decoding: buffer[..<headerEnd!], as: UTF8.self).split(separator: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        guard requestLine.count == 3 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...].drop { $0 == " " })
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        if headers["expect"]?.lowercased() == "100-continue" { connection.send(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
        while buffer.count < headerEnd! + length {
            if !connection.receive(into: &buffer) { return nil }
        }
        let body = Array(buffer[headerEnd!..<(headerEnd! + length)])
        buffer.removeFirst(headerEnd! + length)
        return HTTPRequest(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body)
    }

    func write(_ answer: Answer, to connection: Connection) {
        let body = answer.body.encoded()
        let reason = [200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
                      409: "Conflict", 415: "Unsupported Media Type", 422: "Unprocessable Content",
                      429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"][answer.status] ?? "Status"
        var head = "HTTP/1.1 \(answer.status) \(reason)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        for line in answer.extraHeaders { head += line + "\r\n" }
        connection.send(Array((head + "\r\n").utf8) + body)
    }

    // MARK: The API

    func handle(_ request: HTTPRequest) -> Answer {
        switch (request.method, request.path) {
        case ("GET", "/state"):
            return Answer(status: 200, body: state.withLock { state in
                ["document": state.document ?? .null, "requests": .array(state.requests),
                 "in_flight": .number(Double(state.inFlight)), "max_in_flight": .number(Double(state.maxInFlight))]
            })
        case ("POST", "/control"):
            return control(request)
        case (_, options.path):
            // One widget request at a time: its document change and its record appear together.
            return state.withLock { state in
                let answer = widget(request, &state)
                record(request, answer, &state)
                return answer
            }
        default:
            return Answer(status: 404, body: ["error": "no such path"])
        }
    }

    func control(_ request: HTTPRequest) -> Answer {
        guard let command = try? JSONValue(parsing: request.body) else { return Answer(status: 400, body: ["error": "not JSON"]) }
        if let seconds = command["outage"]?.numberValue {
            return Answer(status: 200, body: ["ok": true], then: { self.startOutage(seconds: seconds) })
        }
        guard let faultJSON = command["fault"], let fault = Fault(faultJSON) else {
            return Answer(status: 400, body: ["error": "expected {\"fault\": …, \"count\": n} or {\"outage\": seconds}"])
        }
        let count = Int(command["count"]?.numberValue ?? 1)
        state.withLock { $0.faults += Array(repeating: fault, count: count) }
        return Answer(status: 200, body: ["ok": true])
    }

    /// A PUT or PATCH of the widget, and the fault it meets, if any.
    func widget(_ request: HTTPRequest, _ state: inout State) -> Answer {
        let fault = state.faults.isEmpty ? nil : state.faults.removeFirst()
        var apply = true
        var delay = 0.0
        switch fault {
        case .status(let status, let retryAfter)?:
            var answer = Answer(status: status, body: ["error": .string("told to fail with \(status)")])
            if let retryAfter { answer.extraHeaders.append("Retry-After: \(retryAfter)") }
            return answer
        case .drop(let applying)?:
            apply = applying
        case .delay(let seconds)?:
            delay = seconds
        case nil:
            break
        }
        var answer = apply ? update(request, &state) : Answer(status: 0, body: .null)
        answer.delaySeconds = delay
        if case .drop? = fault { answer.drop = true }
        return answer
    }

    func update(_ request: HTTPRequest, _ state: inout State) -> Answer {
        guard request.header("authorization") == "Bearer \(options.token)" else {
            return Answer(status: 401, body: ["error": "invalid token"])
        }
        let patching: Bool
        switch request.method {
        case options.replaceMethod: patching = false
        case options.patchMethod: patching = true
        default: return Answer(status: 405, body: ["error": .string("\(options.replaceMethod) or \(options.patchMethod)")])
        }
        let expectedType = patching ? "application/merge-patch+json" : "application/json"
        guard request.header("content-type") == expectedType else {
            return Answer(status: 415, body: ["error": .string("Content-Type must be \(expectedType)")])
        }
        guard let body = try? JSONValue(parsing: request.body), let content = body[options.bodyKey], body.objectValue?.count == 1 else {
            return Answer(status: 422, body: ["error": .string("the body must be {\"\(options.bodyKey)\": …}")])
        }
        let document: JSONValue
        if patching {
            guard let current = state.document else {
                return Answer(status: 409, body: ["error": "no document to patch yet: send a full replace"])
            }
            document = MergePatch.apply(content, to: current)
        } else {
            document = content
        }
        do {
            let violations = try WidgetContent(json: document).validate(now: Date())
            guard violations.isEmpty else {
                return Answer(status: 422, body: ["error": .string(violations.map(\.description).joined(separator: "; "))])
            }
        } catch {
            return Answer(status: 422, body: ["error": .string(error.description)])
        }
        state.document = document
        return Answer(status: 200, body: ["ok": true])
    }

    func record(_ request: HTTPRequest, _ answer: Answer, _ state: inout State) {
        let body = (try? JSONValue(parsing: request.body)) ?? .string(String(decoding: request.body, as: UTF8.self))
        let outcome = answer.drop ? "dropped" : answer.delaySeconds > 0 ? "slow" : "answered"
        // Every header but the token, which only counts as right or wrong.
        var headers = request.headers.mapValues { JSONValue.string($0) }
        headers["authorization"] = headers["authorization"].map { _ in request.header("authorization") == "Bearer \(options.token)" ? "right" : "wrong" }
        let entry: JSONValue = [
            "t": .number(Self.now()), "method": .string(request.method), "path": .string(request.path),
            "content_type": .string(request.header("content-type") ?? ""), "status": .number(Double(answer.status)),
            "outcome": .string(outcome), "body": body, "headers": .object(headers),
        ]
        state.requests.append(entry)
    }
}

/// One client's connection, plain or TLS (`SSL_accept` done in `init`).
final class Connection {
    let fd: Int32
    private let ssl: OpaquePointer?

    init?(fd: Int32, tls: OpaquePointer?) {
        self.fd = fd
        guard let tls else {
            ssl = nil
            return
        }
        guard let ssl = SSL_new(tls) else { return nil }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        if SSL_accept(ssl) != 1 { return nil }
    }

    deinit {
        if let ssl {
            SSL_shutdown(ssl)
            SSL_free(ssl)
        }
    }

    /// Appends what arrives next; false at the end of the connection.
    func receive(into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = ssl.map { Int(SSL_read($0, &chunk, Int32(chunk.count))) } ?? recv(fd, &chunk, chunk.count, 0)
            if count < 0 && ssl == nil && errno == EINTR { continue }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[..<count])
            return true
        }
    }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { raw in
                ssl.map { Int(SSL_write($0, raw.baseAddress, Int32(raw.count))) }
                    ?? Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
            }
            if count <= 0 {
                if count < 0 && ssl == nil && errno == EINTR { continue }
                return
            }
            offset += count
        }
    }
}

/// Runs `body` on a thread of its own, named `name`.
func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
    _ = try? NamedThread.start(name, detached: true, body)
}

let standIn = StandIn(options: options)
guard let port = standIn.listen(port: options.port) else {
    say("WidgetStandIn: cannot listen on 127.0.0.1:\(options.port): \(String(cString: strerror(errno)))", to: 2)
    exit(1)
}
if standIn.tls != nil, let (fd, controlPort) = StandIn.listeningSocket(port: 0) {
    spawn("control") { standIn.controlLoop(fd) }
    say("control on 127.0.0.1:\(controlPort)", to: 1)
}
say("listening on 127.0.0.1:\(port)", to: 1)
standIn.acceptLoop(port: port)
