import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import TestSupport
import ReplaySupport
import Testing

@Suite struct ReplayTests {
    /// A device's recorded message into one slot of a widget, through `flowbridge replay`.
    struct DeviceCase: Sendable, CustomTestStringConvertible {
        var topic: String
        var json: String?
        var slot: String
        var invert = false
        var testDescription: String { "\(topic) → \(slot)\(invert ? " (inverted)" : "")" }
    }

    static let devices: [DeviceCase] = [
        DeviceCase(topic: "solar/ac/power", slot: "inputs"),  // OpenDTU, 0 W at dusk
        DeviceCase(topic: "solar/114190641177/0/power", slot: "inputs"),  // OpenDTU per inverter
        DeviceCase(topic: "inverter/HM600/ch0/P_AC", slot: "inputs"),  // AhoyDTU
        DeviceCase(topic: "homeassistant/sensor/solar_power/state", slot: "inputs"),  // HA statestream
        DeviceCase(topic: "shellypro3em-abc/status/em:0", json: "total_act_power", slot: "exchange"),  // + import
        DeviceCase(topic: "tele/meter/SENSOR", json: "SML.Power_curr", slot: "exchange"),  // − export
        DeviceCase(topic: "evcc/site/grid/power", slot: "exchange"),
        DeviceCase(topic: "N/c0619ab1d2e3/system/0/Dc/Battery/Power", json: "value", slot: "storage"),  // + charging
        DeviceCase(topic: "evcc/site/battery/power", slot: "storage", invert: true),  // evcc: + discharging
        DeviceCase(topic: "tele/plug/SENSOR", json: "ENERGY.Power", slot: "output"),  // Tasmota plug
        DeviceCase(topic: "zigbee2mqtt/plug_zigbee23", json: "power", slot: "output"),  // Zigbee2MQTT
    ]

    /// The rate the widget shows equals the device's documented watts, with the widget's sign.
    @Test(arguments: devices)
    func deviceFixtureReplaysToTheDocumentedRate(device: DeviceCase) throws {
        let fixture = try #require(try Repository.deviceCases().first { $0["topic"]?.stringValue == device.topic && $0["watts"] != nil })
        let watts = try #require(fixture["watts"]?.numberValue)
        let payload = try #require(fixture["payload"]?.stringValue)
        let json = device.json.map { ", json: \"\($0)\"" } ?? ""
        let slot = device.slot == "inputs" ? "inputs: [{rate: meter}]" : "\(device.slot): {rate: meter}"
        let config = """
            timezone: UTC
            sources:
              meter: {topic: "\(device.topic)"\(json), invert: \(device.invert)}
            widgets:
              w: {template: flow, flow: {\(slot)}, policy: {min_interval: 0s, rate_step: 0.1, rate_deadband: 0}}
            """
        let trace = [traceLine("2026-06-01T12:00:00Z", device.topic, payload)]
        let (lines, _) = try replay(config: config, trace: trace)
        let content = try #require(lines.last?["content"])
        var node = try #require(content["flow"]?[device.slot])
        if case .array(let items) = node { node = items[0] }
        let expected = PatchPolicy.quantize(device.invert ? -watts : watts, step: 0.1)
        let shown = device.slot == "inputs" || device.slot == "output" ? max(0, expected) : expected
        #expect(node["rate"]?.numberValue == shown)
    }

