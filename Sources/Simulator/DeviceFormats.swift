import FlowCore

/// One MQTT message as a device sends it.
public struct DeviceMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    /// As the device sets it: a subscriber that starts later gets the last value at once.
    public var retain: Bool
    public var qos: QoS

    public init(topic: String, payload: String, retain: Bool, qos: QoS) {
        self.topic = topic
        self.payload = Array(payload.utf8)
        self.retain = retain
        self.qos = qos
    }

    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// The devices of the simulated home, each publishing the home's state in its own format,
/// byte for byte what the real device sends (compare `Tests/Fixtures/devices.json`).
public enum HomeDevice: String, Sendable, CaseIterable {
    /// OpenDTU for the Hoymiles micro-inverters: `solar/ac/*`, bare numbers with the firmware's
    /// fixed decimals, retained (OpenDTU's default).
    case openDTU
    /// Shelly Pro 3EM: `<id>/status/em:0` and `<id>/status/emdata:0`, the component's whole status
    /// as JSON, at QoS 1 and not retained (Gen2 status notifications are not).
    case shellyPro3EM
    /// evcc's MQTT output: `evcc/site/battery/*`, numbers to 3 decimals without trailing zeros,
    /// retained; evcc's battery sign is + discharging.
    case evcc

    /// Meters publish a few milliseconds apart, not at one instant: this device's lag after the first.
    public var offsetMilliseconds: Int {
        switch self {
        case .openDTU: 0
        case .shellyPro3EM: 7
        case .evcc: 16
        }
    }

    /// Every topic the device publishes on.
    public func topics(profile: HomeProfile) -> [String] {
        switch self {
        case .openDTU: ["solar/ac/power", "solar/ac/yieldday", "solar/ac/yieldtotal"]
        case .shellyPro3EM: ["\(profile.shellyDeviceID)/status/em:0", "\(profile.shellyDeviceID)/status/emdata:0"]
        case .evcc: ["evcc/site/battery/power", "evcc/site/battery/soc"]
        }
    }

    /// The device's messages for `state`, in the order it sends them.
    public func messages(for state: HomeState, profile: HomeProfile) -> [DeviceMessage] {
        let topics = topics(profile: profile)
        switch self {
        case .openDTU:
            // Arduino's String(value, digits): W to 1 decimal, the daily Wh whole, the lifetime kWh to 3.
            return zip(topics, [
                DecimalText.fixed(state.solarW, 1), DecimalText.fixed(state.yieldTodayWh, 0),
                DecimalText.fixed(state.yieldTotalWh / 1000, 3),
            ]).map { DeviceMessage(topic: $0, payload: $1, retain: true, qos: .atMostOnce) }
        case .shellyPro3EM:
            return [
                DeviceMessage(topic: topics[0], payload: ShellyStatus.em(state.phases), retain: false, qos: .atLeastOnce),
                DeviceMessage(topic: topics[1], payload: ShellyStatus.emdata(state.phases), retain: false, qos: .atLeastOnce),
            ]
        case .evcc:
            return zip(topics, [DecimalText.evcc(-state.batteryW), DecimalText.evcc(state.socPercent)])
                .map { DeviceMessage(topic: $0, payload: $1, retain: true, qos: .atMostOnce) }
        }
    }
}

/// The Shelly Pro 3EM's status documents, fields in the firmware's order.
enum ShellyStatus {
    static let phaseNames = ["a", "b", "c"]

    /// `em:0`: per-phase and total power, apparent power, current, power factor and voltage.
    static func em(_ phases: [PhaseReading]) -> String {
        var fields = [#""id":0"#]
        for (name, phase) in zip(phaseNames, phases) {
            fields += [
                #""\#(name)_act_power":\#(DecimalText.fixed(phase.powerW, 1))"#,
                #""\#(name)_aprt_power":\#(DecimalText.fixed(phase.apparentPowerVA, 1))"#,
                #""\#(name)_current":\#(DecimalText.fixed(phase.currentA, 3))"#,
                #""\#(name)_pf":\#(DecimalText.fixed(phase.powerFactor, 2))"#,
                #""\#(name)_voltage":\#(DecimalText.fixed(phase.voltageV, 1))"#,
            ]
        }
        fields += [
            #""n_current":null"#,
            #""total_act_power":\#(DecimalText.fixed(phases.map(\.powerW).reduce(0, +), 3))"#,
            #""total_aprt_power":\#(DecimalText.fixed(phases.map(\.apparentPowerVA).reduce(0, +), 3))"#,
            #""total_current":\#(DecimalText.fixed(phases.map(\.currentA).reduce(0, +), 3))"#,
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// `emdata:0`: the lifetime energy counters in Wh, per phase and in total, import and export.
    static func emdata(_ phases: [PhaseReading]) -> String {
        var fields = [#""id":0"#]
        for (name, phase) in zip(phaseNames, phases) {
            fields += [
                #""\#(name)_total_act_energy":\#(DecimalText.fixed(phase.importedWh, 2))"#,
                #""\#(name)_total_act_ret_energy":\#(DecimalText.fixed(phase.exportedWh, 2))"#,
            ]
        }
        fields += [
            #""total_act":\#(DecimalText.fixed(phases.map(\.importedWh).reduce(0, +), 2))"#,
            #""total_act_ret":\#(DecimalText.fixed(phases.map(\.exportedWh).reduce(0, +), 2))"#,
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }
}

/// Numbers as the devices write them.
enum DecimalText {
    /// Exactly `digits` decimals, rounded half away from zero: `0.0`, `216`, `13.338`. A value that
    /// rounds to zero is written without a sign.
    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int64((abs(value) * scale).rounded())
        let unit = Int64(scale)
        var text = String(scaled / unit)
        if digits > 0 {
            let fraction = String(scaled % unit)
            text += "." + String(repeating: "0", count: digits - fraction.count) + fraction
        }
        return value < 0 && scaled != 0 ? "-" + text : text
    }

    /// evcc's float format: 3 decimals, then trailing zeros and a trailing point dropped
    /// (`-1250.5`, `386.04`, `57`).
    static func evcc(_ value: Double) -> String {
        var text = fixed(value, 3)
        while text.last == "0" { text.removeLast() }
        if text.last == "." { text.removeLast() }
        return text
    }
}
