import FlowCore

/// evcc's MQTT output (`<base>/site/…`, base `evcc` unless set): `pvPower` (W), `grid/power` (W,
/// + import), `battery/power` (W, + discharging: the widget's opposite), `battery/soc` (%), and
/// `homePower` (W, without the charge points). Releases before 0.200 wrote `gridPower`,
/// `batteryPower`, `batterySoc`. Documented in evcc's MQTT API page.
///
/// evcc reads other meters and republishes them, so it stands back wherever one of those meters
/// is read directly: its battery is what a setup usually takes from it.
struct EvccLayout: DeviceLayout {
    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        let known: Set<String> = ["pvPower", "homePower", "grid/power", "gridPower", "battery/power", "batteryPower"]
        let bases = Set(catalog.topics.compactMap { topic -> String? in
            let levels = topic.levels
            for restCount in 1...2 where levels.count > restCount + 1 && levels[levels.count - restCount - 1] == "site" {
                if known.contains(levels.suffix(restCount).joined(separator: "/")) {
                    return levels.dropLast(restCount + 1).joined(separator: "/")
                }
            }
            return nil
        })
        return bases.sorted().map { recognize(base: $0, catalog) }
    }

    func recognize(base: String, _ catalog: TopicIndex) -> Recognition {
        let site = "\(base)/site"
        /// The first of the topics (current name first) that reads.
        func pick(_ paths: [String]) -> String? { paths.map { "\(site)/\($0)" }.first { catalog.reads($0) } }
        var recognition = Recognition(device: "evcc, base topic \(base)", standing: .aggregator, nodes: [], claimed: Set(catalog.topics(under: base)))
        if let topic = pick(["pvPower"]) {
            let rate = SourceDraft(name: "solar", topic: topic, note: "evcc: PV power of its pv meters, W")
            recognition.nodes.append(NodeDraft(role: .production, name: "Solar", rate: [rate], total: .word("integrate")))
        }
        if let topic = pick(["grid/power", "gridPower"]) {
            let rate = SourceDraft(name: "grid", topic: topic, note: "evcc: grid power, W, + import, − export: the widget's sign")
            recognition.nodes.append(NodeDraft(role: .grid, name: "Grid", rate: [rate], total: .word("import")))
        }
        if let topic = pick(["battery/power", "batteryPower"]) {
            let rate = SourceDraft(
                name: "battery", topic: topic, invert: true,
                note: "evcc: battery power, W, + discharging: the widget's opposite, hence invert")
            let level = pick(["battery/soc", "batterySoc"]).map { SourceDraft(name: "battery_level", topic: $0, unit: .percent, note: "evcc: battery state of charge, %") }
            recognition.nodes.append(NodeDraft(role: .battery, name: "Battery", rate: [rate], total: .word("charge"), level: level))
        }
        if catalog.reads("\(site)/homePower") {
            recognition.leftOut.append(LeftOut(
                "\(site)/homePower", "evcc's home power leaves out the charge points; the widget derives the home from the balance, which counts everything"))
        }
        return recognition
    }
}
