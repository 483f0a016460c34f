import Foundation
import Glibc
import Mosquitto
import TestSupport
import Testing

/// `mqtt.tls.insecure: true` turns off what TLS is for: `check` says so, and `run` once at its start.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct InsecureTLSTests {
    @Test(arguments: [(true, true), (false, false)])
    func checkSaysInsecureTLSToTheBroker(insecure: Bool, said: Bool) throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", RunTests.config(
            port: 8883, state: folder.url.appendingPathComponent("s.json").path, extra: ", tls: {insecure: \(insecure)}"))
        let result = try runFlowbridge(["check", "--config", config])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("warning: \(TLSOptions.insecureWarning)") == said, "\(result.out)")
        #expect(result.out.contains(insecure ? "(TLS, not verified)" : "(TLS)"), "\(result.out)")
    }

    /// Said once, before the first connect, however often the (here failing) handshake is retried.
    @Test func runSaysInsecureTLSOnceAtItsStart() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try RunTests.Daemon(broker: broker, extra: ", tls: {insecure: true}")
        #expect(await daemon.waitFor("broker connection:"), "\(daemon.text)")
        // Counted once the handshake has been retried (the broker sees the daemon come twice more).
        let connections = broker.connectionAttempts
        #expect(await broker.waitForConnectionAttempts(connections + 2), "\(broker.log)")
        #expect(daemon.text.components(separatedBy: TLSOptions.insecureWarning).count == 2, "\(daemon.text)")
        await daemon.stop()
    }
}
