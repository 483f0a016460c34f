import FlowCore
import Foundation
import Glibc
import Rendering
import TestSupport
import ReplaySupport
import Testing

/// The status page in a real browser: headless Chromium opens the running daemon's `/`, and its
/// DOM holds what the widget shows and the source that went stale, marked stale; its screenshot
/// is a picture, not a blank page.
@Suite(.enabled(if: MosquittoBroker.isAvailable && Chromium.isAvailable, "mosquitto or chromium not installed (make test installs them)"), .ownThread)
struct WindowPageTests {
    static func config(broker: Int, window: Int, state: String, ingress: Bool = false) -> String {
        """
        timezone: UTC
        mqtt: {host: 127.0.0.1, port: \(broker), client_id: flowbridge-page}
        state_file: \(state)
        output: {stdout: true}
        http: {listen: 127.0.0.1:\(window), refresh: 60s, ingress: \(ingress)}
        sources:
          solar: {topic: solar/power}
          grid: {topic: grid/power}
          battery: {topic: "battery/<power>", stale_after: 1s}
        widgets:
          power:
            template: flow
            flow:
              inputs: [{name: "Roof <south>", rate: solar, total: integrate}]
              storage: {name: Battery, rate: battery, when_stale: hold}
              exchange: {name: Grid, rate: grid}
              output: {name: Home, rate: balance}
            policy: {min_interval: 0s, settle: 0s, rate_step: 1, rate_deadband: 0}
        """
    }

    @Test func chromiumShowsTheWidgetsValuesAndTheStaleSource() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let daemon = try RunTests.Daemon(config: Self.config(broker: broker.port, window: 0, state: folder.url.appendingPathComponent("state.json").path), folder: folder)
        let port = try #require(await daemon.windowPort(), "\(daemon.text)")
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        try await broker.publish(topic: "battery/<power>", payload: "-500")
        try await broker.publish(topic: "solar/power", payload: "3200")
        try await broker.publish(topic: "grid/power", payload: "-1400")
        #expect(await daemon.waitFor(#""rate":3200"#), "\(daemon.text)")
        // The battery says nothing more: past its stale_after of 1 s it is stale.
        let stale = await eventually {
            guard let body = HTTPProbe.request(port: port, path: "/api/v1/state")?.body,
                  let sources = try? JSONValue(parsing: body)["sources"]?.arrayValue
            else { return false }
            return sources.contains { $0["name"] == "battery" && $0["state"] == "stale" }
        }
        #expect(stale)

        let dom = try Chromium.dumpDOM("http://127.0.0.1:\(port)/", in: folder)
        #expect(dom.contains(DisplayNumber.rate(3200, unit: "W")), "\(dom)")
        #expect(dom.contains(DisplayNumber.rate(1400, unit: "W")))
        // A name from the config stays text: escaped in the page, shown as written.
        #expect(dom.contains("Roof &lt;south&gt;"))
        #expect(!dom.contains("<south>"))
        #expect(dom.contains(#"<tr class="stale"><td>battery</td>"#), "\(dom)")
        #expect(dom.contains(#"<tr class="fresh"><td>solar</td>"#))
        #expect(dom.contains("<code>battery/&lt;power&gt;</code>"))

        let png = folder.url.appendingPathComponent("page.png").path
        try Chromium.screenshot("http://127.0.0.1:\(port)/", to: png, in: folder)
        let check = try runProgram("/usr/bin/env", ["python3", Repository.root.appendingPathComponent("scripts/png-not-blank.py").path, png])
        #expect(check.status == 0, "\(check.out)\(check.err)")
        await daemon.stop()
    }
}