    /// A home assembled from several devices' real payloads: Victron battery and SoC, Shelly grid,
    /// OpenDTU solar; the output is derived, the bad messages change nothing.
    @Test func aHomeOfRealDevices() throws {
        let config = """
            timezone: Europe/Berlin
            sources:
              solar: {topic: "solar/114190641177/0/power"}
              grid: {topic: "shellypro3em-abc/status/em:0", json: total_act_power}
              battery: {topic: "N/c0619ab1d2e3/system/0/Dc/Battery/Power", json: value}
              soc: {topic: "N/c0619ab1d2e3/system/0/Dc/Battery/Soc", json: value, unit: "%"}
              l1: {topic: "N/c0619ab1d2e3/system/0/Ac/Grid/L1/Power", json: value}
              ha: {topic: "homeassistant/sensor/solar_power/state"}
            widgets:
              power:
                template: flow
                flow:
                  inputs: [{name: Roof, rate: solar}, {name: HA, rate: ha}]
                  storage: {name: Battery, rate: battery, level: soc}
                  exchange: {name: Grid, rate: grid}
                  output: {name: Home, rate: balance}
                policy: {min_interval: 10s, rate_step: 1, rate_deadband: 0}
            """
        var trace: [String] = []
        var second = 0
        for topic in [
            "solar/114190641177/0/power", "shellypro3em-abc/status/em:0", "N/c0619ab1d2e3/system/0/Dc/Battery/Power",
            "N/c0619ab1d2e3/system/0/Dc/Battery/Soc", "homeassistant/sensor/solar_power/state",
        ] {
            trace.append(traceLine("2026-06-01T12:00:0\(second)Z", topic, try Repository.payload(topic) { $0 != "unavailable" }))
            second += 1
        }
        trace.append(traceLine("2026-06-01T12:00:06Z", "N/c0619ab1d2e3/system/0/Ac/Grid/L1/Power", try Repository.payload("N/c0619ab1d2e3/system/0/Ac/Grid/L1/Power")))
        trace.append(traceLine("2026-06-01T12:00:07Z", "homeassistant/sensor/solar_power/state", "unavailable"))
        let (lines, _) = try replay(config: config, trace: trace)
        let flow = try #require(lines.last?["content"]?["flow"])
        #expect(flow["inputs"] == [["name": "Roof", "rate": 612], ["name": "HA", "rate": 1532]])
        #expect(flow["exchange"]?["rate"] == 3040)
        #expect(flow["storage"]?["rate"] == 473)
        #expect(flow["storage"]?["level"] == 77)  // 76.5 %
        #expect(flow["output"]?["rate"] == 4711)  // 612.4 + 1532 + 3039.524 − 472.85
        // Pushes are NDJSON lines with the local time and the patch under "content"; the first
        // once the readings of its first two seconds have settled.
        #expect(lines.first?["t"] == "2026-06-01T14:00:02+02:00")
        #expect(lines.first?["widget"] == "power")
        #expect(lines.first?["patch"]?["content"]?["template"] == "flow")
    }

    /// `flowbridge replay --state`: a day in two halves equals the day whole, and a restart on the
    /// next morning starts at 0.
    @Test func aRestartMidDayContinuesTheDay() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let trace = BerlinDay.trace()
        let whole = try folder.write("whole.ndjson", trace.joined(separator: "\n") + "\n")
        let first = try folder.write("first.ndjson", trace[..<1400].joined(separator: "\n") + "\n")
        let second = try folder.write("second.ndjson", trace[1400...].joined(separator: "\n") + "\n")
        let state = folder.url.appendingPathComponent("state.json").path

        let straight = try runFlowbridge(["replay", "--config", config, "--final", whole])
        #expect(straight.status == 0, "\(straight.err)")
        let firstHalf = try runFlowbridge(["replay", "--config", config, "--state", state, first])
        #expect(firstHalf.status == 0, "\(firstHalf.err)")
        #expect(FileManager.default.fileExists(atPath: state))
        let secondHalf = try runFlowbridge(["replay", "--config", config, "--state", state, "--final", second])
        #expect(secondHalf.status == 0, "\(secondHalf.err)")

        func totals(_ output: String) throws -> [Double] {
            let final = try finalDocument(output)
            let flow = try #require(final["content"]?["flow"])
            return [flow["inputs"]?.arrayValue?[0]["total"], flow["exchange"]?["total"], flow["output"]?["total"]].map { $0?.numberValue ?? -1 }
        }
        let wholeTotals = try totals(straight.out)
        let splitTotals = try totals(secondHalf.out)
        #expect(wholeTotals[0] > 10)
        for (a, b) in zip(wholeTotals, splitTotals) { #expect(abs(a - b) <= 0.01, "\(wholeTotals) vs \(splitTotals)") }

        // The next morning: the same state, a later day: every total starts at 0.
        let morning = try folder.write("morning.ndjson", [
            traceLine("2026-06-02T07:00:00+02:00", "pv/power", "800"), traceLine("2026-06-02T07:00:00+02:00", "grid/power", "-100"),
        ].joined(separator: "\n"))
        let nextDay = try runFlowbridge(["replay", "--config", config, "--state", state, "--final", morning])
        #expect(try totals(nextDay.out) == [0, 0, 0])
    }

