import FlowCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The widget service for tests: the `WidgetStandIn` executable (Tests/WidgetStandIn, built with
/// the tests) as a child process on a free loopback port. It takes PUT and PATCH at `url` with the
/// bearer `token`, applies merge patches, validates documents against the widget spec, fails on
/// demand (`fail`, `outage`), and reports every request it got (`snapshot`).
///
/// ```swift
/// let service = try await WidgetStandIn()
/// try service.fail(["status": 500], count: 3)
/// let seen = await service.waitUntil { $0.document == expected }
/// ```
///
/// `@unchecked Sendable`: every stored property is a constant; the child process is thread-safe.
public final class WidgetStandIn: @unchecked Sendable {
    /// One request the stand-in got.
    public struct Request: Sendable, Equatable {
        /// Seconds since 1970, when its headers were read.
        public var time: Double
        public var method: String
        public var contentType: String
        /// What it answered (or would have, for a dropped one).
        public var status: Int
        /// `answered`, `slow` (answered late, if the client still waited) or `dropped` (no answer).
        public var outcome: String
        /// The body as JSON (`{"content": …}`).
        public var body: JSONValue
        /// Request headers by lower-case name; `authorization` is `right` or `wrong`.
        public var headers: [String: String]
        public var content: JSONValue? { body["content"] }
        /// The client got a 2xx.
        public var succeeded: Bool { outcome == "answered" && (200..<300).contains(status) }
    }

    public struct Snapshot: Sendable {
        public var document: JSONValue?
        public var requests: [Request]
        /// The most widget requests it ever had in flight at once.
        public var maxInFlight: Int
    }

    public let port: Int
    public let token: String
    public let path: String
    /// With TLS: the CA that signed the stand-in's certificate (for 127.0.0.1) and an unrelated one.
    public let tlsFiles: MosquittoBroker.TLSFiles?
    public var url: String { "\(tlsFiles == nil ? "http" : "https")://127.0.0.1:\(port)\(path)" }
    /// Where /state and /control answer: the same port, or a plain one beside a TLS listener.
    private let controlPort: Int

    private let process: ChildProcess
    private let directory: String

    /// The built stand-in: beside the test bundle, or in `.build/debug` of the repository.
    public static var executablePath: String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("WidgetStandIn").path,
            root.appendingPathComponent(".build/debug/WidgetStandIn").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[1]
    }

    /// Starts the stand-in and returns once it listens. `tls`: HTTPS with a certificate for
    /// 127.0.0.1 made for it. `arguments`: more of its options (`--methods POST,PATCH`, `--body-key data`).
    public init(token: String = "stand-in-token-7f3a", path: String = "/widgets/power", tls: Bool = false, arguments: [String] = []) async throws {
        self.token = token
        self.path = path
        var template = Array("/tmp/flowbridge-standin-XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw BrokerError("mkdtemp failed") }
        let directory = String(cString: dir)
        self.directory = directory
        do {
            let tlsFiles = tls ? try await MosquittoBroker.makeCertificates(in: directory) : nil
            let output = directory + "/stand-in.log"
            let tlsArguments = tlsFiles.map { ["--tls", $0.serverCertFile, $0.serverKeyFile] } ?? []
            process = try ChildProcess(Self.executablePath, ["--token", token, "--path", path] + tlsArguments + arguments, outputFile: output)
            func announced(_ prefix: String, in text: String) -> Int? {
                text.split(separator: "\n").lazy.compactMap { $0.hasPrefix(prefix) ? Int($0.dropFirst(prefix.count)) : nil }.first
            }
            func text() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
            _ = await eventually { [process] in !process.isRunning || announced("listening on 127.0.0.1:", in: text()) != nil }
            let text = text()
            guard let listening = announced("listening on 127.0.0.1:", in: text) else {
                throw BrokerError("the widget stand-in did not start (\(Self.executablePath)): \(text)")
            }
            port = listening
            controlPort = announced("control on 127.0.0.1:", in: text) ?? port
            self.tlsFiles = tlsFiles
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    deinit {
        process.send(SIGKILL)
        _ = process.isRunning  // reaps it
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The next `count` widget requests meet `fault`: `["status": 500]`, `["status": 429,
    /// "retry_after": 1]`, `["delay": 2]` (applied, answered late), `["drop": true]` (no answer).
    public func fail(_ fault: JSONValue, count: Int = 1) throws {
        try control(["fault": fault, "count": .number(Double(count))])
    }

    /// Refuses connections (and closes the open ones) for `seconds`, then listens again. Returns
    /// once connections are refused.
    public func outage(seconds: Double) async throws {
        try control(["outage": .number(seconds)])
        guard await eventually({ !MosquittoBroker.acceptsConnections(port: port) }) else {
            throw BrokerError("the stand-in still answers after its outage began")
        }
    }

    private func control(_ command: JSONValue) throws {
        let answer = try Self.exchange(port: controlPort, method: "POST", path: "/control", body: command.encoded())
        guard answer.status == 200 else { throw BrokerError("stand-in control: HTTP \(answer.status)") }
    }

    /// What the stand-in shows and got so far.
    public func snapshot() throws -> Snapshot {
        let answer = try Self.exchange(port: controlPort, method: "GET", path: "/state", body: [])
        let json = try JSONValue(parsing: answer.body)
        let requests = (json["requests"]?.arrayValue ?? []).map { item in
            Request(
                time: item["t"]?.numberValue ?? 0, method: item["method"]?.stringValue ?? "",
                contentType: item["content_type"]?.stringValue ?? "", status: Int(item["status"]?.numberValue ?? 0),
                outcome: item["outcome"]?.stringValue ?? "", body: item["body"] ?? .null,
                headers: (item["headers"]?.objectValue ?? [:]).compactMapValues(\.stringValue))
        }
        let document = json["document"] == .null ? nil : json["document"]
        return Snapshot(document: document, requests: requests, maxInFlight: Int(json["max_in_flight"]?.numberValue ?? 0))
    }

    /// Polls until `condition` holds and returns that snapshot; nil when it did not within
    /// `timeout`. While the stand-in is in an outage it counts as not yet.
    @discardableResult
    public func waitUntil(timeout: Duration = readinessTimeout, _ condition: (Snapshot) -> Bool) async -> Snapshot? {
        await poll(timeout: timeout) { (try? snapshot()).flatMap { condition($0) ? $0 : nil } }
    }

    /// One HTTP/1.1 exchange over a fresh loopback connection (`Connection: close`).
    static func exchange(port: Int, method: String, path: String, body: [UInt8]) throws -> (status: Int, body: [UInt8]) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BrokerError("socket() failed") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { throw BrokerError("stand-in not reachable: \(String(cString: strerror(errno)))") }
        let request = Array("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            throw BrokerError("stand-in: send failed")
        }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            response.append(contentsOf: chunk[..<count])
        }
        guard let headerEnd = response.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound,
              let status = String(decoding: response[..<headerEnd], as: UTF8.self).split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw BrokerError("stand-in: no HTTP answer") }
        return (status, Array(response[headerEnd...]))
    }
}
