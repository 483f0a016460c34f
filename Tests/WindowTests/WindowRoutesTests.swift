import FlowCore
import Foundation
import Platform
import TestSupport
import ReplaySupport
import Testing
import Window

/// The window's answers to requests, without a socket: routes, methods, headers, escaping.
@Suite struct WindowRoutesTests {
    static let zone = FixedOffsetZone(offsetSeconds: 3600)

    static func snapshot(sourceName: String = "grid", topic: String = "meter/power") -> WindowSnapshot {
        var widget = WindowSnapshot.Widget(name: "power", document: nil)
        widget.todayKWh = [.imported: 1.5, .exported: 0]
        widget.lifetimeKWh = [.imported: 11.5, .exported: 2]
        let source = WindowSnapshot.Source(
            name: sourceName, topic: topic, unit: "W", value: 1400, readingAt: Date(timeIntervalSince1970: 1_000), freshness: .stale, stats: nil)
        return WindowSnapshot(
            at: Date(timeIntervalSince1970: 1_030), zone: zone, version: "1.2.3", widgets: [widget], prices: [], sources: [source], sinks: [],
            broker: .init(address: "127.0.0.1:1883", connectedSince: nil, reconnects: 2, waitingCause: "connection refused"))
    }

    static func window(_ snapshot: WindowSnapshot = snapshot(), ingress: Bool = false) -> Window {
        guard case .success(let address) = ListenAddress.parse("127.0.0.1:0") else { fatalError() }
        var settings = WindowSettings(listen: address)
        settings.ingress = ingress
        return Window(settings: settings, log: Logger(threshold: .error)) { snapshot }
    }

    static let loopback = PeerAddress(text: "127.0.0.1")

