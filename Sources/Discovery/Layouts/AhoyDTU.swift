import FlowCore

/// AhoyDTU (Hoymiles micro-inverters): `<base>/<inverter>/ch0/P_AC` (W; channel 0 is AC),
/// `ch0/YieldDay` (Wh), `ch0/YieldTotal` (kWh), and with several inverters `<base>/total/P_AC`.
/// Documented in AhoyDTU's MQTT section of its user manual.
struct AhoyDTULayout: DeviceLayout {
    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        var byBase: [String: [String]] = [:]
        for topic in catalog.topics where topic.hasSuffix("/ch0/P_AC") {
            let levels = topic.levels
            guard levels.count >= 4 else { continue }
            let base = levels.dropLast(3).joined(separator: "/")
            let inverter = String(levels[levels.count - 3])
            if inverter != "total" { byBase[base, default: []].append(inverter) }
        }
        return byBase.keys.sorted().map { base in recognize(base: base, inverters: byBase[base]!.sorted(), catalog) }
    }

    func recognize(base: String, inverters: [String], _ catalog: TopicIndex) -> Recognition {
        var recognition = Recognition(
            device: "AhoyDTU, base topic \(base) (inverters \(inverters.joined(separator: ", ")))", standing: .meter, nodes: [],
            claimed: Set(catalog.topics(under: base)))
        // With several inverters Ahoy publishes their sum under `total`; else the one inverter's channel.
        let owner = catalog.reads("\(base)/total/P_AC") ? "total" : (inverters.count == 1 ? inverters[0] : nil)
        if let owner {
            let prefix = owner == "total" ? "\(base)/total" : "\(base)/\(owner)/ch0"
            let rate = SourceDraft(name: "solar", topic: "\(prefix)/P_AC", note: "AhoyDTU: AC power\(owner == "total" ? " of all inverters" : ""), W")
            var total = TotalDraft.word("integrate")
            if catalog.reads("\(prefix)/YieldTotal") {
                total = .counter(SourceDraft(name: "solar_total", topic: "\(prefix)/YieldTotal", unit: .kilowattHour, note: "AhoyDTU: lifetime yield, kWh"))
            } else if catalog.reads("\(prefix)/YieldDay") {
                total = .daily(SourceDraft(name: "solar_today", topic: "\(prefix)/YieldDay", unit: .wattHour, note: "AhoyDTU: today's yield, in Wh (not kWh)"))
            }
            recognition.nodes.append(NodeDraft(role: .production, name: "Solar", rate: [rate], total: total))
        } else {
            let rates = inverters.filter { catalog.reads("\(base)/\($0)/ch0/P_AC") }.map { inverter in
                SourceDraft(name: "solar_\(inverter)", topic: "\(base)/\(inverter)/ch0/P_AC", note: "AhoyDTU: inverter \(inverter), AC power, W")
            }
            if !rates.isEmpty { recognition.nodes.append(NodeDraft(role: .production, name: "Solar", rate: rates, total: .word("integrate"))) }
        }
        return recognition
    }
}
