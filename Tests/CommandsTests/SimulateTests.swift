import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import Glibc
import Simulator
import TestSupport
import Testing

/// `flowbridge simulate`: its trace replayed through `Config/demo.yaml`, and live against a real broker.
@Suite(.ownThread) struct SimulateTests {
    static let demoConfig = Repository.root.appendingPathComponent("Config/demo.yaml").path
    static let date = CivilDate(year: 2026, month: 6, day: 21)
    /// The binaries' system zone, set through `TZ` (the test process's own can change while other
    /// tests look zones up): a zone with summer time, whose solar noon is at 13:00 in June.
    static let zoneName = "Europe/Berlin"

    /// The in-process simulation of the same day, in the zone the binaries run in.
    static func cycles(seed: UInt64, speed: Double) -> [SimulationCycle] {
        var simulation = Simulation(seed: seed, date: date, speed: speed, zone: SystemTimeZone(identifier: zoneName)!)
        var cycles: [SimulationCycle] = []
        while true {
            let cycle = simulation.next()
            guard cycle.at < simulation.firstDay.end else { return cycles }
            cycles.append(cycle)
        }
    }

    /// Runs the binary with standard output and error in files: a run that logs a lot (a replay
    /// with a wrong sign) cannot fill a pipe and stall the test instead of failing it. `TZ` is set:
    /// the simulated day and the replayed day are days of `zoneName`.
    static func run(_ arguments: [String], in folder: TemporaryFolder) async throws -> (status: Int32?, out: String, err: String) {
        let name = UUID().uuidString
        let out = folder.url.appendingPathComponent("\(name).out").path
        let err = folder.url.appendingPathComponent("\(name).err").path
        let process = try ChildProcess(Repository.binary, arguments, outputFile: out, errorFile: err, environment: ["TZ": zoneName])
        if !(await process.waitForExit(timeout: .seconds(60))) { process.send(SIGKILL) }
        func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        return (process.exitCode, read(out), read(err))
    }

    /// Every push of a simulated day through the demo config shows a Home that is the balance of
    /// what it shows: Solar + Grid − Battery, or 0 where that is negative. And the day ends with
    /// the widget's accounts, the grid's export from the meter's `total_act_ret`.
    @Test func everyPushShowsAHomeThatAddsUp() async throws {
        let folder = TemporaryFolder()
        let generated = try await Self.run(["simulate", "--trace", "-", "--date", "\(Self.date)", "--seed", "3", "--speed", "60"], in: folder)
        #expect(generated.status == 0, "\(generated.err)")
        let replayed = try await Self.run(["replay", "--config", Self.demoConfig, "--final", try folder.write("day.ndjson", generated.out)], in: folder)
        #expect(replayed.status == 0, "\(replayed.err)")
        var shown: JSONValue = .object([:])
        var pushes = 0
        var accounts: JSONValue?
        for line in replayed.out.split(separator: "\n") {
            let json = try JSONValue(parsing: String(line))
            if let found = json["accounts"] { accounts = found }
            guard let patch = json["patch"]?["content"] else { continue }
            shown = MergePatch.apply(patch, to: shown)
            let flow = shown["flow"]
            guard let home = flow?["output"]?["rate"]?.numberValue else { continue }
            let solar = (flow?["inputs"]?.arrayValue ?? []).compactMap { $0["rate"]?.numberValue }.reduce(0, +)
            let grid = flow?["exchange"]?["rate"]?.numberValue ?? 0
            let battery = flow?["storage"]?["rate"]?.numberValue ?? 0
            #expect(home == max(0, solar + grid - battery), "\(json["t"]?.stringValue ?? ""): Home \(home), Solar \(solar) + Grid \(grid) − Battery \(battery)")
            pushes += 1
        }
        #expect(pushes > 1000)
        let day = try #require(accounts)
        for account in ["production", "consumption", "import", "export", "charge", "discharge"] {
            #expect((day[account]?.numberValue ?? -1) > 0, "\(account): \(day)")
        }
    }

