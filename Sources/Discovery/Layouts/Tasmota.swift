import FlowCore

/// Tasmota: `tele/<topic>/SENSOR` every TelePeriod (300 s unless set), with `ENERGY` (energy plugs:
/// `Power` in W, `Today` and `Total` in kWh) or the section a Smart Meter Interface script names
/// (`SML` and its `Power_curr` in W, + import, − export, `Total_in` / `Total_out` or `E_in` / `E_out`
/// in kWh). The script chooses those names, so any section with a power field is taken. Documented
/// in Tasmota's pages on MQTT, power monitoring and the Smart Meter Interface.
struct TasmotaLayout: DeviceLayout {
    /// Two TelePeriods of the default 300 s and a margin: a reading is live until the next is late.
    static let staleAfter = "11m"

    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        catalog.topics.compactMap { topic in
            let levels = topic.levels
            guard levels.count == 3, levels[0] == "tele", levels[2] == "SENSOR", let json = catalog[topic]?.json?.objectValue else {
                return nil
            }
            let device = String(levels[1])
            let claimed = Set(["tele", "stat", "cmnd"].flatMap { catalog.topics(under: "\($0)/\(levels[1])") })
            if let energy = json["ENERGY"]?.objectValue, energy["Power"]?.numberValue != nil {
                return plug(device: device, topic: topic, hasTotal: energy["Total"]?.numberValue != nil, claimed: claimed)
            }
            for section in json.keys.sorted() {
                guard let fields = json[section]?.objectValue else { continue }
                if let power = fields.keys.sorted().first(where: { $0.lowercased().contains("power") && fields[$0]?.numberValue != nil }) {
                    return meter(device: device, topic: topic, section: section, power: power, fields: fields, claimed: claimed)
                }
            }
            return nil
        }
    }

    func meter(device: String, topic: String, section: String, power: String, fields: [String: JSONValue], claimed: Set<String>) -> Recognition {
        let rate = SourceDraft(
            name: "grid", topic: topic, json: "\(section).\(power)", staleAfter: Self.staleAfter,
            note: "Tasmota smart meter reader \(device): \(section).\(power), W, + import, − export (the meter's OBIS 16.7.0; a meter that only counts up reads ≥ 0 and needs an import/export pair instead)")
        var total = TotalDraft.word("import")
        if let counter = fields.keys.sorted().first(where: { Self.isImportRegister($0) && fields[$0]?.numberValue != nil }) {
            total = .counter(SourceDraft(
                name: "grid_import", topic: topic, json: "\(section).\(counter)", unit: .kilowattHour, staleAfter: Self.staleAfter,
                note: "Tasmota smart meter reader: \(section).\(counter), the meter's import counter, kWh as the script scales it"))
        }
        return Recognition(
            device: "Tasmota smart meter reader tele/\(device)", standing: .meter,
            nodes: [NodeDraft(role: .grid, name: "Grid", rate: [rate], total: total)], claimed: claimed)
    }

    /// The import register (1.8.0) by the names the Smart Meter Interface page's scripts give it:
    /// `Total_in`, `E_in` (exactly: `E_inHT` is one tariff of it, `E_out` the export), or a word for it.
    static func isImportRegister(_ key: String) -> Bool {
        key.lowercased() == "e_in" || NameHint.matches(key, ["total_in", "import", "bezug", "consumption"])
    }

    /// An energy plug: an input when its name says so (`Recognition.plug`).
    func plug(device: String, topic: String, hasTotal: Bool, claimed: Set<String>) -> Recognition {
        let rate = SourceDraft(
            name: "balcony", topic: topic, json: "ENERGY.Power", staleAfter: Self.staleAfter,
            note: "Tasmota energy plug \(device): ENERGY.Power, W (TelePeriod 300 s unless set: `TelePeriod 10` in its console for a live widget)")
        let total: TotalDraft = hasTotal
            ? .counter(SourceDraft(
                name: "balcony_total", topic: topic, json: "ENERGY.Total", unit: .kilowattHour, staleAfter: Self.staleAfter,
                note: "Tasmota energy plug: ENERGY.Total, lifetime kWh (ENERGY.Today restarts at the plug's own midnight)"))
            : .word("integrate")
        return .plug(
            device: "Tasmota energy plug tele/\(device)", name: device, claimed: claimed, rate: rate, total: total,
            what: "ENERGY.Power: an energy plug")
    }
}