    @Test(arguments: [
        ("GET", "/", 200), ("HEAD", "/", 200), ("GET", "/metrics", 200), ("GET", "/api/v1/state", 200), ("GET", "/style.css", 200),
        ("GET", "/api/v1/history", 404), ("GET", "/../etc/passwd", 404), ("GET", "/index.html", 404), ("POST", "/", 405),
        ("DELETE", "/metrics", 405), ("PUT", "/api/v1/state", 405),
    ])
    func routes(method: String, path: String, status: Int) {
        let response = Self.window().respond(HTTPRequest(method: method, path: path, peer: Self.loopback))
        #expect(response.status == status)
        #expect(response.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
        #expect(response.header("X-Content-Type-Options") == "nosniff")
        if status == 405 { #expect(response.header("Allow") == "GET, HEAD") }
    }

    @Test(arguments: [(false, "frame-ancestors 'none'", "DENY"), (true, "frame-ancestors 'self'", "SAMEORIGIN")])
    func framingOnlyUnderIngress(ingress: Bool, policy: String, frameOptions: String) {
        let response = Self.window(ingress: ingress).respond(HTTPRequest(method: "GET", path: "/", peer: Self.loopback))
        #expect(response.header("Content-Security-Policy")?.contains(policy) == true)
        #expect(response.header("X-Frame-Options") == frameOptions)
    }

    /// What came from the config or the broker stays text in the page, and a label value in /metrics.
    @Test func hostileNamesAreEscaped() {
        let window = Self.window(Self.snapshot(sourceName: "a\"b\\c\nd", topic: "<script>alert(1)</script>"))
        let page = String(decoding: window.respond(HTTPRequest(method: "GET", path: "/", peer: Self.loopback)).body, as: UTF8.self)
        #expect(!page.contains("<script>"))
        #expect(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        let metrics = String(decoding: window.respond(HTTPRequest(method: "GET", path: "/metrics", peer: Self.loopback)).body, as: UTF8.self)
        #expect(metrics.contains(#"flowbridge_source_stale{source="a\"b\\c\nd"} 1"#), "\(metrics)")
    }

    @Test func thePageIsRelativeAndRefreshesItself() {
        let page = String(decoding: Self.window().respond(HTTPRequest(method: "GET", path: "/", peer: Self.loopback)).body, as: UTF8.self)
        #expect(page.contains(#"<meta http-equiv="refresh" content="30">"#))
        #expect(page.contains(#"href="style.css""#))
        #expect(page.contains(#"href="metrics""#))
        #expect(!page.contains(#"href="/"#))
        #expect(!page.contains("src="))
        #expect(page.contains(#"<tr class="stale"><td>grid</td>"#))
        #expect(page.contains("not connected: connection refused"))
    }

    @Test func energyIsALifetimeCounterInJoules() {
        let metrics = String(decoding: Self.window().respond(HTTPRequest(method: "GET", path: "/metrics", peer: Self.loopback)).body, as: UTF8.self)
        #expect(metrics.contains("# TYPE flowbridge_energy_joules_total counter"))
        #expect(metrics.contains(#"flowbridge_energy_joules_total{account="import",widget="power"} 41400000"#), "\(metrics)")
        #expect(metrics.contains(#"flowbridge_energy_joules_total{account="export",widget="power"} 7200000"#))
        #expect(metrics.contains(#"flowbridge_source_reading_age_seconds{source="grid"} 30"#))
        #expect(metrics.contains("flowbridge_broker_reconnects_total 2"))
        #expect(metrics.contains("flowbridge_broker_connected 0"))
    }

    /// Each node of the config is one series of `flowbridge_power_watts`, labelled by its name
    /// where no other node has it, else by its place; an input whose place the document cannot
    /// tell (an earlier one left out, no name to find it by) is left out, never put under its
    /// neighbour's label.
    @Test(arguments: [
        // Two inputs of one name, an unnamed one: all drawn, each under its own place.
        ([("PV", 100.0), ("PV", 200), (nil, 300)], [0, 1, 2], [#"node="inputs[0]",slot="inputs""#: 100.0, #"node="inputs[1]",slot="inputs""#: 200, #"node="inputs[2]",slot="inputs""#: 300]),
        // The first input left out: the named one found by its name, the unnamed one unknown.
        ([(nil, 100.0), ("Carport", 200), (nil, 300)], [1, 2], [#"node="Carport",slot="inputs""#: 200]),
    ] as [([(String?, Double)], [Int], [String: Double])])
    func eachConfiguredNodeIsOneSeries(inputs: [(String?, Double)], drawn: [Int], expected: [String: Double]) {
        var snapshot = Self.snapshot()
        let shown = drawn.map { FlowNode(name: inputs[$0].0, rate: inputs[$0].1) }
        let flow = FlowContent(inputs: shown, output: FlowNode(name: "Home", rate: 600))
        snapshot.widgets[0].document = ShownDocument(content: .flow(flow), held: HeldMark())
        snapshot.widgets[0].nodes = inputs.indices.map { (.input($0), inputs[$0].0) } + [(.output, "Home")]
        let metrics = String(decoding: Self.window(snapshot).respond(HTTPRequest(method: "GET", path: "/metrics", peer: Self.loopback)).body, as: UTF8.self)
        let samples = metrics.split(separator: "\n").filter { $0.hasPrefix("flowbridge_power_watts{") }
        var want = expected.map { "flowbridge_power_watts{\($0.key),widget=\"power\"} \(JSONValue.format($0.value))" }
        want.append(#"flowbridge_power_watts{node="Home",slot="output",widget="power"} 600"#)
        #expect(Set(samples.map(String.init)) == Set(want), "\(metrics)")
        #expect(samples.count == want.count)
    }

    @Test func historyWithABook() throws {
        struct Book: PeriodSource {
            func periods(through now: Date, zone: any LocalTimeZone) -> PeriodRows? {
                PeriodRows(days: [.init(period: "2026-12-05", accountsKWh: [.consumption: 9.5], netCost: 2.25)], months: [], currencyCode: "EUR")
            }
        }
        guard case .success(let address) = ListenAddress.parse("127.0.0.1:0") else { return }
        let window = Window(settings: WindowSettings(listen: address), periods: Book(), log: Logger(threshold: .error)) { Self.snapshot() }
        let csv = window.respond(HTTPRequest(method: "GET", path: "/api/v1/history", format: "csv", peer: Self.loopback))
        #expect(csv.status == 200)
        #expect(String(decoding: csv.body, as: UTF8.self).contains("2026-12-05,,9.5,,,,,2.25"))
        let json = try JSONValue(parsing: window.respond(HTTPRequest(method: "GET", path: "/api/v1/history", peer: Self.loopback)).body)
        #expect(json["days"]?.arrayValue?.first?["net_cost"] == 2.25)
        let page = String(decoding: window.respond(HTTPRequest(method: "GET", path: "/", peer: Self.loopback)).body, as: UTF8.self)
        #expect(page.contains("The last 30 days"))
        #expect(page.contains("<td>2026-12-05</td>"))
    }

    /// A sink's deliveries, counted by result: the same counts in the state, in `/metrics` (a
    /// sample per result seen, in the order of the words) and on the page; the last result with
    /// what the other side said, and the failures since the last that went through.
    @Test func aSinksDeliveriesAreCountedByResult() throws {
        var health = DeliveryHealth()
        let at = Date(timeIntervalSince1970: 1_020)
        for (result, detail) in [(DeliveryHealth.Result.delivered, nil), (.delivered, nil), (.failed, "timeout"), (.rejected, "422: <rate>")] {
            health.record(result, detail: detail, at: at)
        }
        var snapshot = Self.snapshot()
        snapshot.sinks = [WindowSnapshot.Sink(name: "widget power", destination: "https://api.example/w/1", health: health)]
        let window = Self.window(snapshot)

        let state = try JSONValue(parsing: window.respond(HTTPRequest(method: "GET", path: "/api/v1/state", peer: Self.loopback)).body)
        let sink = try #require(state["sinks"]?.arrayValue?.first)
        #expect(sink["results"] == .object(["delivered": 2, "failed": 1, "rejected": 1]))
        #expect(sink["last_result"] == "rejected")
        #expect(sink["last_detail"] == "422: <rate>")
        #expect(sink["failures_in_a_row"] == 2)

        let metrics = String(decoding: window.respond(HTTPRequest(method: "GET", path: "/metrics", peer: Self.loopback)).body, as: UTF8.self)
        let samples = metrics.split(separator: "\n").filter { $0.hasPrefix("flowbridge_sink_deliveries_total{") }
        #expect(samples == [
            #"flowbridge_sink_deliveries_total{result="delivered",sink="widget power"} 2"#,
            #"flowbridge_sink_deliveries_total{result="failed",sink="widget power"} 1"#,
            #"flowbridge_sink_deliveries_total{result="rejected",sink="widget power"} 1"#,
        ], "\(metrics)")

        let page = String(decoding: window.respond(HTTPRequest(method: "GET", path: "/", peer: Self.loopback)).body, as: UTF8.self)
        #expect(page.contains("<td>rejected: 422: &lt;rate&gt;</td>"), "\(page)")
        #expect(page.contains("<td>delivered 2, failed 1, rejected 1</td>"), "\(page)")
    }
}

/// The window's prices say what comes next: when, and at what price (a schedule's next slot).
@Suite struct WindowPricesTests {
    @Test func thePricesSayTheNextPriceAndWhen() throws {
        var snapshot = WindowRoutesTests.snapshot()
        snapshot.prices = [
            WindowSnapshot.Price(
                account: .imported, pricePerKWh: 0.312, nextChange: Date(timeIntervalSince1970: 3600), nextPricePerKWh: 0.28, currencyCode: "EUR"),
            WindowSnapshot.Price(account: .exported, pricePerKWh: 0.08, nextChange: nil, currencyCode: "EUR"),
        ]
        let window = WindowRoutesTests.window(snapshot)
        let state = try JSONValue(parsing: window.respond(HTTPRequest(method: "GET", path: "/api/v1/state", peer: WindowRoutesTests.loopback)).body)
        let prices = try #require(state["prices"]?.arrayValue)
        #expect(prices.first?["next_price_per_kwh"] == 0.28 && prices.first?["next_change"] != .null, "\(prices)")
        #expect(prices.last?["next_price_per_kwh"] == .null, "\(prices)")
        let page = String(decoding: window.respond(HTTPRequest(method: "GET", path: "/", peer: WindowRoutesTests.loopback)).body, as: UTF8.self)
        #expect(page.contains("1970-01-01 02:00:00, then 0.2800 EUR/kWh"), "\(page)")
    }
}
