import Foundation
import Testing
import TestSupport

/// The test broker itself: if these fail, the client tests' failures mean nothing.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .timeLimit(.minutes(1)), .ownThread)
struct MosquittoBrokerTests {
    @Test("listens on its own loopback port, stops orderly on SIGTERM, restarts on the same port")
    func lifecycle() async throws {
        let broker = try await MosquittoBroker()
        let other = try await MosquittoBroker()
        #expect(broker.port != other.port)
        #expect(broker.isRunning)
        let port = broker.port

        let clock = ContinuousClock()
        let stopping = await clock.measure { await broker.stop() }
        #expect(!broker.isRunning)
        #expect(stopping < .seconds(2), "SIGTERM must reach mosquitto (took \(stopping))")
        #expect(broker.log.contains("terminating"), "\(broker.log)")

        try await broker.restart()
        #expect(broker.isRunning && broker.port == port)
        await broker.kill()
        #expect(!broker.isRunning)
        try await broker.start()
        try await broker.publish(topic: "fixture/x", payload: "1", retain: true)
        #expect(try await broker.receive(topic: "fixture/#").map(\.text) == ["1"])
    }

    /// How a broker goes down, for the port test.
    enum Stop: String, CaseIterable { case sigterm, sigkill }

    @Test("while the broker is down its port is held closed: refused, and no one else binds it", arguments: Stop.allCases)
    func portHeldWhileDown(_ stop: Stop) async throws {
        let broker = try await MosquittoBroker()
        try await broker.publish(topic: "fixture/x", payload: "1")  // a connection, left in TIME_WAIT
        switch stop {
        case .sigterm: await broker.stop()
        case .sigkill: await broker.kill()
        }
        #expect(Self.loopback(broker.port, bind) == EADDRINUSE)
        #expect(Self.loopback(broker.port, connect) == ECONNREFUSED)
        try await broker.start()
        #expect(Self.loopback(broker.port, connect) == 0)
    }

    /// `call` (bind or connect) of a new TCP socket to 127.0.0.1:`port`: 0, or its errno.
    static func loopback(_ port: Int, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result == 0 ? 0 : errno
    }

    @Test("receive gives up after its timeout instead of hanging")
    func receiveTimesOut() async throws {
        let broker = try await MosquittoBroker()
        let clock = ContinuousClock()
        var received: [MosquittoBroker.ReceivedMessage] = []
        let elapsed = try await clock.measure { received = try await broker.receive(topic: "nothing/here", timeout: 1) }
        #expect(received.isEmpty)
        #expect(elapsed < .seconds(3), "took \(elapsed)")
    }

    @Test("the password listener refuses anonymous clients")
    func passwordListener() async throws {
        let broker = try await MosquittoBroker(users: ["meter": "secret", "other": "pw"])
        try await broker.publish(topic: "fixture/auth", payload: "ok")  // with the first user's credentials
        let anonymous = try await MosquittoBroker.run(
            "mosquitto_pub", ["-h", "127.0.0.1", "-p", String(broker.port), "-t", "x", "-m", "y"], directory: broker.directory)
        #expect(anonymous.status != 0)
        #expect(anonymous.output.lowercased().contains("not authori"), "\(anonymous.output)")
    }

    @Test("TLS fixture: the server certificate chains to the CA, not to the unrelated one, and names 127.0.0.1 and localhost")
    func certificates() async throws {
        let broker = try await MosquittoBroker(tls: true)
        let files = try #require(broker.tlsFiles)
        let good = try await MosquittoBroker.run("openssl", ["verify", "-CAfile", files.caFile, files.serverCertFile], directory: broker.directory)
        #expect(good.status == 0, "\(good.output)")
        let bad = try await MosquittoBroker.run("openssl", ["verify", "-CAfile", files.wrongCAFile, files.serverCertFile], directory: broker.directory)
        #expect(bad.status != 0)
        for host in ["127.0.0.1", "localhost"] {
            let named = try await MosquittoBroker.run(
                "openssl", ["verify", "-CAfile", files.caFile, host == "localhost" ? "-verify_hostname" : "-verify_ip", host, files.serverCertFile],
                directory: broker.directory)
            #expect(named.status == 0, "\(host): \(named.output)")
        }
        try await broker.publish(topic: "fixture/tls", payload: "ok", retain: true)
        #expect(try await broker.receive(topic: "fixture/tls").map(\.text) == ["ok"])
    }

    @Test("child processes get stdin from a file, extra environment, and a clean signal mask")
    func childProcess() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fb-child-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = directory + "/in.txt", output = directory + "/out.txt"
        try "from stdin\n".write(toFile: input, atomically: true, encoding: .utf8)
        let child = try ChildProcess("/bin/sh", ["-c", "cat; echo \"$FLOWBRIDGE_TEST\"; grep SigBlk /proc/self/status"],
                                     outputFile: output, standardInput: input, environment: ["FLOWBRIDGE_TEST": "extra"])
        #expect(await child.waitForExit(timeout: .seconds(5)))
        #expect(child.exitCode == 0)
        let text = try String(contentsOfFile: output, encoding: .utf8)
        #expect(text.contains("from stdin\nextra\n"), "\(text)")
        #expect(text.contains("SigBlk:\t0000000000000000"), "\(text)")

        let sleeper = try ChildProcess("/bin/sleep", ["30"])
        sleeper.send(SIGTERM)
        #expect(await sleeper.waitForExit(timeout: .seconds(5)))
        #expect(sleeper.exitCode == 128 + SIGTERM)
    }

    @Test("a child process takes none of the test process's descriptors along")
    func childProcessTakesNoDescriptor() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fb-child-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A pipe's reading end, open (not closed on exec) at a number no child opens for itself.
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        let kept: Int32 = 901
        #expect(dup2(ends[0], kept) == kept)
        defer { [ends[0], ends[1], kept].forEach { close($0) } }
        let output = directory + "/out.txt"
        let child = try ChildProcess("/bin/sh", ["-c", "ls /proc/$$/fd"], outputFile: output)
        #expect(await child.waitForExit(timeout: .seconds(5)))
        let open = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").compactMap { Int32($0) }
        #expect(open.contains(1))
        #expect(!open.contains(kept), "\(open)")
        #expect(!open.contains(ends[0]) && !open.contains(ends[1]), "\(open)")
    }
}