    /// A torn state (its marker says it is one) is set aside and the day starts fresh.
    @Test func aCorruptStateIsKeptAsideAndTheDayStartsFresh() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let state = try folder.write("state.json", #"{"format":"flowbridge-state","version": 1, "day": trunc"#)
        let trace = try folder.write("t.ndjson", BerlinDay.trace()[..<10].joined(separator: "\n"))
        let run = try runFlowbridge(["replay", "--config", config, "--state", state, "--final", trace])
        #expect(run.status == 0)
        #expect(run.err.contains("warning: state \(state) cannot be used (not a JSON object (a torn write?)); kept as"), "\(run.err)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.hasPrefix("state.json.corrupt-") }
        #expect(kept.count == 1)
        // And a fresh, valid state was written.
        _ = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: state))))
    }

    @Test func malformedTraceLinesAreReportedWithTheirNumberAndSkipped() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let trace = [
            traceLine("2026-06-01T12:00:00Z", "grid/power", "100"), "not json", #"{"t": "yesterday", "topic": "x", "payload": "1"}"#,
            #"{"t": "2026-06-01T12:00:01Z", "topic": "grid/power"}"#, traceLine("2026-06-01T12:00:02Z", "grid/power", "200"),
        ].joined(separator: "\n")
        let run = try runFlowbridge(["replay", "--config", config, "--final", "-"], stdin: trace)
        #expect(run.status == 0)
        #expect(run.err.contains("stdin line 2: not JSON"))
        #expect(run.err.contains("stdin line 3: \"t\" is not an RFC 3339 time"))
        #expect(run.err.contains("stdin line 4: no \"payload\""))
        // The same trace always gives the same bytes.
        let again = try runFlowbridge(["replay", "--config", config, "--final", "-"], stdin: trace)
        #expect(again.out == run.out)
        #expect(run.out.contains(#""rate":200"#))
    }
}

