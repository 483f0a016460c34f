import FlowCore
import Foundation
import Glibc
import TestSupport
import ReplaySupport
import Testing

/// The window under bad and hostile clients: each is refused or answered, and meanwhile the
/// readings still become pushes and the daemon's memory stays bounded (measured and printed).
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct WindowHostileTests {
    /// Opens 1,000 connections to the port it is given, says how many it has, and holds them.
    static let idleClients = """
        import socket, sys, time
        held = []
        for _ in range(1000):
            try:
                held.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5))
            except OSError:
                pass
        print(f"opened {len(held)}", flush=True)
        time.sleep(3600)
        """

    /// Sends a request's headers a byte a second, without end, and says when the listener cut it
    /// (the end of the stream, or a reset) and after how many bytes and seconds.
    static let slowClient = """
        import socket, sys, time
        connection = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
        data = b"GET /metrics HTTP/1.1\\r\\nHost: x\\r\\nX-Slow: " + b"a" * 100000
        started = time.monotonic()
        print("sending", flush=True)
        for sent, byte in enumerate(data):
            try:
                connection.send(bytes([byte]))
                connection.settimeout(1)
                if connection.recv(1024) == b"":
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        print(f"cut after {sent + 1} bytes, {time.monotonic() - started:.1f} s", flush=True)
        time.sleep(3600)
        """

    static func config(broker: Int, window: String, state: String, extra: String = "") -> String {
        """
        mqtt: {host: 127.0.0.1, port: \(broker), client_id: flowbridge-hostile}
        state_file: \(state)
        output: {stdout: true}
        http: {listen: "\(window)", idle_timeout: 2s, request_timeout: 4s\(extra)}
        sources:
          grid: {topic: grid/power}
        widgets:
          power:
            template: flow
            flow:
              exchange: {name: Grid, rate: grid}
            policy: {min_interval: 0s, settle: 0s, rate_step: 1, rate_deadband: 0}
        """
    }

    /// The daemon's resident memory (kB).
    static func residentKilobytes(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true)[1]) }
    }

    /// A reading published now comes out as a push: ingestion and delivery go on. Published
    /// again while no push comes: the first one may reach the broker before the subscription.
    static func pushGoesOut(_ broker: MosquittoBroker, _ daemon: RunTests.Daemon, rate: Int) async throws -> Bool {
        try await eventually {
            try await broker.publish(topic: "grid/power", payload: "\(rate)")
            return await daemon.waitFor(#""rate":\#(rate)"#, timeout: .seconds(2))
        }
    }

    @Test func hostileClientsAreRefusedWhileReadingsAndPushesGoOn() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let daemon = try RunTests.Daemon(
            config: Self.config(broker: broker.port, window: "127.0.0.1:0", state: folder.url.appendingPathComponent("state.json").path), folder: folder)
        let port = try #require(await daemon.windowPort(), "\(daemon.text)")
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        #expect(try await Self.pushGoesOut(broker, daemon, rate: 100))
        #expect(HTTPProbe.request(port: port, path: "/metrics")?.status == 200)
        let before = Self.residentKilobytes(daemon.process.pid)

        // `..` and other paths that name files: never a file, always 404.
        for path in ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..", "/etc/passwd", "//etc/passwd", "/api/v1/../../state.json"] {
            let answer = HTTPProbe.request(port: port, path: path)
            #expect(answer?.status == 404, "\(path): \(String(describing: answer))")
            #expect(answer?.body.contains("root:") == false)
        }
        // Odd methods: read-only.
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"] {
            let status = HTTPProbe.request(port: port, method: method, path: "/")?.status
            #expect(status == 405 || status == 501, "\(method): \(String(describing: status))")
        }
        #expect(HTTPProbe.request(port: port, method: "HEAD", path: "/")?.status == 200)

        // 100 MB: as a body (never read) and as a header (beyond the connection's memory).
        for (head, name) in [("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n", "body"), ("GET / HTTP/1.1\r\nX-Big: ", "header")] {
            guard let fd = HTTPProbe.connect(port: port) else {
                Issue.record("no connection for the \(name)")
                continue
            }
            HTTPProbe.send(fd, Array(head.utf8))
            let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20)
            var sentMB = 0
            while sentMB < 100, HTTPProbe.send(fd, chunk) { sentMB += 1 }
            let answer = HTTPProbe.parse(HTTPProbe.readAll(fd))
            close(fd)
            print("window: a 100 MB \(name): \(sentMB) MB taken before the listener answered \(answer.map { "\($0.status)" } ?? "nothing") and closed")
            #expect(answer.map { [405, 413, 431, 400].contains($0.status) } ?? (sentMB < 100), "\(name): \(String(describing: answer))")
        }
        #expect(try await Self.pushGoesOut(broker, daemon, rate: 200))

        // 1,000 idle connections: the listener takes what its limits allow and closes the rest;
        // meanwhile the readings still become pushes; once the idle ones time out (2 s), it answers.
        // They are a child's: in this process their descriptors would push the other tests'
        // MQTT clients past select()'s 1,024, where libmosquitto's loop no longer sees its socket.
        let idleLog = folder.url.appendingPathComponent("idle.out").path
        let idle = try ChildProcess(try MosquittoBroker.executable("python3"), ["-c", Self.idleClients, "\(port)"], outputFile: idleLog)
        let opened = await poll { (try? String(contentsOfFile: idleLog, encoding: .utf8))?.split(separator: "\n").first { $0.hasPrefix("opened ") } }
        #expect(opened != nil)
        #expect(try await Self.pushGoesOut(broker, daemon, rate: 300))
        let duringIdle = Self.residentKilobytes(daemon.process.pid)
        #expect(await eventually { HTTPProbe.request(port: port, path: "/metrics", timeoutSeconds: 5)?.status == 200 })
        idle.send(SIGKILL)
        _ = await idle.waitForExit(timeout: .seconds(10))
        print("window: \(opened ?? "none") of 1000 idle connections")

        // A client that sends a byte a second is never idle: the request's own deadline (4 s)
        // cuts it, long before its headers could reach the connection's memory bound. Meanwhile
        // another client is answered, and so are the readings.
        let slowLog = folder.url.appendingPathComponent("slow.out").path
        let slow = try ChildProcess(try MosquittoBroker.executable("python3"), ["-c", Self.slowClient, "\(port)"], outputFile: slowLog)
        defer { slow.send(SIGKILL) }
        func slowSays(_ prefix: String) -> String? {
            (try? String(contentsOfFile: slowLog, encoding: .utf8)).flatMap { $0.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init) }
        }
        #expect(await poll { slowSays("sending") } != nil)
        #expect(HTTPProbe.request(port: port, path: "/metrics")?.status == 200)
        #expect(try await Self.pushGoesOut(broker, daemon, rate: 400))
        let cut = await poll { slowSays("cut after ") }
        print("window: the slow client: \(cut ?? "not cut")")
        #expect(cut != nil, "the slow client was not cut")
        // Cut by the deadline, not by the 32 KiB bound a byte a second would take nine hours to reach.
        if let bytes = cut?.split(separator: " ").dropFirst(2).first.flatMap({ Int($0) }) { #expect(bytes < 1000) }
        #expect(HTTPProbe.request(port: port, path: "/metrics")?.status == 200)

        let after = Self.residentKilobytes(daemon.process.pid)
        print("window: resident memory \(before ?? -1) kB before, \(duringIdle ?? -1) kB with the idle connections, \(after ?? -1) kB after")
        if let before, let after { #expect(after - before < 64 * 1024, "grew from \(before) kB to \(after) kB") }
        #expect(daemon.process.isRunning)
        await daemon.stop()
    }

    /// Beyond loopback the credential is asked: none or a wrong one is a 401 (the log says so once
    /// a minute, with a count), the right one as a bearer token or a Basic password is let in.
    /// Needs an address of this machine other than loopback to connect from.
    @Test(.enabled(if: HTTPProbe.localNonLoopbackAddress() != nil, "no network address besides loopback"))
    func credentialsAreAskedBeyondLoopback() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let host = try #require(HTTPProbe.localNonLoopbackAddress())
        let token = try folder.write("window-token", "s3cret-token\n")
        let daemon = try RunTests.Daemon(
            config: Self.config(
                broker: broker.port, window: "0.0.0.0:0", state: folder.url.appendingPathComponent("state.json").path,
                extra: ", token_file: \(token)"),
            folder: folder)
        let port = try #require(await daemon.windowPort(), "\(daemon.text)")
        let basic = "Basic " + Data("anyone:s3cret-token".utf8).base64EncodedString()
        let wrongBasic = "Basic " + Data("anyone:s3cret-tokeN".utf8).base64EncodedString()
        let cases: [([String: String], Int)] = [
            ([:], 401), (["Authorization": "Bearer wrong"], 401), (["Authorization": "Bearer s3cret-token"], 200),
            (["Authorization": wrongBasic], 401), (["Authorization": basic], 200), (["Authorization": "Bearer s3cret-token-and-more"], 401),
        ]
        for (headers, status) in cases {
            let answer = HTTPProbe.request(host: host, port: port, path: "/metrics", headers: headers)
            #expect(answer?.status == status, "\(headers): \(String(describing: answer))")
            if status == 401 { #expect(answer?.headers["www-authenticate"]?.hasPrefix("Basic") == true) }
        }
        // Loopback needs nothing.
        #expect(HTTPProbe.request(port: port, path: "/metrics")?.status == 200)
        // Four refusals, one line.
        #expect(await daemon.waitFor("window: refused 1 request"))
        #expect(daemon.text.components(separatedBy: "window: refused").count - 1 == 1)
        #expect(!daemon.text.contains("s3cret"))
        await daemon.stop()
    }
}