extension WindowPageTests {
    /// Home Assistant's ingress as the add-on meets it: a proxy that serves the page under a path
    /// prefix and strips it on the way in. Chromium opens the page there; its style sheet comes
    /// through the prefix too (the links are relative), and the DOM holds the widget's values.
    @Test func underAnIngressPathPrefixThePageAndItsStyleComeThroughTheProxy() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let daemon = try RunTests.Daemon(
            config: Self.config(broker: broker.port, window: 0, state: folder.url.appendingPathComponent("state.json").path, ingress: true),
            folder: folder)
        let port = try #require(await daemon.windowPort(), "\(daemon.text)")
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        try await broker.publish(topic: "solar/power", payload: "2700")
        try await broker.publish(topic: "grid/power", payload: "300")
        #expect(await daemon.waitFor(#""rate":2700"#), "\(daemon.text)")

        let prefix = "/api/hassio_ingress/Zm9vYmFy"
        let requests = folder.url.appendingPathComponent("proxy-requests.txt").path
        let script = try folder.write("ingress-proxy.py", Self.ingressProxy)
        let proxyLog = folder.url.appendingPathComponent("proxy.log").path
        let proxy = try ChildProcess(
            "/usr/bin/env", ["python3", script, prefix, "http://127.0.0.1:\(port)", requests], outputFile: proxyLog)
        defer { proxy.send(SIGTERM) }
        // The port the system gave the proxy, which it prints (a line) once it listens.
        let proxyPort = try #require(await poll {
            (try? String(contentsOfFile: proxyLog, encoding: .utf8)).flatMap { $0.hasSuffix("\n") ? Int($0.dropLast()) : nil }
        }, "\((try? String(contentsOfFile: proxyLog, encoding: .utf8)) ?? "")")
        #expect(await eventually { HTTPProbe.request(port: proxyPort, path: prefix + "/")?.status == 200 })
        #expect(HTTPProbe.request(port: proxyPort, path: prefix + "/")?.headers["x-frame-options"] == "SAMEORIGIN")

        let dom = try Chromium.dumpDOM("http://127.0.0.1:\(proxyPort)\(prefix)/", in: folder)
        #expect(dom.contains(DisplayNumber.rate(2700, unit: "W")), "\(dom)")
        #expect(dom.contains(#"<tr class="fresh"><td>solar</td>"#))
        let seen = (try? String(contentsOfFile: requests, encoding: .utf8)) ?? ""
        #expect(seen.contains(prefix + "/style.css"), "\(seen)")
        let png = folder.url.appendingPathComponent("ingress.png").path
        try Chromium.screenshot("http://127.0.0.1:\(proxyPort)\(prefix)/", to: png, in: folder)
        let check = try runProgram("/usr/bin/env", ["python3", Repository.root.appendingPathComponent("scripts/png-not-blank.py").path, png])
        #expect(check.status == 0, "\(check.out)\(check.err)")
        await daemon.stop()
    }

    /// The proxy: GET PREFIX/path → UPSTREAM/path, each path it was asked for written to a file.
    static let ingressProxy = """
        import http.server, sys, urllib.error, urllib.request
        prefix, upstream, seen = sys.argv[1], sys.argv[2], sys.argv[3]
        class Ingress(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with open(seen, "a") as f:
                    f.write(self.path + "\\n")
                if not self.path.startswith(prefix + "/"):
                    self.send_error(404)
                    return
                request = urllib.request.Request(upstream + self.path[len(prefix):], headers={"X-Ingress-Path": prefix})
                try:
                    answer = urllib.request.urlopen(request)
                    status, headers, body = answer.status, answer.getheaders(), answer.read()
                except urllib.error.HTTPError as error:
                    status, headers, body = error.code, error.headers.items(), error.read()
                self.send_response(status)
                for name, value in headers:
                    if name.lower() in ("content-type", "content-security-policy", "x-frame-options"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *arguments):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ingress)
        print(server.server_address[1], flush=True)
        server.serve_forever()

        """
}

/// Headless Chromium (Debian's `chromium`): the DOM after load, and a screenshot.
enum Chromium {
    static let executable = MosquittoBroker.findExecutable("chromium")
    static var isAvailable: Bool { executable != nil }

