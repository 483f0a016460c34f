import FlowCore

/// Home Assistant's mqtt_statestream: every entity's state as text on
/// `<base>/<domain>/<object id>/state`, and with `publish_attributes: true` each attribute as JSON
/// beside it (`…/unit_of_measurement` = `"W"`, `…/device_class` = `"power"`). Documented in Home
/// Assistant's MQTT Statestream integration page.
///
/// Entities are anything a user has; a sensor is placed only when its name says what it is (solar,
/// grid, battery) and exactly one sensor says so, with the signs of Home Assistant's energy
/// dashboard: grid + import, battery + discharging. Everything else that reads power or energy is
/// listed, not guessed.
struct HomeAssistantLayout: DeviceLayout {
    struct Sensor {
        var object: String
        var topic: String
        var unit: SourceUnit?
        /// The unit came from `unit_of_measurement`, not from the name.
        var unitPublished: Bool
    }

    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        var byBase: [String: [Sensor]] = [:]
        for topic in catalog.topics where topic.hasSuffix("/state") {
            let levels = topic.levels
            guard levels.count >= 4, levels[levels.count - 3] == "sensor", catalog.reads(topic), catalog[topic]?.json == nil else { continue }
            let base = levels.dropLast(3).joined(separator: "/")
            let object = String(levels[levels.count - 2])
            let prefix = String(topic.dropLast("/state".count))
            let published = catalog[prefix + "/unit_of_measurement"].flatMap { try? JSONValue(parsing: $0.latest) }?.stringValue
            let unit = published.flatMap(SourceUnit.init(rawValue:)) ?? (published == nil ? Self.unit(named: object) : nil)
            byBase[base, default: []].append(Sensor(object: object, topic: topic, unit: unit, unitPublished: published != nil))
        }
        return byBase.keys.sorted().map { recognize(base: $0, sensors: byBase[$0]!, catalog) }
    }

    /// Without `unit_of_measurement`, only a name that says power (W) or a state of charge (%).
    static func unit(named object: String) -> SourceUnit? {
        if NameHint.matches(object, ["power", "leistung"]) { return .watt }
        if NameHint.matches(object, ["soc", "state_of_charge"]) { return .percent }
        return nil
    }

    func recognize(base: String, sensors: [Sensor], _ catalog: TopicIndex) -> Recognition {
        var recognition = Recognition(
            device: "Home Assistant mqtt_statestream, base topic \(base)", standing: .aggregator, nodes: [],
            claimed: Set(sensors.map(\.topic)))
        var placed: Set<String> = []
        /// Home Assistant publishes a state only when it changes: a grid or battery that holds
        /// still (a full battery at night) would go stale and gray the widget, so those sources
        /// never go stale; a device that is gone is published as `unavailable` (no reading).
        func draft(_ sensor: Sensor, name: String, invert: Bool = false, onChangeOnly: Bool = false, _ meaning: String) -> SourceDraft {
            let unitNote = sensor.unitPublished ? "" : " (no unit_of_measurement published; \(sensor.unit!.rawValue) from its name)"
            let staleNote = onChangeOnly ? "; published only on change, so it never goes stale (a device that is gone reads unavailable)" : ""
            return SourceDraft(
                name: name, topic: sensor.topic, unit: sensor.unit!, invert: invert, staleAfter: onChangeOnly ? "never" : nil,
                note: "Home Assistant sensor.\(sensor.object): \(meaning)\(unitNote)\(staleNote)")
        }
        let power = sensors.filter { $0.unit?.quantity == .power }
        func named(_ words: [String], in list: [Sensor]) -> [Sensor] { list.filter { NameHint.matches($0.object, words) } }
        func without(_ words: [String], in list: [Sensor]) -> [Sensor] { list.filter { !NameHint.matches($0.object, words) } }

        let solar = without(NameHint.grid + NameHint.battery + NameHint.importing + NameHint.exporting, in: named(NameHint.production, in: power))
        if solar.count == 1 {
            recognition.nodes.append(NodeDraft(role: .production, name: "Solar", rate: [draft(solar[0], name: "solar", "solar power, W")], total: .word("integrate")))
            placed.insert(solar[0].topic)
        }
        let grid = named(NameHint.grid, in: power)
        if let node = signedOrPair(
            grid, role: .grid, name: "Grid", signedName: "grid", total: "import", plus: NameHint.importing, minus: NameHint.exporting,
            signed: { draft($0, name: "grid", onChangeOnly: true, "grid power, W, + import, − export (Home Assistant's energy dashboard convention)") },
            pair: { draft($0, name: $1, onChangeOnly: true, $1 == "grid_import" ? "power from the grid, W" : "power to the grid, W") })
        {
            recognition.nodes.append(node)
            placed.formUnion(node.terms.map(\.source.topic))
        }
        let battery = named(NameHint.battery, in: power)
        if var node = signedOrPair(
            battery, role: .battery, name: "Battery", signedName: "battery", total: "charge", plus: NameHint.charging, minus: NameHint.discharging,
            signed: { draft($0, name: "battery", invert: true, onChangeOnly: true, "battery power, W, + discharging (Home Assistant's energy dashboard convention): the widget's opposite, hence invert") },
            pair: { draft($0, name: $1, onChangeOnly: true, $1 == "battery_charge" ? "charging power, W" : "discharging power, W") })
        {
            let levels = sensors.filter { $0.unit == .percent && NameHint.matches($0.object, NameHint.battery + NameHint.level) }
            if levels.count == 1 {
                node.level = draft(levels[0], name: "battery_level", "battery state of charge, %")
                placed.insert(levels[0].topic)
            }
            recognition.nodes.append(node)
            placed.formUnion(node.terms.map(\.source.topic))
        }
        for sensor in sensors where !placed.contains(sensor.topic) {
            guard let unit = sensor.unit else { continue }
            let why: String
            switch unit.quantity {
            case .power: why = "sensor.\(sensor.object), \(unit.rawValue): its name does not say solar, grid or battery, or several sensors say the same"
            case .energy: why = "sensor.\(sensor.object), \(unit.rawValue): a lifetime or a daily counter? Home Assistant does not say; as a lifetime counter it is a node's total: {counter: …}"
            case .level: why = "sensor.\(sensor.object), %: not clearly the battery's level"
            case .price: why = "sensor.\(sensor.object), \(unit.rawValue): a price; a `tariff:` can read it as a price source"
            }
            recognition.leftOut.append(LeftOut(sensor.topic, why))
        }
        return recognition
    }

    /// One signed sensor, or one unsigned pair (`grid_import_power` − `grid_export_power`).
    func signedOrPair(
        _ sensors: [Sensor], role: Role, name: String, signedName: String, total: String, plus: [String], minus: [String],
        signed: (Sensor) -> SourceDraft, pair: (Sensor, String) -> SourceDraft
    ) -> NodeDraft? {
        // Check "minus" first: "discharging" holds "charging".
        let negative = sensors.filter { NameHint.matches($0.object, minus) }
        let positive = sensors.filter { NameHint.matches($0.object, plus) && !NameHint.matches($0.object, minus) }
        let plain = sensors.filter { !NameHint.matches($0.object, plus + minus) }
        if plain.count == 1 {
            return NodeDraft(role: role, name: name, rate: [signed(plain[0])], total: .word(total))
        }
        if plain.isEmpty, positive.count == 1, negative.count == 1 {
            let suffixes = role == .grid ? ("_import", "_export") : ("_charge", "_discharge")
            return NodeDraft(
                role: role, name: name,
                terms: [
                    NodeDraft.Term(source: pair(positive[0], signedName + suffixes.0)),
                    NodeDraft.Term(source: pair(negative[0], signedName + suffixes.1), negated: true),
                ],
                total: .word(total))
        }
        return nil
    }
}
