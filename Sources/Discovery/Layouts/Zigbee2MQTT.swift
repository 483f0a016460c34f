import FlowCore

/// Zigbee2MQTT: each device's state as one JSON object on `<base>/<friendly name>` (base
/// `zigbee2mqtt` unless set): a plug's `power` in W and `energy` in kWh (lifetime), beside
/// `linkquality`, `state` and the like. `<base>/<name>/availability` (`{"state":"online"}`, or
/// `online` before 1.36) and `<base>/bridge/…` are the bridge's own, not readings. Documented in
/// Zigbee2MQTT's MQTT topics and messages page and its device pages.
struct Zigbee2MQTTLayout: DeviceLayout {
    func recognize(_ catalog: TopicIndex) -> [Recognition] {
        var results: [Recognition] = []
        for topic in catalog.topics {
            guard let json = catalog[topic]?.json?.objectValue, json["power"]?.numberValue != nil,
                  json["linkquality"] != nil || catalog[topic.levels[0] + "/bridge/state"] != nil,
                  let slash = topic.firstIndex(of: "/")
            else { continue }
            let base = String(topic[..<slash])
            let device = String(topic[topic.index(after: slash)...])
            results.append(plug(base: base, device: device, topic: topic, hasEnergy: json["energy"]?.numberValue != nil, catalog))
        }
        return results
    }

    func plug(base: String, device: String, topic: String, hasEnergy: Bool, _ catalog: TopicIndex) -> Recognition {
        // The device's own topics (availability, set, get), and the bridge's.
        let claimed = Set([topic] + catalog.topics(under: topic) + catalog.topics(under: base + "/bridge"))
        let rate = SourceDraft(name: "balcony", topic: topic, json: "power", note: "Zigbee2MQTT plug \(device): power, W (\(topic)/availability is not a reading)")
        let total: TotalDraft = hasEnergy
            ? .counter(SourceDraft(name: "balcony_total", topic: topic, json: "energy", unit: .kilowattHour, note: "Zigbee2MQTT plug: energy, lifetime kWh"))
            : .word("integrate")
        return .plug(
            device: "Zigbee2MQTT plug \"\(device)\"", name: device, claimed: claimed, rate: rate, total: total, what: "power: a Zigbee plug")
    }
}
