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
        var recognition = Recognition(device: "Zigbee2MQTT plug \"\(device)\"", standing: .meter, nodes: [], claimed: claimed)
        let rate = SourceDraft(name: "balcony", topic: topic, json: "power", note: "Zigbee2MQTT plug \(device): power, W (\(topic)/availability is not a reading)")
        let total: TotalDraft = hasEnergy
            ? .counter(SourceDraft(name: "balcony_total", topic: topic, json: "energy", unit: .kilowattHour, note: "Zigbee2MQTT plug: energy, lifetime kWh"))
            : .word("integrate")
        if NameHint.matches(device, NameHint.production) {
            recognition.nodes.append(NodeDraft(role: .production, name: "Balcony", rate: [rate], total: total))
        } else {
            recognition.leftOut.append(LeftOut(
                topic, "power: a Zigbee plug; if it feeds in a balcony plant, it is an input", suggestion: rate))
        }
        return recognition
    }
}
