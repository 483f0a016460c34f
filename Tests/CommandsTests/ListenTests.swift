import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import Glibc
import TestSupport
import Testing

/// `flowbridge check --listen` against a real mosquitto: what came from each source, and the signs.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct ListenTests {
    /// The OpenDTU + Shelly Pro 3EM + evcc example on the test's broker.
    static func config(port: Int, batteryInverted: Bool = true) throws -> String {
        var text = try String(contentsOf: Repository.root.appendingPathComponent("Config/examples/opendtu-shelly-evcc.yaml"), encoding: .utf8)
        text = text.replacingOccurrences(of: "port: 1883", with: "port: \(port)")
        if !batteryInverted {
            text = text.replacingOccurrences(of: "{topic: evcc/site/battery/power, invert: true}", with: "{topic: evcc/site/battery/power}")
        }
        return text
    }

    /// Starts `check --listen` and waits until it has subscribed. The tests listen for `window` seconds, and
    /// publish their readings inside that window (`publishInOrder`).
    static func listen(_ config: String, seconds: Int, broker: MosquittoBroker, folder: TemporaryFolder) async throws -> (ChildProcess, String) {
        let path = try folder.write("config.yaml", config)
        let output = folder.url.appendingPathComponent("listen.out").path
        let process = try ChildProcess(
            Repository.binary, ["check", "--config", path, "--listen", "\(seconds)s", "--state", folder.url.appendingPathComponent("state.json").path],
            outputFile: output)
        #expect(await broker.waitForLog("Sending SUBACK to flowbridge-"), "\(broker.log)")
        return (process, output)
    }

    /// A night: no sun, 300 W from the grid, evcc's battery discharging 1200 W (+1200 in evcc's
    /// sign) and its level falling.
    static func night(_ broker: MosquittoBroker, emdata: Bool = true) async throws {
        let emdataPayload = try Repository.payload("shellypro3em-abc/status/emdata:0")
        var messages: [(String, String)] = []
        for round in 0..<4 {
            messages.append(("solar/ac/power", "0.0"))
            messages.append(("solar/ac/yieldtotal", "13.338"))
            messages.append(("shellypro3em-abc/status/em:0", #"{"id":0,"total_act_power":300.2}"#))
            if emdata { messages.append(("shellypro3em-abc/status/emdata:0", emdataPayload)) }
            messages.append(("evcc/site/battery/power", "1200"))
            messages.append(("evcc/site/battery/soc", String(60 - round / 2)))
        }
        try await publishInOrder(broker, messages)
    }

    /// How long each test listens: every message a test publishes (two dozen `mosquitto_pub`
    /// runs, a pause) must come within it, also on a machine busy with the rest of the suite.
    static let window = 30

    static func finish(_ process: ChildProcess, _ output: String) async -> String {
        #expect(await process.waitForExit(timeout: .seconds(window + 20)))
        return (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    }

    /// A stranger's payloads on the sources' topics (NUL, ESC and BEL raw, and as a JSON
    /// string's escapes): the report and the log show them escaped, and write no control
    /// character but their lines' ends.
    @Test func controlCharactersHeardAreShownEscaped() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let (process, output) = try await Self.listen(try Self.config(port: broker.port), seconds: Self.window, broker: broker, folder: folder)
        try await publishInOrder(broker, [
            ("solar/ac/power", "\u{1B}]0;owned\u{07}\u{1B}[2J"),
            ("shellypro3em-abc/status/em:0", #"{"total_act_power": "\u0000<0>x\u001b[2J"}"#),
        ])
        let text = await Self.finish(process, output)
        #expect(!text.utf8.contains { ($0 < 0x20 && $0 != 0x0A) || $0 == 0x7F }, "\(Array(text.utf8))")
        #expect(text.contains(#"\u001B]0;owned\u0007\u001B[2J"#), "\(text)")
    }

    /// The battery's `invert` left out: evcc's + (discharging) reads as filling while the level
    /// falls, and the home's balance stays below 0. Both name the source to flip; status 2.
    @Test func aBatteryWithoutItsInvertIsFoundAndNamed() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let (process, output) = try await Self.listen(try Self.config(port: broker.port, batteryInverted: false), seconds: Self.window, broker: broker, folder: folder)
        try await Self.night(broker)
        let text = await Self.finish(process, output)
        #expect(process.exitCode == 2, "\(text)")
        #expect(text.contains("every source reported"), "\(text)")
        #expect(text.contains("Battery (storage), level: WRONG, the level fell 60 → 59 %"), "\(text)")
        #expect(text.contains("Home (output), derived output: WRONG"), "\(text)")
        #expect(text.contains("a sign looks wrong: flip `invert` on source 'battery'; found by widget power storage (level), widget power output (derived output)"), "\(text)")
        // Nothing else is blamed, and each source shows its value after unit and sign.
        #expect(!text.contains("source 'grid'"), "\(text)")
        #expect(text.contains("battery        evcc/site/battery/power           4         0         +1200 W"), "\(text)")
        #expect(text.contains("grid_import    shellypro3em-abc/status/emdata:0  4         0         20.269 kWh"), "\(text)")
        // The state was not touched: a listen writes nothing.
        #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("state.json").path))
    }

    /// The example as shipped: the battery drains as its level falls, the balance works out; one
    /// topic never carries anything: status 1, naming it.
    @Test func aSourceThatNeverReportsFailsTheListen() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let (process, output) = try await Self.listen(try Self.config(port: broker.port), seconds: Self.window, broker: broker, folder: folder)
        try await Self.night(broker, emdata: false)
        let text = await Self.finish(process, output)
        #expect(process.exitCode == 1, "\(text)")
        #expect(text.contains("1 source never reported a value:\n  grid_import: no message on shellypro3em-abc/status/emdata:0"), "\(text)")
        #expect(text.contains("Battery (storage), level: ok, the level fell 60 → 59 % while the rate read -1200 W on average (draining)"), "\(text)")
        #expect(text.contains("battery        evcc/site/battery/power           4         0         -1200 W"), "\(text)")
        #expect(text.contains("no sign looks wrong among the sources that reported"), "\(text)")
    }

    /// The sun shines but the solar topic has a typo: the battery fills with nothing to fill it
    /// from, which looks like a flipped battery. The report says the verdict lacks the silent
    /// source, so the battery's `invert` is not flipped for a topic's typo; status 1.
    @Test func aWrongSignJudgedWithoutASilentSourceSaysSo() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = try Self.config(port: broker.port).replacingOccurrences(of: "{topic: solar/ac/power,", with: "{topic: Solar/ac/power,")
        let (process, output) = try await Self.listen(config, seconds: Self.window, broker: broker, folder: folder)
        var messages: [(String, String)] = []
        for round in 0..<4 {
            messages.append(("solar/ac/power", "1500.0"))
            messages.append(("solar/ac/yieldtotal", "13.338"))
            messages.append(("shellypro3em-abc/status/em:0", #"{"id":0,"total_act_power":-2.0}"#))
            messages.append(("shellypro3em-abc/status/emdata:0", try Repository.payload("shellypro3em-abc/status/emdata:0")))
            messages.append(("evcc/site/battery/power", "-1200"))
            messages.append(("evcc/site/battery/soc", String(60 + round / 2)))
        }
        try await publishInOrder(broker, messages)
        let text = await Self.finish(process, output)
        #expect(process.exitCode == 1, "\(text)")
        #expect(text.contains("  solar: no message on Solar/ac/power"), "\(text)")
        #expect(text.contains(
            "a sign looks wrong: flip `invert` on source 'battery'; found by widget power output (derived output); judged without solar, which never reported: make every source report and listen again before flipping anything"),
            "\(text)")
    }

    /// A topic that also carries messages without the source's field (status of another kind) is
    /// counted apart from unusable payloads and said, not taken for a broken meter.
    @Test func messagesWithoutTheFieldAreCountedApart() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let (process, output) = try await Self.listen(try Self.config(port: broker.port), seconds: Self.window, broker: broker, folder: folder)
        try await publishInOrder(broker, Array(repeating: ("shellypro3em-abc/status/em:0", #"{"id":0,"errors":["phase_sequence"]}"#), count: 3))
        try await Self.night(broker)
        let text = await Self.finish(process, output)
        #expect(text.contains("grid: 3 messages without the field total_act_power; the topic carries other messages too"), "\(text)")
        #expect(text.contains("grid           shellypro3em-abc/status/em:0      7         0"), "\(text)")
    }

    /// A tariff whose import price source never sends: 7.2 kW from the grid for two seconds (4 Wh)
    /// and the home's use flow without a price, counted apart and said once; the fixed export
    /// price is known. The import is integrated here: the example's import counter (a fixed
    /// payload) never rises, and the derived home's day is what the other accounts counted.
    @Test func energyWithoutAPriceIsCountedApartAndSaid() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        var config = try Self.config(port: broker.port).replacingOccurrences(of: "total: {counter: grid_import}", with: "total: import")
        config = config.replacingOccurrences(of: "sources:\n", with: "sources:\n  price: {topic: market/price, unit: ct/kWh, stale_after: 20m}\n")
        config += "\ntariff:\n  import: {price: price}\n  export: {price: 0.08}\n"
        let (process, output) = try await Self.listen(config, seconds: Self.window, broker: broker, folder: folder)
        try await Self.night(broker)
        let grid = ("shellypro3em-abc/status/em:0", #"{"id":0,"total_act_power":7200}"#)
        try await publishInOrder(broker, [grid])
        try await Task.sleep(for: .seconds(2))  // the energy is what flows while time passes
        try await publishInOrder(broker, [grid])
        let text = await Self.finish(process, output)
        #expect(text.contains("  price now: import unknown (no price yet), export €0.080/kWh"), "\(text)")
        #expect(text.contains("  unpriced while listening: consumption "), "\(text)")
        #expect(text.contains("kWh: energy that flowed without a price, counted apart"), "\(text)")
        #expect(text.contains("  priced while listening: import €0.00, export €0.00"), "\(text)")
        let said = text.components(separatedBy: "tariff: import energy flows without a price: its price source 'price' (topic market/price) has sent no price yet")
        #expect(said.count == 2, "\(text)")
    }

    /// No broker at all: the listen says so and fails.
    @Test func aBrokerThatNeverAnswersFailsTheListen() async throws {
        let folder = TemporaryFolder()
        let closed = try MosquittoBroker.ClosedPort()
        let path = try folder.write("config.yaml", try Self.config(port: closed.port))
        let output = folder.url.appendingPathComponent("listen.out").path
        let process = try ChildProcess(Repository.binary, ["check", "--config", path, "--listen", "2s"], outputFile: output)
        let text = await Self.finish(process, output)
        withExtendedLifetime(closed) {}  // closed until the listen is over
        #expect(process.exitCode == 1, "\(text)")
        #expect(text.contains("never connected to the broker: "), "\(text)")
        #expect(text.contains("6 sources never reported a value"), "\(text)")
    }

    /// The listen's first line counts the widgets as `check` does: a progress bar is one too.
    @Test func theListenCountsEveryWidgetAsCheckDoes() async throws {
        let folder = TemporaryFolder()
        let config = try Self.config(port: try MosquittoBroker.freeLoopbackPort())
            + "  battery:\n    template: progress\n    progress: {of: battery}\n"
        let path = try folder.write("config.yaml", config)
        let state = folder.url.appendingPathComponent("state.json").path
        let check = try runFlowbridge(["check", "--config", path, "--state", state])
        #expect(check.out.hasPrefix("config OK: 6 sources, 2 widgets; "), "\(check.out)\(check.err)")
        let output = folder.url.appendingPathComponent("listen.out").path
        let process = try ChildProcess(Repository.binary, ["check", "--config", path, "--listen", "1s", "--state", state], outputFile: output)
        let text = await Self.finish(process, output)
        #expect(text.contains("config OK: 6 sources, 2 widgets; listening 1 s to 127.0.0.1:"), "\(text)")
    }

    /// An LG ESS through pyess whose battery flags never come: the battery's magnitudes arrive
    /// but have no sign. The report says the direction never came and names the flags; the
    /// battery is not counted as a topic that carried nothing; status 1.
    @Test func aDirectionThatNeverCameIsNamed() async throws {
        let broker = try await MosquittoBroker()
        let folder = TemporaryFolder()
        let config = try String(contentsOf: Repository.root.appendingPathComponent("Config/examples/lg-ess-pyess.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "port: 1883", with: "port: \(broker.port)")
        let (process, output) = try await Self.listen(config, seconds: Self.window, broker: broker, folder: folder)
        let poll = try Repository.lgESSMessages().filter { !$0.topic.contains("is_battery_") }
        try await publishInOrder(broker, (0..<3).flatMap { _ in poll.map { ($0.topic, $0.payload) } })
        let text = await Self.finish(process, output)
        #expect(process.exitCode == 1, "\(text)")
        #expect(text.contains("  battery: its direction never came ('battery_charging', 'battery_discharging' sent no value): its 3 readings had no sign, so the nodes it feeds were not shown and counted nothing"), "\(text)")
        #expect(text.contains("battery              ess/home/statistics/batconv_power           3         0         no direction yet"), "\(text)")
        #expect(text.contains("3 sources never reported a value:"), "\(text)")
        #expect(text.contains("  battery: its readings came, its direction did not (above)"), "\(text)")
        #expect(text.contains("  battery_charging: no message on ess/home/direction/is_battery_charging_"), "\(text)")
        // The grid's flags came: it is signed, exporting.
        #expect(text.contains("grid                 ess/home/statistics/grid_power              3         0         -9 W"), "\(text)")
    }

    @Test(arguments: ["0s", "soon", "25h"])
    func aListenDurationOutOfRangeIsAUsageError(_ duration: String) throws {
        let run = try runFlowbridge(["check", "--config", "/nonexistent.yaml", "--listen", duration])
        #expect(run.status == 64)
        #expect(run.err.contains("--listen needs a duration from 1s to 24h"), "\(run.err)")
    }
}
