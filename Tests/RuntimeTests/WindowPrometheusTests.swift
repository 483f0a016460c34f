import FlowCore
import Foundation
import Glibc
import TestSupport
import ReplaySupport
import Testing

/// A real Prometheus (Debian's `prometheus`) scrapes the daemon's `/metrics` every second while a
/// metered day goes on, across a restart of the daemon: its query API gives each account's energy
/// counter as the daemon's own accounts × 3.6e6, and the counters never reset.
@Suite(.enabled(if: MosquittoBroker.isAvailable && Prometheus.isAvailable, "mosquitto or prometheus not installed (make test installs them)"), .ownThread)
struct WindowPrometheusTests {
    /// A grid meter's lifetime counter (import, exact) and its power, the home's use from the balance.
    static func config(broker: Int, window: Int, state: String) -> String {
        """
        timezone: UTC
        mqtt: {host: 127.0.0.1, port: \(broker), client_id: flowbridge-window}
        state_file: \(state)
        output: {stdout: true}
        http: {listen: 127.0.0.1:\(window)}
        sources:
          grid:  {topic: grid/power, max_power: 1e9}
          meter: {topic: grid/energy, unit: kWh, max_power: 1e9}
        widgets:
          power:
            template: flow
            flow:
              output: {name: Home, rate: balance, total: integrate}
              exchange: {name: Grid, rate: grid, total: {counter: meter}}
            policy: {min_interval: 0s, settle: 0s}
        tariff:
          import: {price: 0.30}
        """
    }

    @Test func prometheusScrapesLifetimeCountersThatRiseAcrossARestart() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        // Picked, not given by the system: both daemons listen on it, Prometheus's one target.
        let windowPort = HTTPProbe.freePort()
        let config = Self.config(broker: broker.port, window: windowPort, state: folder.url.appendingPathComponent("state.json").path)
        let prometheus = try await Prometheus(target: "127.0.0.1:\(windowPort)", folder: folder)
        defer { prometheus.stop() }

        /// A daemon run through `steps` of the meter (0.5 kWh each), until its push shows `total`.
        func run(_ name: String, steps: ClosedRange<Int>, total: String) async throws -> RunTests.Daemon {
            let daemon = try RunTests.Daemon(config: config, folder: folder, name: name)
            #expect(await daemon.waitFor("window at http://127.0.0.1:\(windowPort)/"), "\(daemon.text)")
            #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
            for step in steps {
                try await broker.publish(topic: "grid/power", payload: "3600")
                try await broker.publish(topic: "grid/energy", payload: JSONValue.format(1000 + Double(step) * 0.5))
            }
            #expect(await daemon.waitFor(#""total":\#(total)"#), "\(daemon.text)")
            return daemon
        }

