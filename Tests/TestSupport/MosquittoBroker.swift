import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A real `mosquitto` broker for tests: its own temp dir, config, log and free loopback port.
///
/// ```swift
/// @Test(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason))
/// func receives() async throws {
///     let broker = try await MosquittoBroker()            // anonymous plain listener
///     try await broker.publish(topic: "meter/power", payload: "1500", retain: true)
///     ...
/// }
/// ```
///
/// `stop()`, `kill()` (SIGKILL) and `restart()` keep the port, so a client can reconnect to it;
/// while the broker is down the port is held closed (bound, never listened on), so a client is
/// refused there and no broker of a test running in parallel takes it.
/// Everything (process, temp dir) goes away in `deinit`. The broker's log (`log_type all`) is in
/// `logFile`; `log` reads it, useful in failure messages.
///
/// Waiting is async (polling through `poll`), never blocking: Swift Testing runs tests in
/// parallel on a cooperative pool as small as the core count, and a blocked thread there stalls
/// every other test.
///
/// `@unchecked Sendable`: the only mutable state, the running broker process, is guarded by `lock`.
public final class MosquittoBroker: @unchecked Sendable {
    /// Certificates made for a TLS broker: a CA, the server's certificate (CN and SAN 127.0.0.1,
    /// SAN localhost) signed by it, and an unrelated CA for the "wrong CA" case.
    public struct TLSFiles: Sendable {
        public let caFile: String
        public let serverCertFile: String
        public let serverKeyFile: String
        public let wrongCAFile: String
    }

    public let port: Int
    public let directory: String
    public let logFile: String
    /// `username → password`; empty means anonymous access is allowed.
    public let users: [String: String]
    /// Set when the listener speaks TLS.
    public let tlsFiles: TLSFiles?

    private let configFile: String
    private let lock = NSLock()
    private var process: ChildProcess?
    /// The socket that holds `port` closed while the broker is down.
    private var held: Int32?

    // MARK: Availability

    /// The mosquitto binary: on PATH, or where Debian puts it.
    public static let executablePath: String? = findExecutable("mosquitto", extra: ["/usr/sbin", "/usr/local/sbin"])

    /// Tests that need a broker are enabled only when this is true.
    public static var isAvailable: Bool { executablePath != nil && findExecutable("mosquitto_pub") != nil }

    /// Why broker tests are skipped (only ever because the binaries are missing), ready for
    /// `.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason)`.
    public static let skipReason: Comment = "mosquitto binary not installed (apt-get install mosquitto mosquitto-clients)"

    // MARK: Life