    /// A whole simulated day, a cycle a minute, replayed through the demo config: the widget shows
    /// the home's signs (battery + charging by day, − draining at night; grid − exporting at noon),
    /// the load as Home, the day's yield as Solar's total and the meter's import as Grid's.
    @Test func aSimulatedDayReplaysIntoTheDemoWidget() async throws {
        let folder = TemporaryFolder()
        let generated = try await Self.run(["simulate", "--trace", "-", "--date", "\(Self.date)", "--seed", "3", "--speed", "60"], in: folder)
        #expect(generated.status == 0, "\(generated.err)")
        let cycles = Self.cycles(seed: 3, speed: 60)
        #expect(cycles.count == 1440)
        // The binary writes the model's messages, every one, at the simulated instants.
        let expected = cycles.flatMap { $0.timedMessages.map { TraceMessage(at: $0.at, topic: $0.message.topic, payload: $0.message.payload).line } }
        #expect(generated.out.split(separator: "\n").map(String.init) == expected)

        let replayed = try await Self.run(["replay", "--config", Self.demoConfig, "--final", try folder.write("day.ndjson", generated.out)], in: folder)
        #expect(replayed.status == 0, "\(replayed.err)")
        var timeline: [(at: Date, content: JSONValue)] = []
        var shownAtEnd: JSONValue?
        for line in replayed.out.split(separator: "\n") {
            let json = try JSONValue(parsing: String(line))
            if let patch = json["patch"]?["content"], let at = json["t"]?.stringValue.flatMap(RFC3339.parse) {
                timeline.append((at, MergePatch.apply(patch, to: timeline.last?.content ?? .object([:]))))
            } else if let content = json["content"] {
                shownAtEnd = content
            }
        }
        // What the widget shows half a minute after a cycle: the burst has settled and gone out.
        func shown(after cycle: SimulationCycle) -> JSONValue? {
            let instant = cycle.at.addingTimeInterval(30)
            return timeline.last { $0.at <= instant }?.content["flow"]
        }
        func rate(_ slot: String, _ flow: JSONValue?) -> Double? { flow?[slot]?["rate"]?.numberValue }

        var charging = 0, draining = 0, exporting = 0
        var wrong: [String] = []
        for cycle in cycles {
            let state = cycle.state
            let flow = shown(after: cycle)
            if abs(state.batteryW) > 100, let shown = rate("storage", flow), (shown > 0) != (state.batteryW > 0) {
                wrong.append("\(cycle.at): battery \(state.batteryW) W shown as \(shown)")
            }
            if abs(state.gridW) > 100, let shown = rate("exchange", flow), (shown > 0) != (state.gridW > 0) {
                wrong.append("\(cycle.at): grid \(state.gridW) W shown as \(shown)")
            }
            // Home is the balance of the three rates shown, each within its deadband (20 W) and half
            // a step (5 W) of its reading: at most 3 × 25 W from the load.
            if let home = rate("output", flow), abs(home - state.loadW) > 75 {
                wrong.append("\(cycle.at): Home shows \(home) W for a load of \(state.loadW) W")
            }
            if state.batteryW > 100, state.solarW > 0 { charging += 1 }
            if state.batteryW < -100, state.solarW == 0 { draining += 1 }
            if state.gridW < -100 { exporting += 1 }
        }
        #expect(wrong.count == 0, "\(wrong.prefix(5))")
        #expect(charging > 60 && draining > 300 && exporting > 60, "\(charging) charging, \(draining) draining, \(exporting) exporting")
        // At solar noon (the middle of the inverters' day) the full battery leaves the surplus to the grid.
        let awake = cycles.filter(\.state.inverterAwake)
        let noon = try #require(awake.first.flatMap { first in awake.last.map { first.at.addingTimeInterval($0.at.timeIntervalSince(first.at) / 2) } })
        let noonCycle = try #require(cycles.first { $0.at >= noon })
        #expect(noonCycle.state.gridW < -500)
        #expect((rate("exchange", shown(after: noonCycle)) ?? 0) < 0)

        // The day's totals and the last state, as the widget shows them at the end.
        let end = try #require(cycles.last?.state)
        let flow = try #require(shownAtEnd?["flow"])
        let solarTotal = try #require(flow["inputs"]?.arrayValue?.first?["total"]?.numberValue)
        #expect(end.yieldTodayWh > 20_000, "a summer day")
        #expect(abs(solarTotal - end.yieldTodayWh / 1000) <= 0.1, "Solar \(solarTotal) kWh, the day's yield \(end.yieldTodayWh) Wh")
        let importedWh = end.phases.map(\.importedWh).reduce(0, +) - cycles[0].state.phases.map(\.importedWh).reduce(0, +)
        let gridTotal = try #require(flow["exchange"]?["total"]?.numberValue)
        #expect(abs(gridTotal - importedWh / 1000) <= 0.1, "Grid \(gridTotal) kWh, the meter's import \(importedWh) Wh")
        let level = try #require(flow["storage"]?["level"]?.numberValue)
        #expect(abs(level - end.socPercent) <= 1)
    }

