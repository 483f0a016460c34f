@testable import Commands
@testable import Configuration
@testable import Persistence
@testable import Platform
@testable import Runtime
import TestSupport
import Testing

/// `--broker` of `discover` and `simulate`: one reading of HOST[:PORT] for both.
@Suite struct BrokerAddressTests {
    @Test(arguments: [
        ("broker.local", "broker.local", 1883), ("192.0.2.10:1884", "192.0.2.10", 1884), ("[::1]:8883", "::1", 8883),
        ("[fe80::1]", "fe80::1", 1883), ("::1", "::1", 1883), ("h:65535", "h", 65_535),
    ])
    func readsHostAndPort(text: String, host: String, port: Int) throws {
        let address = try #require(BrokerAddress(text))
        #expect(address.host == host && address.port == port)
    }

    /// No port but a number from 1 to 65535, no empty host, no spaces.
    @Test(arguments: ["", ":1883", "h:", "h:0", "h:70000", "h:port", "[::1]x", "[::1]:", "my host:1883"])
    func refusesWhatIsNotAnAddress(text: String) {
        #expect(BrokerAddress(text) == nil)
    }
}