@Suite struct StateRobustnessTests {
    /// States that are JSON but damaged: no crash, the bad entry left out, the rest of the day kept.
    @Test(arguments: [
        (#"{"version":1,"day":"2026-06-01","day_start":1e300,"readings":{},"totals":{}}"#, "its day is damaged"),
        (#"{"version":1,"day":"2026-06-01","day_start":1780264800,"readings":{"grid":{"value":5,"t":-1e300}},"totals":{"home/inputs[0]":{"kind":"integrate","kwh":2.5}}}"#, "the reading of 'grid' is damaged"),
        (#"{"version":1,"day":"2026-06-01","day_start":1780264800,"readings":{},"totals":{"home/exchange":{"kind":"import","kwh":1e308},"home/inputs[0]":{"kind":"integrate","kwh":2.5}}}"#, "the total of home/exchange, 1e+308 kWh, is damaged: more than its sources' max_power allow in a day"),
        (#"{"format":"flowbridge-state","version":7,"readings":{},"totals":{}}"#, "unknown version 7"),
        // A state whose totals or readings are gone is set aside, never silently zeroed.
        (#"{"format":"flowbridge-state","version":1,"day":"2026-06-01","day_start":1780264800,"readings":{}}"#, "its totals are missing"),
        (#"{"format":"flowbridge-state","version":1,"day":"2026-06-01","day_start":1780264800,"readings":[],"totals":{"home/inputs[0]":{"kind":"integrate","kwh":2.5}}}"#, "its readings are not an object"),
        (#"{"version":1,"day":"2026-06-01","day_start":1780264800,"readings":{"grid":{"value":2500,"t":4102444800}},"totals":{"home/inputs[0]":{"kind":"integrate","kwh":2.5}}}"#, "the reading of 'grid' is damaged"),
        (#"{"version":1,"day":"2026-06-01","day_start":1780264800,"readings":{},"totals":{"home/exchange":{"kind":"import","kwh":123456789},"home/inputs[0]":{"kind":"integrate","kwh":2.5}}}"#, "the total of home/exchange, 123456789 kWh, is damaged: more than its sources' max_power allow in a day"),
        // The date closed last can only be before the day in progress.
        (#"{"version":1,"day":"2026-06-01","day_start":1780264800,"closed_through":"2026-06-01","readings":{},"totals":{"home/inputs[0]":{"kind":"integrate","kwh":2.5}}}"#, "the date closed last is damaged"),
        (#"{"version":1,"day":"2026-06-01","day_start":1780264800,"closed_through":"May 31","readings":{},"totals":{"home/inputs[0]":{"kind":"integrate","kwh":2.5}}}"#, "the date closed last is damaged"),
    ])
    func damagedStateIsSurvived(state: String, warning: String) throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let statePath = try folder.write("state.json", state)
        let trace = try folder.write("t.ndjson", [
            traceLine("2026-06-01T12:00:00+02:00", "pv/power", "1000"), traceLine("2026-06-01T12:00:00+02:00", "grid/power", "100"),
        ].joined(separator: "\n"))
        let run = try runFlowbridge(["replay", "--config", config, "--state", statePath, "--final", trace])
        #expect(run.status == 0, "\(run.err)")
        #expect(run.err.contains(warning), "\(run.err)")
        let final = try finalDocument(run.out)
        let solarTotal = try #require(final["content"]?["flow"]?["inputs"]?.arrayValue?.first?["total"]?.numberValue)
        // Where the day itself was readable, its good totals were kept.
        let setAside = !warning.contains("is damaged")
        #expect(solarTotal == (warning.contains("day is damaged") || setAside ? 0 : 2.5))
        let kept = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.hasPrefix("state.json.corrupt-") }
        #expect(kept.count == (warning.contains("day is damaged") || setAside ? 1 : 0))
    }

    /// Stopped before the first message: the state has no day yet, and that is no damage.
    @Test func aStateWithoutADayIsFine() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let statePath = folder.url.appendingPathComponent("state.json").path
        let empty = try folder.write("empty.ndjson", "")
        #expect(try runFlowbridge(["replay", "--config", config, "--state", statePath, empty]).status == 0)
        let trace = try folder.write("t.ndjson", traceLine("2026-06-01T12:00:00Z", "grid/power", "100"))
        let run = try runFlowbridge(["replay", "--config", config, "--state", statePath, trace])
        #expect(!run.err.contains("warning"), "\(run.err)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains("corrupt") }
        #expect(kept.isEmpty)
    }

    /// After a restore, nothing is pushed with a time before the first message.
    @Test func noPushIsStampedBeforeTheFirstMessageAfterARestore() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config.replacingOccurrences(of: "pv: {topic: pv/power}", with: "pv: {topic: pv/power, stale_after: 90s}"))
        let statePath = folder.url.appendingPathComponent("state.json").path
        let morning = try folder.write("m.ndjson", [
            traceLine("2026-06-01T10:00:00Z", "pv/power", "1000"), traceLine("2026-06-01T10:00:00Z", "grid/power", "100"),
        ].joined(separator: "\n"))
        #expect(try runFlowbridge(["replay", "--config", config, "--state", statePath, morning]).status == 0)
        let afternoon = try folder.write("a.ndjson", traceLine("2026-06-01T15:00:00Z", "grid/power", "200"))
        let run = try runFlowbridge(["replay", "--config", config, "--state", statePath, afternoon])
        let times = try run.out.split(separator: "\n").map { try JSONValue(parsing: String($0))["t"]?.stringValue ?? "" }
        #expect(!times.isEmpty)
        #expect(times.allSatisfy { $0 >= "2026-06-01T17:00:00+02:00" }, "\(times)")
    }
}
