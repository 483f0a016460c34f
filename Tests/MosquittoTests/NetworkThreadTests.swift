import Foundation
import Mosquitto
import TestSupport
import Testing

/// The client's network loop runs on a thread named for it, as `top -H` and a debugger show it.
@Suite struct NetworkThreadTests {
    /// The names of this process's threads now.
    static func threadNames() -> [String] { ProcessThread.all().values.map(\.name) }

    @Test func theNetworkThreadIsNamed() async throws {
        let before = Self.threadNames().filter { $0 == "mqtt network" }.count
        // Nothing listens on port 1: the client keeps trying, on its thread.
        let client = try MQTTClient(options: MQTTOptions(port: 1, clientID: "named-thread-test"), subscriptions: [])
        try client.start()
        defer { client.stop() }
        #expect(await eventually { Self.threadNames().filter { $0 == "mqtt network" }.count > before }, "\(Self.threadNames())")
    }
}
