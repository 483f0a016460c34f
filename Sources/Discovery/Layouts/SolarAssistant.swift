import FlowCore

/// SolarAssistant: `solar_assistant/<device>/<metric>/state`, a bare number per topic: `pv_power`,
/// `grid_power` (W, + import, − export), `battery_power` (W, + charging, − discharging), and
/// `battery_state_of_charge` (%); `total` sums the inverters and batteries. Documented in
/// SolarAssistant's MQTT integration page.
struct SolarAssistantLayout: DeviceLayout {
    static let base = "solar_assistant"

    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        let topics = catalog.topics(under: Self.base)
        guard !topics.isEmpty else { return [] }
        let devices = Set(topics.map { String($0.levels[1]) }).sorted()
        let inverters = devices.filter { $0.hasPrefix("inverter_") }
        var recognition = Recognition(
            device: "SolarAssistant (\(devices.joined(separator: ", ")))", standing: .meter, nodes: [], claimed: Set(topics))
        /// `total/<metric>` when it reads, else the metric of every inverter that reads it (summed).
        func drafts(_ metric: String, name: String, unit: SourceUnit = .watt, _ note: String) -> [SourceDraft] {
            let total = "\(Self.base)/total/\(metric)/state"
            if catalog.reads(total) { return [SourceDraft(name: name, topic: total, unit: unit, note: "SolarAssistant: \(note)")] }
            let each = inverters.map { "\(Self.base)/\($0)/\(metric)/state" }.filter { catalog.reads($0) }
            return each.map { topic in
                let suffix = each.count > 1 ? "_" + String(topic.levels[1].dropFirst("inverter_".count)) : ""
                return SourceDraft(name: name + suffix, topic: topic, unit: unit, note: "SolarAssistant \(topic.levels[1]): \(note)")
            }
        }
        let solar = drafts("pv_power", name: "solar", "PV power, W")
        if !solar.isEmpty { recognition.nodes.append(NodeDraft(role: .production, name: "Solar", rate: solar, total: .word("integrate"))) }
        let grid = drafts("grid_power", name: "grid", "grid power, W, + import, − export: the widget's sign")
        if !grid.isEmpty { recognition.nodes.append(NodeDraft(role: .grid, name: "Grid", rate: grid, total: .word("import"))) }
        let battery = drafts("battery_power", name: "battery", "battery power, W, + charging, − discharging: the widget's sign")
        if !battery.isEmpty {
            let level = drafts("battery_state_of_charge", name: "battery_level", unit: .percent, "battery state of charge, %").first
            recognition.nodes.append(NodeDraft(role: .battery, name: "Battery", rate: battery, total: .word("charge"), level: level))
        }
        return [recognition]
    }
}
