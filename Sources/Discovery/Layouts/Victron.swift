import FlowCore

/// Victron Venus OS (GX devices, dbus-flashmq): `N/<portal id>/<service>/<instance>/<path>` with
/// `{"value": …}` payloads, `{"value": null}` for an invalid value and an empty payload when a device
/// leaves (both no reading). It publishes only while a client sends `R/<portal id>/keepalive` at
/// least every 60 s. The system service sums what the widget needs: `Dc/Battery/Power` (W, + charging),
/// `Dc/Battery/Soc` (%), `Ac/Grid/L1…L3/Power` (W, + import), PV on `Dc/Pv/Power` (solar chargers)
/// and `Ac/PvOnGrid` / `Ac/PvOnOutput` `/L1…L3/Power` (PV inverters). Documented in the dbus-flashmq
/// README and Venus OS's D-Bus paths.
struct VictronLayout: DeviceLayout {
    /// Well inside the 60 s after which Venus OS stops publishing.
    static let keepaliveIntervalSeconds = 30
    /// The keepalive republishes every value at least every `keepaliveInterval`.
    static let staleAfter = "5m"

    /// The keepalive a topic's portal needs (`N/<portal>/…` → `R/<portal>/keepalive`), or nil.
    static func keepalive(for topic: String) -> String? {
        let levels = topic.levels
        guard levels.count >= 3, levels[0] == "N", !levels[1].isEmpty, !levels[1].contains("+"), !levels[1].contains("#") else {
            return nil
        }
        return "R/\(levels[1])/keepalive"
    }

    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        let portals = Set(catalog.topics.compactMap { topic -> String? in
            Self.keepalive(for: topic) != nil ? String(topic.levels[1]) : nil
        })
        return portals.sorted().map { recognize(portal: $0, catalog) }
    }

    func recognize(portal: String, _ catalog: TopicIndex) -> Recognition {
        let system = "N/\(portal)/system/0"
        var recognition = Recognition(
            device: "Victron Venus OS, portal \(portal)", standing: .meter, nodes: [], keepalives: ["R/\(portal)/keepalive"],
            claimed: Set(catalog.topics(under: "N/\(portal)")))
        func draft(_ name: String, _ path: String, unit: SourceUnit = .watt, _ note: String) -> SourceDraft? {
            let topic = "\(system)/\(path)"
            guard catalog.reads(topic, json: "value") else { return nil }
            return SourceDraft(name: name, topic: topic, json: "value", unit: unit, staleAfter: Self.staleAfter, note: "Victron: \(note)")
        }
        let phases = 1...3
        let solar = [draft("solar_dc", "Dc/Pv/Power", "PV power of the solar chargers, W")].compactMap { $0 }
            + phases.compactMap { draft("solar_l\($0)", "Ac/PvOnGrid/L\($0)/Power", "PV inverters on the grid side, phase \($0), W") }
            + phases.compactMap { draft("solar_out_l\($0)", "Ac/PvOnOutput/L\($0)/Power", "PV inverters on the AC output, phase \($0), W") }
        if !solar.isEmpty {
            recognition.nodes.append(NodeDraft(role: .production, name: "Solar", rate: solar, total: .word("integrate")))
        }
        // Only the phases that carried a number: an absent phase says {"value": null} for ever.
        let grid = phases.compactMap { draft("grid_l\($0)", "Ac/Grid/L\($0)/Power", "grid phase \($0), W, + import, − export") }
        if !grid.isEmpty {
            recognition.nodes.append(NodeDraft(role: .grid, name: "Grid", rate: grid, total: .word("import")))
        }
        if let battery = draft("battery", "Dc/Battery/Power", "battery power, W, + charging, − discharging: the widget's sign") {
            let level = draft("battery_level", "Dc/Battery/Soc", unit: .percent, "battery state of charge, %")
            recognition.nodes.append(NodeDraft(role: .battery, name: "Battery", rate: [battery], total: .word("charge"), level: level))
        }
        return recognition
    }
}
