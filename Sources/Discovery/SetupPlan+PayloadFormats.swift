import FlowCore

extension SetupPlan {
    /// A topic whose payload holds no number as text or JSON, yet looks like a reading in another
    /// format (binary, `key=value` pairs) by its name or its keys: suggested with the source keys
    /// that read it, from the same `PayloadShape` whose errors the daemon logs.
    static func otherFormat(topic: String, _ record: TopicCatalog.Record) -> Unplaced? {
        let shape = PayloadShape.of(record.latest)
        guard let suggestion = shape.suggestion else { return nil }
        if case .keyValue(let keys) = shape, let key = keys.first(where: { NameHint.matches($0, NameHint.energyWords) }) {
            return Unplaced(topic: topic, fields: [], format: "format: keyvalue, key: \(key)")
        }
        return NameHint.matches(topic, NameHint.energyWords) ? Unplaced(topic: topic, fields: [], format: suggestion) : nil
    }
}
