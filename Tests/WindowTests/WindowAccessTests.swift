import TestSupport
import ReplaySupport
import Testing
import Window

/// Who may look: each kind of peer and header against each kind of setting.
@Suite struct WindowAccessTests {
    static func settings(listen: String, token: String?, ingress: Bool = false) -> WindowSettings {
        guard case .success(let address) = ListenAddress.parse(listen) else { fatalError(listen) }
        var settings = WindowSettings(listen: address)
        settings.credential = token.map(WindowCredential.init)
        settings.ingress = ingress
        return settings
    }

    // "dG9rZW4=" is base64 "token"; "dXNlcjp0b2tlbg==" "user:token"; "dXNlcjp0b2tlTg==" "user:tokeN".
    @Test(arguments: [
        ("127.0.0.1", nil, nil, false, WindowAccess.allowed),
        ("127.8.9.10", nil, nil, false, .allowed),
        ("::1", nil, nil, false, .allowed),
        ("::ffff:127.0.0.1", nil, nil, false, .allowed),
        ("192.168.1.20", nil, nil, false, .forbidden),
        ("192.168.1.20", "token", nil, false, .unauthorized),
        ("192.168.1.20", "token", "Bearer token", false, .allowed),
        ("192.168.1.20", "token", "bearer token", false, .allowed),
        ("192.168.1.20", "token", "Bearer toke", false, .unauthorized),
        ("192.168.1.20", "token", "Bearer tokens", false, .unauthorized),
        ("192.168.1.20", "token", "Bearer ", false, .unauthorized),
        ("192.168.1.20", "token", "Basic dXNlcjp0b2tlbg==", false, .allowed),
        ("192.168.1.20", "token", "Basic dXNlcjp0b2tlTg==", false, .unauthorized),
        ("192.168.1.20", "token", "Basic dG9rZW4=", false, .unauthorized),
        ("192.168.1.20", "token", "Basic !!!", false, .unauthorized),
        ("192.168.1.20", "token", "Digest token", false, .unauthorized),
        ("172.30.32.2", nil, nil, true, .allowed),
        ("172.30.32.1", nil, nil, true, .forbidden),
        ("172.30.32.1", "token", "Bearer token", true, .forbidden),
        ("127.0.0.1", nil, nil, true, .allowed),
        ("fe80::1", "token", "Bearer token", false, .allowed),
    ] as [(String, String?, String?, Bool, WindowAccess)])
    func decision(peer: String, token: String?, authorization: String?, ingress: Bool, expected: WindowAccess) {
        let settings = Self.settings(listen: "0.0.0.0:8787", token: token, ingress: ingress)
        #expect(WindowAccess.decide(peer: PeerAddress(text: peer), authorization: authorization, settings: settings) == expected)
    }

    @Test(arguments: [
        ("127.0.0.1:8787", "127.0.0.1:8787", true),
        ("0.0.0.0:0", "0.0.0.0:0", false),
        ("[::1]:80", "[::1]:80", true),
        ("[::]:80", "[::]:80", false),
        ("192.168.1.2:8080", "192.168.1.2:8080", false),
    ])
    func listenAddresses(text: String, shown: String, loopback: Bool) throws {
        guard case .success(let address) = ListenAddress.parse(text) else {
            Issue.record("\(text) did not parse")
            return
        }
        #expect(address.description == shown)
        #expect(address.isLoopbackOnly == loopback)
    }

    @Test func aCredentialIsNeverPrinted() {
        #expect("\(WindowCredential("hunter2"))" == "<redacted>")
    }
}
