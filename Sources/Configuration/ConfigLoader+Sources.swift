import FlowCore

extension ConfigLoader {
    /// `sources:`: every number flowbridge reads, by name.
    func loadSources(_ sourcesNode: ConfigNode) -> [SourceConfig] {
        guard let map = sourcesNode.mapping() else { return [] }
        var sources: [SourceConfig] = []
        for (name, source) in sourcesNode.entries ?? [] {
            if name.value == "balance" { name.report("'balance' is reserved for the derived output") }
            if let source = loadSource(name.value, source) { sources.append(source) }
        }
        if map.pairs.isEmpty { sourcesNode.report("needs at least one source") }
        return sources
    }

    func loadSource(_ name: String, _ source: ConfigNode) -> SourceConfig? {
        if name.isEmpty || name.hasPrefix("-") || name.contains(where: \.isWhitespace) {
            source.report("a source name must not be empty, start with '-' or hold spaces")
        }
        guard var map = source.mapping() else { return nil }
        defer { map.finish() }
        var topic: TopicFilter?
        if let text = map.required("topic")?.text() {
            do { topic = try TopicFilter(text.value) } catch { text.report(error.description) }
        }
        var path: JSONPath?
        if let json = map.field("json") {
            if json.node.items != nil {
                json.report("expected a text, found a list; \(ConfigHint.quoteJSONPath)")
            } else if let text = json.text() {
                do { path = try JSONPath(text.value) } catch { text.report(error.description) }
            }
        }
        let unit = map.choice("unit", as: SourceUnit.self)?.value ?? .watt
        let scale = map.number("scale")
        if let scale, scale.value == 0 { scale.report("must not be 0") }
        // `never`: a meter that publishes only on change.
        var staleAfter: Double? = SourceConfig.defaultStaleAfterSeconds
        if let stale = map.field("stale_after") {
            if stale.node.scalarValue == "never" {
                staleAfter = nil
            } else if let seconds = stale.duration() {
                if seconds.value <= 0 { seconds.report("must be longer than 0s (or never)") }
                staleAfter = seconds.value
            }
        }
        let maxGap = map.duration("max_gap")?.value ?? SourceConfig.defaultMaxGapSeconds
        let maxPower = map.number("max_power")
        if let maxPower, maxPower.value <= 0 || maxPower.value > SourceConfig.largestMaxPowerW {
            maxPower.report("must be more than 0 W and at most 1e9 W")
        }
        let combine = map.choice("combine", as: SourceCombine.self)
        if let combine, combine.value == .sum, let topic, topic.isExact {
            combine.report("sum adds the topics a wildcard matches; '\(topic)' is one topic (use + or #, or leave combine out)")
        }
        let maxPayload = map.field("max_payload").flatMap(byteSize) ?? SourceConfig.defaultMaxPayloadBytes
        let decimalComma = map.flag("decimal_comma")?.value ?? false
        let invert = map.flag("invert")?.value ?? false
        guard let topic else { return nil }
        return SourceConfig(
            name: name, topic: topic, decoder: PayloadDecoder(path: path, decimalComma: decimalComma),
            unit: unit, scale: scale?.value ?? 1, invert: invert, staleAfterSeconds: staleAfter, maxGapSeconds: maxGap,
            maxPowerW: maxPower?.value ?? SourceConfig.defaultMaxPowerW, combine: combine?.value ?? .latest, maxPayloadBytes: maxPayload)
    }

    /// A size in bytes: `65536`, `512B`, `64KiB`, `1MiB` (also `kB` and `MB`, powers of 1000).
    func byteSize(_ size: ConfigNode) -> Int? {
        let text = size.node.scalarValue ?? ""
        let units: [(String, Double)] = [("KiB", 1024), ("MiB", 1_048_576), ("kB", 1000), ("KB", 1000), ("MB", 1_000_000), ("B", 1)]
        var number = Substring(text).trimmingSpaces
        var factor = 1.0
        if let (suffix, value) = units.first(where: { text.hasSuffix($0.0) }) {
            number = Substring(text.dropLast(suffix.count)).trimmingSpaces
            factor = value
        }
        guard !size.node.isNull, let value = Double(number), value.isFinite, value >= 1, (value * factor).rounded() <= Double(Int32.max) else {
            size.report("'\(text)' is not a size in bytes (write e.g. 65536, 64KiB or 1MiB)")
            return nil
        }
        return Int((value * factor).rounded())
    }
}