        let first = try await run("first", steps: 0...5, total: "2.5")
        let firstJoules = await prometheus.value(of: #"flowbridge_energy_joules_total{account="import"}"#, reaching: 2.5 * 3.6e6)
        #expect(firstJoules == 2.5 * 3.6e6, "\(prometheus.log)")
        await first.stop()

        let second = try await run("second", steps: 6...8, total: "4")
        let secondJoules = await prometheus.value(of: #"flowbridge_energy_joules_total{account="import"}"#, reaching: 4 * 3.6e6)
        #expect(secondJoules == 4 * 3.6e6, "\(prometheus.log)")

        // Every account as Prometheus has it now is the daemon's own, × 3.6e6 (the values are
        // still while no message comes; a scrape a moment old is waited for).
        let agree = await eventually {
            guard let state = HTTPProbe.request(port: windowPort, path: "/api/v1/state"),
                  let today = try? JSONValue(parsing: state.body)["widgets"]?["power"]?["today_kwh"]?.objectValue, !today.isEmpty
            else { return false }
            for (account, energy) in today {
                guard let kWh = energy.numberValue,
                      let scraped = await prometheus.query(#"flowbridge_energy_joules_total{account="\#(account)"}"#),
                      abs(scraped - kWh * 3.6e6) <= 1e-6 * max(1, kWh * 3.6e6)
                else { return false }
            }
            return true
        }
        #expect(agree, "\(prometheus.log)")
        // Monotonic across the restart: no counter reset anywhere in the scraped range.
        #expect(await prometheus.query("sum(resets(flowbridge_energy_joules_total[1h]))") == 0)
        #expect(await prometheus.query("sum(resets(flowbridge_import_cost_total[1h]))") == 0)
        #expect(await prometheus.query(#"flowbridge_import_cost_total{currency="EUR"}"#).map { abs($0 - 4 * 0.30) < 1e-9 } == true)
        await second.stop()
    }
}

/// Debian's Prometheus, listening on a loopback port the system gives it, with a scrape config
/// of one target, scraped every second.
final class Prometheus: @unchecked Sendable {
    static let executable = MosquittoBroker.findExecutable("prometheus")
    static var isAvailable: Bool { executable != nil }

    let port: Int
    let process: ChildProcess
    let logFile: String

    init(target: String, folder: TemporaryFolder) async throws {
        let config = try folder.write("prometheus.yml", """
            global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
            scrape_configs:
              - job_name: flowbridge
                static_configs: [{targets: ["\(target)"]}]
            """)
        logFile = folder.url.appendingPathComponent("prometheus.log").path
        process = try ChildProcess(
            Self.executable!,
            ["--config.file=\(config)", "--storage.tsdb.path=\(folder.url.appendingPathComponent("tsdb").path)",
             "--web.listen-address=127.0.0.1:0"],
            outputFile: logFile)
        // Its log says the address it listens on, the port given: `msg="Listening on" address=127.0.0.1:46693`.
        let logFile = logFile
        guard let port = await poll({ Self.listeningPort(in: (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "") }) else {
            process.send(SIGTERM)
            throw BrokerError("prometheus did not say where it listens: \((try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "")")
        }
        self.port = port
        let ready = await eventually { HTTPProbe.request(port: port, path: "/-/ready")?.status == 200 }
        if !ready { throw BrokerError("prometheus did not get ready: \(log)") }
    }

    /// The port of the log's `msg="Listening on" address=HOST:PORT` line, once it is written whole.
    static func listeningPort(in log: String) -> Int? {
        guard let line = log.split(separator: "\n", omittingEmptySubsequences: false).dropLast().first(where: { $0.contains(#"msg="Listening on""#) }),
              let address = line.split(separator: " ").first(where: { $0.hasPrefix("address=") })
        else { return nil }
        return address.lastIndex(of: ":").flatMap { Int(address[address.index(after: $0)...]) }
    }

    var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    func stop() {
        process.send(SIGTERM)
    }

    /// The value of an instant query that gives one sample; nil otherwise.
    func query(_ expression: String) async -> Double? {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = expression.addingPercentEncoding(withAllowedCharacters: allowed) ?? expression
        guard let answer = HTTPProbe.request(port: port, path: "/api/v1/query?query=\(encoded)"), answer.status == 200,
              let result = try? JSONValue(parsing: answer.body)["data"]?["result"]?.arrayValue, result.count == 1,
              let text = result[0]["value"]?.arrayValue?.last?.stringValue
        else { return nil }
        return Double(text)
    }

    /// Polls `expression` until it reaches `expected` (or time runs out): the last value seen.
    func value(of expression: String, reaching expected: Double) async -> Double? {
        var last: Double?
        _ = await eventually {
            last = await query(expression)
            return last.map { abs($0 - expected) <= 1e-6 * max(1, expected) } ?? false
        }
        return last.map { abs($0 - expected) <= 1e-6 * max(1, expected) ? expected : $0 }
    }
}

/// `promtool check metrics` (Debian's `prometheus` package, which `make test` installs) on a live
/// daemon's `/metrics`: a home with panels, a battery, a grid meter, money and two sinks, names
/// that need escaping in a label. It passes without a single lint problem.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct WindowPromtoolTests {
    static let promtool = MosquittoBroker.findExecutable("promtool")

    @Test func promtoolFindsNoProblemInTheMetrics() async throws {
        let promtool = try #require(Self.promtool, "promtool not found: make test installs Debian's prometheus package, which has it")
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = """
            timezone: UTC
            mqtt: {host: 127.0.0.1, port: \(broker.port), client_id: flowbridge-promtool}
            state_file: \(folder.url.appendingPathComponent("state.json").path)
            output: {stdout: true, mqtt: true}
            http: {listen: 127.0.0.1:0}
            sources:
              solar: {topic: solar/power}
              grid: {topic: grid/power}
              battery: {topic: battery/power}
              soc: {topic: battery/soc, unit: "%"}
            widgets:
              power:
                template: flow
                flow:
                  inputs: [{name: "Roof \\"south\\" \\\\ east", rate: solar, total: integrate}]
                  storage: {name: Battery, rate: battery, level: soc, total: charge}
                  exchange: {name: Grid, rate: grid, total: import}
                  output: {name: Home, rate: balance, total: integrate}
                policy: {min_interval: 0s, settle: 0s, rate_step: 1, rate_deadband: 0}
            tariff:
              currency: EUR
              import: {price: 0.30}
              export: {price: 0.08}
            """
        let daemon = try RunTests.Daemon(config: config, folder: folder)
        let port = try #require(await daemon.windowPort(), "\(daemon.text)")
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        for (topic, payload) in [("battery/soc", "55"), ("battery/power", "-400"), ("solar/power", "2500"), ("grid/power", "600")] {
            try await broker.publish(topic: topic, payload: payload)
        }
        #expect(await daemon.waitFor(#""rate":2500"#), "\(daemon.text)")
        // Once the money and the sinks' deliveries are in it, the metrics are whole.
        let metrics = await poll { () -> String? in
            guard let answer = HTTPProbe.request(port: port, path: "/metrics"), answer.status == 200,
                  answer.body.contains("flowbridge_import_cost_total"), answer.body.contains("flowbridge_sink_deliveries_total{")
            else { return nil }
            return answer.body
        }
        let text = try #require(metrics, "\(daemon.text)")
        #expect(text.contains(#"node="Roof \"south\" \\ east""#), "\(text)")
        let check = try runProgram(promtool, ["check", "metrics"], stdin: text)
        print("promtool check metrics: status \(check.status), \(text.split(separator: "\n").count) lines checked\(check.out)\(check.err)")
        #expect(check.status == 0, "\(check.out)\(check.err)\n\(text)")
        #expect((check.out + check.err).trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(check.out)\(check.err)")
        await daemon.stop()
    }
}
