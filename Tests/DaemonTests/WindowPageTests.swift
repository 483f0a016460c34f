import FlowCore
import Foundation
import Glibc
import Rendering
import TestSupport
import Testing

/// The status page in a real browser: headless Chromium opens the running daemon's `/`, and its
/// DOM holds what the widget shows and the source that went stale, marked stale; its screenshot
/// is a picture, not a blank page.
@Suite(.enabled(if: MosquittoBroker.isAvailable && Chromium.isAvailable, "mosquitto or chromium not installed (make test installs them)"), .ownThread)
struct WindowPageTests {
    static func config(broker: Int, window: Int, state: String) -> String {
        """
        timezone: UTC
        mqtt: {host: 127.0.0.1, port: \(broker), client_id: flowbridge-page}
        state_file: \(state)
        output: {stdout: true}
        http: {listen: 127.0.0.1:\(window), refresh: 60s}
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
        let port = HTTPProbe.freePort()
        let daemon = try RunTests.Daemon(config: Self.config(broker: broker.port, window: port, state: folder.url.appendingPathComponent("state.json").path), folder: folder)
        #expect(await daemon.waitFor("connected to"), "\(daemon.text)")
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

        let dom = try Chromium.dumpDOM("http://127.0.0.1:\(port)/")
        #expect(dom.contains(DisplayNumber.rate(3200, unit: "W")), "\(dom)")
        #expect(dom.contains(DisplayNumber.rate(1400, unit: "W")))
        // A name from the config stays text: escaped in the page, shown as written.
        #expect(dom.contains("Roof &lt;south&gt;"))
        #expect(!dom.contains("<south>"))
        #expect(dom.contains(#"<tr class="stale"><td>battery</td>"#), "\(dom)")
        #expect(dom.contains(#"<tr class="fresh"><td>solar</td>"#))
        #expect(dom.contains("<code>battery/&lt;power&gt;</code>"))

        let png = folder.url.appendingPathComponent("page.png").path
        try Chromium.screenshot("http://127.0.0.1:\(port)/", to: png)
        let check = try runProgram("/usr/bin/env", ["python3", Repository.root.appendingPathComponent("scripts/png-not-blank.py").path, png])
        #expect(check.status == 0, "\(check.out)\(check.err)")
        await daemon.stop()
    }
}

/// Headless Chromium (Debian's `chromium`): the DOM after load, and a screenshot.
enum Chromium {
    static let executable = MosquittoBroker.findExecutable("chromium")
    static var isAvailable: Bool { executable != nil }

    /// As root (CI) Chromium will not start its sandbox.
    static var arguments: [String] {
        ["--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--user-data-dir=\(NSTemporaryDirectory())flowbridge-chromium-\(getpid())"]
            + (getuid() == 0 ? ["--no-sandbox"] : [])
    }

    static func dumpDOM(_ url: String) throws -> String {
        let run = try runProgram(executable!, arguments + ["--dump-dom", url])
        return run.out
    }

    static func screenshot(_ url: String, to path: String) throws {
        _ = try runProgram(executable!, arguments + ["--window-size=1200,2400", "--screenshot=\(path)", url])
    }
}
