import FlowCore
import Foundation
@testable import Simulator
import Testing

/// The devices publish exactly what the real ones do: the topics, the fields in the firmware's
/// order, the numbers with the firmware's decimals, the retain flags.
@Suite struct DeviceFormatTests {
    /// Payloads real devices published (`Tests/Fixtures/devices.json`).
    static func fixturePayload(_ topic: String) throws -> String {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/devices.json")
        let cases = try JSONValue(parsing: Array(try Data(contentsOf: file)))["cases"]?.arrayValue ?? []
        let found = cases.first { $0["topic"]?.stringValue == topic }?["payload"]?.stringValue
        return try #require(found, "no fixture for \(topic)")
    }

    /// The keys of a JSON object, in the order they are written.
    static func keys(_ json: String) -> [String] {
        json.matches(of: /"([a-z_]+)":/).map { String($0.1) }
    }

    /// Every cycle of a summer day, ten simulated minutes apart.
    static let day: [SimulationCycle] = {
        var simulation = Simulation(seed: 11, date: CivilDate(year: 2026, month: 6, day: 21), speed: 600, zone: FixedOffsetZone(offsetSeconds: 3600))
        return (0..<144).map { _ in simulation.next() }
    }()

    static func messages(_ device: HomeDevice) -> [(state: HomeState, messages: [DeviceMessage])] {
        day.map { cycle in (cycle.state, cycle.bursts.first { $0.device == device }!.messages) }
    }

    @Test func shellyStatusHasTheFirmwaresFieldsInItsOrder() throws {
        let em = try Self.fixturePayload("shellypro3em-abc/status/em:0")
        let emdata = try Self.fixturePayload("shellypro3em-abc/status/emdata:0")
        for (state, messages) in Self.messages(.shellyPro3EM) {
            #expect(messages.map(\.topic) == ["shellypro3em-08f9e0e5a1c4/status/em:0", "shellypro3em-08f9e0e5a1c4/status/emdata:0"])
            #expect(Self.keys(messages[0].text) == Self.keys(em))
            #expect(Self.keys(messages[1].text) == Self.keys(emdata))
            let status = try JSONValue(parsing: messages[0].payload)
            let power = try #require(status["total_act_power"]?.numberValue)
            #expect(abs(power - state.gridW) <= 0.0005 + 1e-9, "the meter's total is the grid: \(power) vs \(state.gridW)")
            let phases = ["a", "b", "c"].compactMap { status["\($0)_act_power"]?.numberValue }
            #expect(abs(phases.reduce(0, +) - power) < 0.2)
            #expect(status["n_current"] == .null)
            let counters = try JSONValue(parsing: messages[1].payload)
            let imported = try #require(counters["total_act"]?.numberValue)
            #expect(abs(imported - state.phases.map(\.importedWh).reduce(0, +)) < 0.01)
            #expect(messages[1].text.contains(/"total_act_ret":\d+\.\d\d\}$/))
        }
    }

    /// OpenDTU: W to one decimal, the daily yield in whole Wh, the lifetime yield in kWh to 3.
    @Test func openDTUWritesBareNumbersWithItsDecimals() {
        for (state, messages) in Self.messages(.openDTU) {
            #expect(messages.map(\.topic) == ["solar/ac/power", "solar/ac/yieldday", "solar/ac/yieldtotal"])
            #expect(messages[0].text.wholeMatch(of: /\d+\.\d/) != nil, "\(messages[0].text)")
            #expect(messages[1].text.wholeMatch(of: /\d+/) != nil, "\(messages[1].text)")
            #expect(messages[2].text.wholeMatch(of: /\d+\.\d{3}/) != nil, "\(messages[2].text)")
            #expect(abs(Double(messages[0].text)! - state.solarW) <= 0.05 + 1e-9)
            #expect(abs(Double(messages[1].text)! - state.yieldTodayWh) <= 0.5 + 1e-9)
        }
        let night = Self.messages(.openDTU)[0].messages[0].text
        #expect(night == "0.0", "as OpenDTU at night (the fixture's own payload)")
    }

    /// evcc: + discharging (the widget's − draining), numbers to 3 decimals without trailing zeros.
    @Test func evccWritesItsSignAndItsNumbers() {
        var charging = 0
        var draining = 0
        for (state, messages) in Self.messages(.evcc) {
            #expect(messages.map(\.topic) == ["evcc/site/battery/power", "evcc/site/battery/soc"])
            for message in messages {
                #expect(message.text.wholeMatch(of: /-?\d+(\.\d{0,2}[1-9])?/) != nil, "\(message.text)")
            }
            let power = Double(messages[0].text)!
            #expect(abs(power + state.batteryW) <= 0.0005 + 1e-9)
            if state.batteryW > 100 { charging += 1; #expect(power < 0) }
            if state.batteryW < -100 { draining += 1; #expect(power > 0) }
            #expect(abs(Double(messages[1].text)! - state.socPercent) <= 0.0005 + 1e-9)
        }
        #expect(charging > 5 && draining > 5)
    }

    /// Retained where the real device retains: OpenDTU (its default), evcc (always); the Shelly's
    /// status notifications are not. Shelly speaks QoS 1.
    @Test(arguments: [(HomeDevice.openDTU, true, QoS.atMostOnce), (.shellyPro3EM, false, .atLeastOnce), (.evcc, true, .atMostOnce)])
    func retainAndQoSAsTheDevicesSendThem(device: HomeDevice, retain: Bool, qos: QoS) {
        let messages = Self.messages(device)[0].messages
        #expect(messages.allSatisfy { $0.retain == retain && $0.qos == qos })
        #expect(messages.map(\.topic) == device.topics(profile: .demo))
    }

    /// Devices a few milliseconds apart, in the trace as on the network.
    @Test func devicesPublishAFewMillisecondsApart() {
        let cycle = Self.day[70]
        let offsets = cycle.timedMessages.map { Int(($0.at.timeIntervalSince(cycle.at) * 1000).rounded()) }
        #expect(offsets == [0, 0, 0, 7, 7, 16, 16])
    }

    @Test(arguments: [
        (0.0, 1, "0.0"), (612.44, 1, "612.4"), (612.45, 1, "612.5"), (-0.04, 1, "0.0"), (-894.26, 1, "-894.3"),
        (216.4, 0, "216"), (13.3375, 3, "13.338"), (20269.294, 2, "20269.29"), (0, 2, "0.00"), (0.005, 2, "0.01"),
    ])
    func fixedDecimals(value: Double, digits: Int, text: String) {
        #expect(DecimalText.fixed(value, digits) == text)
    }

    @Test(arguments: [(-1250.5, "-1250.5"), (386.04, "386.04"), (57.0, "57"), (100, "100"), (0.0001, "0"), (-0.0001, "0"), (12.34567, "12.346")])
    func evccNumbers(value: Double, text: String) {
        #expect(DecimalText.evcc(value) == text)
    }
}
