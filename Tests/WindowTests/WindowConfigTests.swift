import Configuration
import Foundation
import TestSupport
import ReplaySupport
import Testing
import Window

/// `http:`: the window's settings, and what is wrong with a broken one (key and line).
@Suite struct WindowConfigTests {
    static let base = "sources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n"

    @Test func noHTTPSectionMeansNoWindow() throws {
        #expect(try DaemonConfig.parse(Self.base, file: "c.yaml").window == nil)
    }

    @Test func settingsAreRead() throws {
        let config = try DaemonConfig.parse(
            "http: {listen: \"[::1]:9000\", refresh: 10s, idle_timeout: 5s, request_timeout: 7s, max_connections: 8, ingress: true}\n" + Self.base, file: "c.yaml")
        let window = try #require(config.window)
        #expect(window.listen.description == "[::1]:9000")
        #expect(window.listen.isLoopbackOnly)
        #expect(window.refreshSeconds == 10)
        #expect(window.limits.idleTimeoutSeconds == 5)
        #expect(window.limits.requestTimeoutSeconds == 7)
        #expect(window.limits.connections == 8)
        #expect(window.limits.perAddress == 8)
        #expect(window.ingress)
    }

    @Test func theTokenComesFromItsFile() throws {
        let folder = TemporaryFolder()
        let token = try folder.write("token", "abc\n")
        let context = ConfigContext(environment: [:])
        let config = try DaemonConfig.parse("http: {listen: 0.0.0.0:8787, token_file: \(token)}\n" + Self.base, file: "c.yaml", context: context)
        #expect(config.window?.credential?.matches(Array("abc".utf8)) == true)
        #expect(config.window?.credential.map { "\($0)" } == "<redacted>")
    }

    @Test(arguments: [
        ("http: {}\n", "line 1: http.listen: is required"),
        ("http: {listen: localhost:80}\n", "line 1: http.listen: 'localhost' is not a numeric IPv4 or IPv6 address"),
        ("http: {listen: 127.0.0.1}\n", "line 1: http.listen: '127.0.0.1' has no port"),
        ("http: {listen: 127.0.0.1:99999}\n", "line 1: http.listen: '99999' is not a port"),
        ("http: {listen: 0.0.0.0:8787}\n", "line 1: http.listen: listens beyond this machine without credentials"),
        ("http: {listen: 127.0.0.1:8787, refresh: 0s}\n", "line 1: http.refresh: must be between 1s and 1h"),
        ("http: {listen: 127.0.0.1:8787, request_timeout: 2h}\n", "line 1: http.request_timeout: must be between 1s and 1h"),
        ("http: {listen: 127.0.0.1:8787, max_connections: 5000}\n", "line 1: http.max_connections: must be a whole number from 1 to 1024"),
        ("http: {listen: 127.0.0.1:8787, port: 3}\n", "line 1: http.port: unknown key"),
        ("http: {listen: 127.0.0.1:8787, token_file: a, token_env: B}\n", "line 1: http.token_env: write token_file or token_env, not both"),
    ])
    func brokenHTTPSectionNamesKeyAndLine(text: String, expected: String) {
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text + Self.base, file: "c.yaml") }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error")")
    }
}