    /// A profile of its own for each run: two Chromiums on one profile make one, which hands the
    /// page to the other and exits. As root (CI) Chromium will not start its sandbox.
    /// The profile lives in the test's `folder`, and goes with it.
    static func arguments(in folder: TemporaryFolder) -> [String] {
        ["--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--user-data-dir=\(folder.url.appendingPathComponent("chromium-\(UUID().uuidString)").path)"]
            + (getuid() == 0 ? ["--no-sandbox"] : [])
    }

    static func dumpDOM(_ url: String, in folder: TemporaryFolder) throws -> String {
        try runProgram(executable!, arguments(in: folder) + ["--dump-dom", url]).out
    }

    static func screenshot(_ url: String, to path: String, in folder: TemporaryFolder) throws {
        _ = try runProgram(executable!, arguments(in: folder) + ["--window-size=1200,2400", "--screenshot=\(path)", url])
    }
}

extension WindowPageTests {
    /// A payload a source cannot read: its last decode error is on the page and in
    /// `/api/v1/state`, with its age, escaped as text (its control characters as `\u0007`, its
    /// markup as text), and a later one replaces it.
    @Test func aSourcesLastDecodeErrorIsShownEscaped() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = """
            timezone: UTC
            mqtt: {host: 127.0.0.1, port: \(broker.port), client_id: flowbridge-page-errors}
            state_file: \(folder.url.appendingPathComponent("state.json").path)
            output: {stdout: true}
            http: {listen: 127.0.0.1:0}
            sources:
              grid: {topic: grid/power}
              meter: {topic: "meter/<x>", json: power}
            widgets:
              power:
                template: flow
                flow:
                  output: {name: Home, rate: meter}
                  exchange: {name: Grid, rate: grid}
                policy: {min_interval: 0s, settle: 0s}
            """
        let daemon = try RunTests.Daemon(config: config, folder: folder)
        let port = try #require(await daemon.windowPort(), "\(daemon.text)")
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        /// The meter's last error as `/api/v1/state` has it, once its text holds `part`.
        func lastError(holding part: String) async -> JSONValue? {
            await poll {
                guard let body = HTTPProbe.request(port: port, path: "/api/v1/state")?.body,
                      let meter = try? JSONValue(parsing: body)["sources"]?.arrayValue?.first(where: { $0["name"] == "meter" }),
                      let error = meter["last_error"], error["text"]?.stringValue?.contains(part) == true
                else { return nil }
                return error
            }
        }

        try await broker.publish(topic: "meter/<x>", payload: #"{"power": "12,5"}"#)
        let first = await lastError(holding: "decimal comma")
        #expect(first?["text"]?.stringValue == "'12,5' has a decimal comma; set `decimal_comma: true` on the source (topic meter/<x>)", "\(daemon.text)")

        try await broker.publish(topic: "meter/<x>", payload: #"{"power": "<img src=x onerror=alert(1)>\u0007\u001b[31m"}"#)
        let hostile = #""<img src=x onerror=alert(1)>\u0007\u001B[31m" is text, not a number (topic meter/<x>)"#
        let second = await lastError(holding: "onerror")
        #expect(second?["text"]?.stringValue == hostile, "\(String(describing: second))")
        #expect(second?["at"]?.stringValue != nil)
        #expect(second?["age_seconds"]?.numberValue.map { $0 >= 0 } == true)
        // The grid, which read nothing wrong, has none.
        let state = HTTPProbe.request(port: port, path: "/api/v1/state").flatMap { try? JSONValue(parsing: $0.body) }
        #expect(state?["sources"]?.arrayValue?.first { $0["name"] == "grid" }?["last_error"] == .null)

        let dom = try Chromium.dumpDOM("http://127.0.0.1:\(port)/", in: folder)
        #expect(dom.contains(#"<td class="error">"&lt;img src=x onerror=alert(1)&gt;\u0007\u001B[31m" is text, not a number (topic meter/&lt;x&gt;) ("#), "\(dom)")
        #expect(!dom.contains("<img"))
        #expect(!dom.contains("\u{07}") && !dom.contains("\u{1B}"))
        #expect(dom.contains("decode errors"))
        await daemon.stop()
    }
}