    /// Writes a config for a listener on a free 127.0.0.1 port and starts the broker.
    /// - Parameters:
    ///   - users: username → password; when non-empty, anonymous clients are refused.
    ///   - tls: generate certificates and listen with TLS only.
    ///   - extraConfig: more mosquitto.conf lines.
    public init(users: [String: String] = [:], tls: Bool = false, extraConfig: [String] = []) async throws {
        guard Self.executablePath != nil else { throw BrokerError(Self.skipReason.rawValue) }
        var template = Array("/tmp/flowbridge-mosquitto-XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw BrokerError("mkdtemp failed: \(String(cString: strerror(errno)))") }
        directory = String(cString: dir)
        logFile = directory + "/mosquitto.log"
        configFile = directory + "/mosquitto.conf"
        self.users = users
        do {
            tlsFiles = tls ? try await Self.makeCertificates(in: directory) : nil
            var settings = [
                "allow_anonymous \(users.isEmpty)",
                "persistence false",
                "log_dest stderr",
                "log_type all",
                "connection_messages true",
                // Run as whoever runs the tests: as root, mosquitto would otherwise switch to the
                // `mosquitto` user, who cannot read this temp dir.
                "user \(String(cString: getpwuid(getuid()).pointee.pw_name))",
            ]
            if !users.isEmpty {
                let passwordFile = directory + "/passwords"
                for (index, (user, password)) in users.sorted(by: { $0.key < $1.key }).enumerated() {
                    let args = (index == 0 ? ["-c"] : []) + ["-b", passwordFile, user, password]
                    let result = try await Self.run("mosquitto_passwd", args, directory: directory)
                    guard result.status == 0 else { throw BrokerError("mosquitto_passwd failed: \(result.output)") }
                }
                settings.append("password_file \(passwordFile)")
            }
            if let tlsFiles {
                settings += ["cafile \(tlsFiles.caFile)", "certfile \(tlsFiles.serverCertFile)", "keyfile \(tlsFiles.serverKeyFile)"]
            }
            settings += extraConfig
            // The free port can be taken by someone else before mosquitto binds it: then try another.
            var attempt = 1
            while true {
                let candidate = try Self.freeLoopbackPort()
                try ((["listener \(candidate) 127.0.0.1"] + settings).joined(separator: "\n") + "\n")
                    .write(toFile: configFile, atomically: true, encoding: .utf8)
                do {
                    process = try await Self.launch(configFile: configFile, logFile: logFile, port: candidate)
                    port = candidate
                    break
                } catch where attempt < 3 {
                    attempt += 1
                }
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    deinit {
        // Releasing the process kills and reaps it.
        lock.withLock {
            process = nil
            if let held { close(held) }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the broker (again) on the same port and waits until it accepts TCP connections.
    public func start() async throws {
        if isRunning { return }
        lock.withLock {
            if let held { close(held) }
            held = nil
        }
        let process = try await Self.launch(configFile: configFile, logFile: logFile, port: port)
        lock.withLock { self.process = process }
    }

    /// Starts mosquitto and waits (bounded) until it says it runs and `port` accepts TCP connections.
    /// A port that accepts is not enough: a broker of a test running in parallel may have taken the
    /// same free port first, and then ours exits with "Address already in use" while theirs answers.
    private static func launch(configFile: String, logFile: String, port: Int) async throws -> ChildProcess {
        func log() -> String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }
        func runningLines() -> Int { log().components(separatedBy: " running\n").count }
        let startsBefore = runningLines()  // the log is appended to by every start on this port
        let process = try ChildProcess(executablePath!, ["-c", configFile], outputFile: logFile)
        let accepting = await eventually { !process.isRunning || (runningLines() > startsBefore && acceptsConnections(port: port)) }
        guard process.isRunning else { throw BrokerError("mosquitto exited during start-up. Log:\n\(log())") }
        guard accepting else {
            throw BrokerError("mosquitto did not accept connections on port \(port) within \(readinessTimeout). Log:\n\(log())")
        }
        return process
    }

    /// SIGTERM: the broker shuts down orderly. Waits (bounded) for it to exit.
    public func stop() async { await signalAndWait(SIGTERM) }

    /// SIGKILL: the broker vanishes without closing anything cleanly from its side.
    public func kill() async { await signalAndWait(SIGKILL) }

    /// Stops (SIGTERM) and starts again on the same port.
    public func restart() async throws {
        await stop()
        try await start()
    }

    public var isRunning: Bool { lock.withLock { process?.isRunning ?? false } }

    /// The broker's process ID while it runs.
    public var processIdentifier: pid_t? { lock.withLock { process.flatMap { $0.isRunning ? $0.pid : nil } } }

    private func signalAndWait(_ signal: Int32) async {
        guard let process = lock.withLock({ self.process }) else { return }
        process.send(signal)
        if !(await process.waitForExit(timeout: .seconds(5))) {
            process.send(SIGKILL)
            await process.waitForExit(timeout: .seconds(5))
        }
        lock.withLock {
            guard self.process === process else { return }
            self.process = nil
            if held == nil { held = try? Self.boundLoopbackSocket(port: port).fd }
        }
    }

    // MARK: Log

    /// The broker's log so far.
    public var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    /// How many times the log holds `text` so far.
    public func logCount(_ text: String) -> Int { log.components(separatedBy: text).count - 1 }

    /// The client connections the broker has taken, one log line each: "New connection from" once
    /// established, or "Client connection from … failed" when a TLS handshake failed while the
    /// broker accepted it. Which of the two a refused handshake gives depends on when the client's
    /// alert arrives, so a count of retries counts both.
    public var connectionAttempts: Int { logCount("New connection from") + logCount("Client connection from") }

    /// Waits until the broker has taken `count` client connections (`connectionAttempts`).
    public func waitForConnectionAttempts(_ count: Int, timeout: Duration = readinessTimeout) async -> Bool {
        await eventually(timeout: timeout) { connectionAttempts >= count }
    }

    /// Waits until the log contains `text` at least `count` times. Useful to know that a client's
    /// SUBSCRIBE has been processed (mosquitto logs "Sending SUBACK to <client id>"). A readiness
    /// wait (see `readinessTimeout`): it returns as soon as the line is there.
    @discardableResult
    public func waitForLog(_ text: String, count: Int = 1, timeout: Duration = readinessTimeout) async -> Bool {
        await eventually(timeout: timeout) { logCount(text) >= count }
    }

    // MARK: Command-line clients

    /// `-h/-p`, the TLS CA and the first user's credentials: what mosquitto_pub/sub need here.
    public var clientArguments: [String] {
        var args = ["-h", "127.0.0.1", "-p", String(port)]
        if let tlsFiles { args += ["--cafile", tlsFiles.caFile] }
        if let user = users.keys.sorted().first, let password = users[user] { args += ["-u", user, "-P", password] }
        return args
    }

    /// Publishes one message with `mosquitto_pub`. `messageExpirySeconds` implies MQTT 5.
    public func publish(topic: String, payload: [UInt8], qos: Int = 0, retain: Bool = false,
                        mqtt5: Bool = false, messageExpirySeconds: Int? = nil) async throws {
        let payloadFile = directory + "/payload-\(UUID().uuidString)"
        try Data(payload).write(to: URL(fileURLWithPath: payloadFile))
        defer { try? FileManager.default.removeItem(atPath: payloadFile) }
        var args = clientArguments + ["-t", topic, "-f", payloadFile, "-q", String(qos)]
        if retain { args.append("-r") }
        if mqtt5 || messageExpirySeconds != nil { args += ["-V", "mqttv5"] }
        if let messageExpirySeconds { args += ["-D", "publish", "message-expiry-interval", String(messageExpirySeconds)] }
        let result = try await Self.run("mosquitto_pub", args, directory: directory)
        guard result.status == 0 else { throw BrokerError("mosquitto_pub failed (\(result.status)): \(result.output)") }
    }

    public func publish(topic: String, payload: String, qos: Int = 0, retain: Bool = false,
                        mqtt5: Bool = false, messageExpirySeconds: Int? = nil) async throws {
        try await publish(topic: topic, payload: Array(payload.utf8), qos: qos, retain: retain,
                    mqtt5: mqtt5, messageExpirySeconds: messageExpirySeconds)
    }

    /// A message as `mosquitto_sub` saw it.
    public struct ReceivedMessage: Sendable, Equatable {
        public let topic: String
        public let payload: [UInt8]
        public let retained: Bool
        public var text: String { String(decoding: payload, as: UTF8.self) }

        public init(topic: String, payload: [UInt8], retained: Bool) {
            self.topic = topic
            self.payload = payload
            self.retained = retained
        }
    }

    /// A `mosquitto_sub` running in the background until it has `count` messages or its timeout passes.
    public final class Subscriber: Sendable {
        let process: ChildProcess
        let outputFile: String
        public let clientID: String

        init(process: ChildProcess, outputFile: String, clientID: String) {
            self.process = process
            self.outputFile = outputFile
            self.clientID = clientID
        }

        /// What it received so far (mosquitto_sub writes each message as it comes).
        public var received: [ReceivedMessage] {
            let output = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
            return output.split(separator: "\n").compactMap(MosquittoBroker.parse)
        }

        /// Waits for the subscriber to finish (it stops itself at `count` messages or its `-W`
        /// timeout), or until what it received is `enough`, and returns what it received; one
        /// still running after `timeout` is killed.
        public func messages(
            timeout: Duration = readinessTimeout, until enough: ([ReceivedMessage]) -> Bool = { _ in false }
        ) async -> [ReceivedMessage] {
            _ = await eventually(timeout: timeout) { !process.isRunning || enough(received) }
            process.send(SIGKILL)
            return received
        }
    }

    /// Starts `mosquitto_sub` and returns once the broker has acknowledged its subscription, so a
    /// message published after this returns is seen.
    public func subscriber(topic: String, count: Int = 1, timeout: Int = 5) async throws -> Subscriber {
        let clientID = "sub-\(UUID().uuidString.prefix(8))"
        let outputFile = directory + "/\(clientID).out"
        let arguments = clientArguments + ["-i", clientID, "-t", topic, "-C", String(count),
                                           "-W", String(timeout), "-F", "%r %t %x"]
        let process = try ChildProcess(try Self.executable("mosquitto_sub"), arguments, outputFile: outputFile)
        let subscriber = Subscriber(process: process, outputFile: outputFile, clientID: clientID)
        // Readiness, not speed: on a machine busy with the parallel suite a client can take seconds.
        guard await waitForLog("Sending SUBACK to \(clientID)", timeout: .seconds(timeout + 10)) else {
            throw BrokerError("mosquitto_sub \(clientID) did not subscribe. Log:\n\(log)")
        }
        return subscriber
    }

    /// Subscribes with `mosquitto_sub` and returns up to `count` messages received within `timeout` s
    /// (retained ones arrive at once). It returns as soon as it has `count`: the default timeout
    /// is a readiness wait; a check that nothing arrives names its own, short, one.
    public func receive(topic: String, count: Int = 1, timeout: Int = Int(readinessTimeout / .seconds(1))) async throws -> [ReceivedMessage] {
        try await subscriber(topic: topic, count: count, timeout: timeout).messages(timeout: .seconds(timeout + 2))
    }

    /// Parses one `-F "%r %t %x"` line: retained flag, topic, payload in hex.
    static func parse(_ line: Substring) -> ReceivedMessage? {
        // Anything else mosquitto_sub prints ("Timed out", errors) is not a message.
        let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count >= 2, fields[0] == "0" || fields[0] == "1" else { return nil }
        let hex = fields.count == 3 ? Array(fields[2].utf8) : []
        var payload: [UInt8] = []
        var index = 0
        while index + 1 < hex.count {
            guard let byte = UInt8(String(decoding: hex[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            payload.append(byte)
            index += 2
        }
        return ReceivedMessage(topic: String(fields[1]), payload: payload, retained: fields[0] == "1")
    }

    // MARK: Helpers

    /// A port nobody listens on, for a broker to start on (`HTTPProbe.freePort`). (For a client to
    /// find closed, `ClosedPort`: a port let go can be taken by the broker of a test running in
    /// parallel.)
    public static func freeLoopbackPort() throws -> Int { HTTPProbe.freePort() }

    /// A loopback port that stays closed while this lives: bound and never listened on, so a client
    /// is refused there and no broker of a test running in parallel can take it.
    public final class ClosedPort: Sendable {
        public let port: Int
        private let fd: Int32

        public init() throws { (fd, port) = try MosquittoBroker.boundLoopbackSocket() }
        deinit { close(fd) }
    }

    /// A TCP socket bound to 127.0.0.1 on `port`, or on a port the kernel chose (0), and that port.
    /// A given port is bound with `SO_REUSEADDR`: the connections of a broker just stopped on it
    /// linger in TIME_WAIT.
    static func boundLoopbackSocket(port: Int = 0) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BrokerError("socket() failed") }
        if port != 0 {
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw BrokerError("could not bind a free port: \(String(cString: strerror(errno)))")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    static func acceptsConnections(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A CA, a server certificate for 127.0.0.1/localhost signed by it, and an unrelated CA (EC keys: fast).
    static func makeCertificates(in directory: String) async throws -> TLSFiles {
        let files = TLSFiles(caFile: directory + "/ca.crt", serverCertFile: directory + "/server.crt",
                             serverKeyFile: directory + "/server.key", wrongCAFile: directory + "/wrong-ca.crt")
        let ext = directory + "/server.ext"
        try """
            basicConstraints = CA:FALSE
            keyUsage = digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectAltName = IP:127.0.0.1, DNS:localhost

            """.write(toFile: ext, atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let caExtensions = ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
        func path(_ name: String) -> String { directory + "/" + name }
        let steps: [[String]] = [
            ["req", "-x509"] + ec + ["-keyout", path("ca.key"), "-out", files.caFile, "-days", "2",
                                     "-subj", "/CN=flowbridge test CA"] + caExtensions,
            ["req"] + ec + ["-keyout", files.serverKeyFile, "-out", path("server.csr"), "-subj", "/CN=127.0.0.1"],
            ["x509", "-req", "-in", path("server.csr"), "-CA", files.caFile, "-CAkey", path("ca.key"),
             "-out", files.serverCertFile, "-days", "2", "-extfile", ext],
            ["req", "-x509"] + ec + ["-keyout", path("wrong-ca.key"), "-out", files.wrongCAFile, "-days", "2",
                                     "-subj", "/CN=unrelated CA"] + caExtensions,
        ]
        for step in steps {
            let result = try await run("openssl", step, directory: directory)
            guard result.status == 0 else { throw BrokerError("openssl \(step.prefix(2).joined(separator: " ")) failed: \(result.output)") }
        }
        return files
    }

    /// Runs a command to completion (bounded by `timeout`) and returns its exit code and output
    /// (stdout and stderr, through a file so a chatty command cannot fill a pipe and stall).
    @discardableResult
    public static func run(_ command: String, _ arguments: [String], directory: String,
                           timeout: Duration = readinessTimeout) async throws -> (status: Int32, output: String) {
        let outputFile = directory + "/.\(command)-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: outputFile) }
        let process = try ChildProcess(try executable(command), arguments, outputFile: outputFile)
        guard await process.waitForExit(timeout: timeout) else {
            process.send(SIGKILL)
            throw BrokerError("\(command) \(arguments.joined(separator: " ")) timed out after \(timeout)")
        }
        let text = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
        return (process.exitCode ?? -1, text)
    }

    public static func executable(_ name: String) throws -> String {
        guard let path = findExecutable(name) else { throw BrokerError("\(name) not found on PATH") }
        return path
    }

    public static func findExecutable(_ name: String, extra: [String] = []) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        let directories = path.split(separator: ":").map(String.init) + extra + ["/usr/sbin", "/usr/bin"]
        return directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// A failure of the test broker itself, with the details (often the broker's log).
public struct BrokerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