    /// Live against a real broker: every topic, in its device's format, readable by the demo
    /// config's sources, retained where the device retains; SIGTERM ends it with a DISCONNECT.
    @Test(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason))
    func publishesEveryTopicInItsDeviceFormatAndStopsCleanly() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let output = folder.url.appendingPathComponent("out.log").path
        let process = try ChildProcess(
            Repository.binary, ["simulate", "--broker", "127.0.0.1:\(broker.port)", "--speed", "720", "--date", "\(Self.date)", "--seed", "5"],
            outputFile: output, errorFile: folder.url.appendingPathComponent("err.log").path)
        // One line on standard output once it is connected and publishing: what a script waits for.
        func printed() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        _ = await eventually { printed().contains("\n") || !process.isRunning }
        let ready = printed()
        #expect(ready.hasPrefix("simulating \(Self.date) from ") && ready.contains("publishing to 127.0.0.1:\(broker.port)"), "\(ready)")
        #expect(ready.split(separator: "\n").count == 1)

        // Two whole cycles of 7 messages, and some.
        let received = await (try broker.subscriber(topic: "#", count: 16, timeout: 8)).messages()
        var byTopic: [String: [MosquittoBroker.ReceivedMessage]] = [:]
        for message in received { byTopic[message.topic, default: []].append(message) }
        let profile = HomeProfile.demo
        let topics = HomeDevice.allCases.flatMap { $0.topics(profile: profile) }
        #expect(Set(byTopic.keys) == Set(topics), "\(byTopic.keys.sorted())")

        func texts(_ topic: String) -> [String] { byTopic[topic, default: []].map(\.text) }
        for text in texts("solar/ac/power") { #expect(text.wholeMatch(of: /\d+\.\d/) != nil, "\(text)") }
        for text in texts("solar/ac/yieldday") { #expect(text.wholeMatch(of: /\d+/) != nil, "\(text)") }
        for text in texts("solar/ac/yieldtotal") { #expect(text.wholeMatch(of: /\d+\.\d{3}/) != nil, "\(text)") }
        for text in texts("evcc/site/battery/power") + texts("evcc/site/battery/soc") {
            #expect(text.wholeMatch(of: /-?\d+(\.\d{0,2}[1-9])?/) != nil, "\(text)")
        }
        func keys(_ json: String) -> [String] { json.matches(of: /"([a-z_]+)":/).map { String($0.1) } }
        let emKeys = keys(try Repository.payload("shellypro3em-abc/status/em:0"))
        let emdataKeys = keys(try Repository.payload("shellypro3em-abc/status/emdata:0"))
        for text in texts("\(profile.shellyDeviceID)/status/em:0") { #expect(keys(text) == emKeys) }
        for text in texts("\(profile.shellyDeviceID)/status/emdata:0") { #expect(keys(text) == emdataKeys) }

        // Retained where the device retains: a subscriber that comes later gets OpenDTU's and
        // evcc's last values from the broker's store at once, and never the Shelly's status.
        let stored = try await broker.receive(topic: "#", count: 5, timeout: 3)
        #expect(Set(stored.map(\.topic)) == Set(HomeDevice.openDTU.topics(profile: profile) + HomeDevice.evcc.topics(profile: profile)))
        #expect(stored.allSatisfy { $0.retained })

        // Every source of the demo config reads a number from what it receives.
        let config = try DaemonConfig.load(path: Self.demoConfig)
        for source in config.flow.sources {
            let messages = received.filter { source.topic.matches($0.topic) }
            #expect(!messages.isEmpty, "nothing for source \(source.name)")
            for message in messages {
                guard case .value(let number) = source.decoder.decode(message.payload) else {
                    Issue.record("source \(source.name) cannot read \(message.text)")
                    continue
                }
                if source.unit == .percent { #expect((0...100).contains(number)) }
            }
        }

        process.send(SIGTERM)
        #expect(await process.waitForExit(timeout: .seconds(3)))
        #expect(process.exitCode == 0)
        #expect(await broker.waitForLog("Received DISCONNECT from flowbridge-simulate-\(process.pid)"), "\(broker.log)")
    }

    /// A broker that is not there: it keeps trying, and a signal still ends it at once and cleanly.
    @Test func stopsCleanlyWhileTheBrokerIsAway() async throws {
        let folder = TemporaryFolder()
        let output = folder.url.appendingPathComponent("out.log").path
        let process = try ChildProcess(Repository.binary, ["simulate", "--broker", "127.0.0.1:1", "--speed", "720"], outputFile: output)
        func said() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        // It has tried, been refused, and goes on trying.
        #expect(await eventually { said().contains("; retrying") || !process.isRunning }, "\(said())")
        #expect(process.isRunning)
        process.send(SIGINT)
        #expect(await process.waitForExit(timeout: .seconds(3)))
        #expect(process.exitCode == 0)
        let text = said()
        #expect(!text.contains("simulating"), "never connected, so never said it publishes: \(text)")
    }

    @Test(arguments: [
        ([], "simulate needs --broker HOST:PORT, or --trace FILE"),
        (["--broker", "127.0.0.1:1883", "--trace", "-"], "not both"),
        (["--broker", "127.0.0.1:99999"], "--broker must be HOST:PORT"),
        (["--trace", "-", "--speed", "0"], "--speed must be"),
        (["--trace", "-", "--speed", "fast"], "--speed must be"),
        (["--trace", "-", "--speed", "7200"], "at most 3600"),
        (["--trace", "-", "--date", "2026-02-30"], "--date must be a date YYYY-MM-DD"),
        (["--trace", "-", "--seed", "-1"], "--seed must be a whole number"),
        (["--trace", "-", "extra"], "simulate takes no other arguments"),
    ])
    func wrongCommandLinesAreUsageErrors(arguments: [String], message: String) throws {
        let run = try runFlowbridge(["simulate"] + arguments)
        #expect(run.status == 64)
        #expect(run.err.contains(message), "\(run.err)")
        #expect(run.out.isEmpty)
    }

    /// The same seed and date: the same trace, byte for byte; another seed, another day.
    @Test func theTraceIsDeterministic() async throws {
        let folder = TemporaryFolder()
        let arguments = ["simulate", "--trace", "-", "--date", "2026-03-29", "--speed", "900", "--seed"]
        let first = try await Self.run(arguments + ["8"], in: folder)
        let again = try await Self.run(arguments + ["8"], in: folder)
        let other = try await Self.run(arguments + ["9"], in: folder)
        #expect(first.status == 0 && !first.out.isEmpty)
        #expect(first.out == again.out)
        #expect(first.out != other.out)
    }
}
