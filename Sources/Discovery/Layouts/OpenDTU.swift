import FlowCore

/// OpenDTU (Hoymiles micro-inverters): `<base>/ac/power` (W, all inverters), `<base>/ac/yieldtotal`
/// (kWh, lifetime), `<base>/ac/yieldday` (Wh, not kWh: since the inverters powered up), and per
/// inverter `<base>/<serial>/0/power` (channel 0 is AC). Documented in OpenDTU's MQTT topics page.
struct OpenDTULayout: DeviceLayout {
    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        bases(in: catalog).map { recognize(base: $0, in: catalog) }
    }

    /// A base has inverters (`<serial>/0/power`, a serial of digits), or `ac/power` beside the DTU's
    /// status or the yields.
    func bases(in catalog: TopicIndex) -> [String] {
        var found: Set<String> = []
        for topic in catalog.topics {
            let levels = topic.levels
            guard levels.count >= 3 else { continue }
            let serial = levels[levels.count - 3]
            if Self.isSerial(serial), levels[levels.count - 2] == "0", levels.last == "power" {
                found.insert(levels.dropLast(3).joined(separator: "/"))
            } else if topic.hasSuffix("/ac/power") {
                // The DTU's own status, or the sum's siblings with OpenDTU's names.
                let base = String(topic.dropLast("/ac/power".count))
                if ["/dtu/status", "/ac/yieldtotal", "/ac/yieldday"].contains(where: { catalog[base + $0] != nil }) { found.insert(base) }
            }
        }
        return found.filter { !$0.isEmpty }.sorted()
    }

    /// Hoymiles serial numbers are 12 digits.
    static func isSerial(_ level: Substring) -> Bool { level.count >= 10 && level.isDigits }

    func recognize(base: String, in catalog: TopicIndex) -> Recognition {
        let serials = Set(catalog.topics(under: base).compactMap { topic -> String? in
            let levels = topic.levels
            let serial = levels[base.levels.count]
            return Self.isSerial(serial) ? String(serial) : nil
        }).sorted()
        let named = serials.map { serial in catalog[base + "/" + serial + "/name"].map { "\(serial) \($0.latestText)" } ?? serial }
        var recognition = Recognition(
            device: "OpenDTU, base topic \(base)" + (named.isEmpty ? "" : " (inverters \(named.joined(separator: ", ")))"),
            standing: .meter, nodes: [], claimed: Set(catalog.topics(under: base)))
        let acPower = base + "/ac/power"
        if catalog.reads(acPower) {
            let rate = SourceDraft(
                name: "solar", topic: acPower,
                note: "OpenDTU: AC power of all inverters, W; production has no sign to set")
            recognition.nodes.append(NodeDraft(role: .production, name: "Solar", rate: [rate], total: total(base: base, catalog)))
        } else {
            // No sum published (an older OpenDTU): each inverter's AC channel, added up by one
            // wildcard source, so an inverter added later counts too and one asleep counts 0 W.
            let inverters = serials.filter { catalog.reads("\(base)/\($0)/0/power") }
            if let only = inverters.first, inverters.count == 1 {
                let rate = SourceDraft(
                    name: "solar", topic: "\(base)/\(only)/0/power", note: "OpenDTU: inverter \(only), AC power (channel 0), W")
                recognition.nodes.append(NodeDraft(role: .production, name: "Solar", rate: [rate], total: total(base: base, catalog)))
            } else if !inverters.isEmpty {
                let rate = SourceDraft(
                    name: "solar", topic: "\(base)/+/0/power", sumsMatches: true,
                    note: "OpenDTU: the AC power (channel 0) of each inverter (\(inverters.joined(separator: ", "))), W, added up; one that sleeps counts 0 W once stale")
                recognition.nodes.append(NodeDraft(role: .production, name: "Solar", rate: [rate], total: total(base: base, catalog)))
            }
        }
        return recognition
    }

    /// The lifetime counter (kWh) when it is there, else the daily one (Wh), else the integral.
    func total(base: String, _ catalog: TopicIndex) -> TotalDraft {
        if catalog.reads(base + "/ac/yieldtotal") {
            return .counter(SourceDraft(
                name: "solar_total", topic: base + "/ac/yieldtotal", unit: .kilowattHour,
                note: "OpenDTU: lifetime yield of all inverters, kWh (today's share is counted from midnight)"))
        }
        if catalog.reads(base + "/ac/yieldday") {
            return .daily(SourceDraft(
                name: "solar_today", topic: base + "/ac/yieldday", unit: .wattHour,
                note: "OpenDTU: yield since the inverters powered up, in Wh (not kWh)"))
        }
        return .word("integrate")
    }
}
