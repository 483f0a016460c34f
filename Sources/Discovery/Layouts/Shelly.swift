import FlowCore

/// Shelly Gen2 and later energy meters (Pro 3EM: `<id>/status/em:0` with `total_act_power` in W,
/// `<id>/status/emdata:0` with the lifetime `total_act` / `total_act_ret` in Wh; Pro EM and EM Gen3:
/// `em1:<n>` with `act_power`, `em1data:<n>` with `total_act_energy`). + is import, − export (a
/// negative power factor does not mean export). Documented in Shelly's Gen2 API pages (EM, EMData,
/// EM1, EM1Data).
struct ShellyGen2Layout: DeviceLayout {
    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        var results: [Recognition] = []
        for topic in catalog.topics {
            if topic.hasSuffix("/status/em:0"), catalog.reads(topic, json: "total_act_power") {
                results.append(threePhase(id: String(topic.dropLast("/status/em:0".count)), catalog))
            } else if topic.hasSuffix("/status/em1:0"), catalog.reads(topic, json: "act_power") {
                results.append(oneChannel(id: String(topic.dropLast("/status/em1:0".count)), catalog))
            }
        }
        return results
    }

    func threePhase(id: String, _ catalog: TopicIndex) -> Recognition {
        let rate = SourceDraft(
            name: "grid", topic: "\(id)/status/em:0", json: "total_act_power",
            note: "Shelly Pro 3EM: total_act_power, W, + import, − export: the widget's sign")
        var total = TotalDraft.word("import")
        if catalog.reads("\(id)/status/emdata:0", json: "total_act") {
            total = .counter(SourceDraft(
                name: "grid_import", topic: "\(id)/status/emdata:0", json: "total_act", unit: .wattHour,
                note: "Shelly Pro 3EM: lifetime import, Wh (total_act_ret is the export)"))
        }
        return Recognition(
            device: "Shelly Pro 3EM \(id)", standing: .meter, nodes: [NodeDraft(role: .grid, name: "Grid", rate: [rate], total: total)],
            claimed: Set(catalog.topics(under: id)))
    }

    func oneChannel(id: String, _ catalog: TopicIndex) -> Recognition {
        let rate = SourceDraft(
            name: "grid", topic: "\(id)/status/em1:0", json: "act_power",
            note: "Shelly EM (Gen2+), channel 0: act_power, W, + import, − export, with the clamp's arrow toward the home")
        var total = TotalDraft.word("import")
        if catalog.reads("\(id)/status/em1data:0", json: "total_act_energy") {
            total = .counter(SourceDraft(
                name: "grid_import", topic: "\(id)/status/em1data:0", json: "total_act_energy", unit: .wattHour,
                note: "Shelly EM channel 0: lifetime import, Wh"))
        }
        var recognition = Recognition(
            device: "Shelly EM \(id)", standing: .meter, nodes: [NodeDraft(role: .grid, name: "Grid", rate: [rate], total: total)],
            claimed: Set(catalog.topics(under: id)))
        if let heardW = catalog["\(id)/status/em1:1"]?.number(at: "act_power") {
            recognition.leftOut.append(.secondClamp(topic: "\(id)/status/em1:1", json: "act_power", heardW: heardW, note: "Shelly EM channel 1"))
        }
        return recognition
    }
}

/// Shelly Gen1 energy meters (Shelly EM, Shelly 3EM): `shellies/<id>/emeter/<n>/power` in W
/// (below 0 while returning to the grid), `energy` and `returned_energy` in watt-minutes (counters
/// that restart with the device), `total` and `total_returned` in Wh. Documented in Shelly's Gen1
/// API pages (MQTT section of the Shelly EM and 3EM).
struct ShellyGen1Layout: DeviceLayout {
    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        var channels: [String: [Int]] = [:]
        for topic in catalog.topics where topic.hasSuffix("/power") {
            let levels = topic.levels
            guard levels.count >= 4, levels[levels.count - 3] == "emeter", let channel = Int(levels[levels.count - 2]) else { continue }
            if catalog.reads(topic) { channels[levels.dropLast(3).joined(separator: "/"), default: []].append(channel) }
        }
        return channels.keys.sorted().map { recognize(device: $0, channels: channels[$0]!.sorted(), catalog) }
    }

    func recognize(device: String, channels: [Int], _ catalog: TopicIndex) -> Recognition {
        let id = device.levels.last.map(String.init) ?? device
        let threePhase = id.hasPrefix("shellyem3") || channels.count == 3
        var recognition = Recognition(
            device: "Shelly \(threePhase ? "3EM" : "EM") (Gen1) \(id)", standing: .meter, nodes: [], claimed: Set(catalog.topics(under: device)))
        if threePhase {
            // Three phases, three clamps: the grid is their sum; no counter adds up, so the import is integrated.
            let rates = channels.map { channel in
                SourceDraft(
                    name: "grid_l\(channel + 1)", topic: "\(device)/emeter/\(channel)/power",
                    note: "Shelly 3EM (Gen1), phase \(channel + 1): W, + import, − export")
            }
            recognition.nodes.append(NodeDraft(role: .grid, name: "Grid", rate: rates, total: .word("import")))
            return recognition
        }
        let rate = SourceDraft(
            name: "grid", topic: "\(device)/emeter/0/power",
            note: "Shelly EM (Gen1), clamp 0: W, + import, − export (below 0 while returning)")
        var total = TotalDraft.word("import")
        if catalog.reads("\(device)/emeter/0/energy") {
            total = .counter(SourceDraft(
                name: "grid_import", topic: "\(device)/emeter/0/energy", unit: .wattMinute,
                note: "Shelly EM (Gen1): imported energy in watt-minutes (Wmin), restarts with the device (a restart is no energy)"))
        }
        recognition.nodes.append(NodeDraft(role: .grid, name: "Grid", rate: [rate], total: total))
        if channels.contains(1), let heardW = catalog["\(device)/emeter/1/power"]?.number {
            recognition.leftOut.append(.secondClamp(topic: "\(device)/emeter/1/power", heardW: heardW, note: "Shelly EM clamp 1"))
        }
        return recognition
    }
}

extension LeftOut {
    /// A Shelly EM's second clamp: on the solar line it is an input. Shelly counts power flowing
    /// back out below 0, and a clamp on the inverter's line that faces the way the grid clamp does
    /// sees the production flow out: so the line that would add it carries `invert` when it was
    /// heard below 0 (beyond noise; at night it reads about 0 and says nothing).
    static func secondClamp(topic: String, json: String? = nil, heardW: Double, note: String) -> LeftOut {
        let below = heardW < -SignCheck.noiseW
        let why = (json.map { "\($0): " } ?? "") + "the second clamp; on the solar line it is an input ("
            + (below ? "it read \(JSONValue.format(heardW.rounded())) W, production flowing out: hence `invert: true`)"
                : "a clamp that faces the other way reads below 0: add `invert: true`)")
        return LeftOut(topic, why, suggestion: SourceDraft(name: "solar", topic: topic, json: json, invert: below, note: note))
    }
}
