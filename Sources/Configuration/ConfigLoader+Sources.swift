import FlowCore
import Mosquitto

extension ConfigLoader {
    /// `sources:`: every number flowbridge reads, by name.
    func loadSources(_ sourcesNode: ConfigNode) -> [SourceConfig] {
        guard let map = sourcesNode.mapping() else { return [] }
        var sources: [SourceConfig] = []
        var directions: [(source: String, direction: DirectionFrom<ConfigValue<String>>)] = []
        for (name, source) in sourcesNode.entries ?? [] {
            if name.value == "balance" { name.report("'balance' is reserved for the derived output") }
            if let (source, direction) = loadSource(name.value, source) {
                sources.append(source)
                if let direction { directions.append((source.name, direction)) }
            }
        }
        if map.pairs.isEmpty { sourcesNode.report("needs at least one source") }
        checkDirections(directions, in: &sources)
        return sources
    }

    func loadSource(_ name: String, _ source: ConfigNode) -> (SourceConfig, DirectionFrom<ConfigValue<String>>?)? {
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
        let (unit, priceCurrency) = map.field("unit").flatMap(loadUnit) ?? (.watt, nil)
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
        let decimalComma = map.flag("decimal_comma")
        let invert = map.flag("invert")?.value ?? false
        let format = loadFormat(&map, path: path, decimalComma: decimalComma)
        var sign: SignField?
        if let node = map.field("sign") {
            sign = loadSign(node)
            if path == nil { node.report("a sign from another field needs `json:` for the magnitude (the direction is a field of the same JSON message)") }
        }
        let direction = map.field("direction").flatMap(loadDirection)
        if direction != nil {
            if sign != nil { map.mapping.report(at: "direction", "the direction comes from a field (sign:) or from other sources (direction:): write one of them, not both") }
            if combine?.value == .sum { map.mapping.report(at: "direction", "a sum of topics has no one direction: give each topic a source with its own direction:") }
            if unit.quantity != .power { map.mapping.report(at: "direction", "a direction signs a power; this source is \(unit.quantity.rawValue) (\(unit.rawValue))") }
        }
        let valueMap = map.field("map").flatMap(loadValueMap)
        if valueMap != nil, case .binary = format { map.mapping.report(at: "map", "a binary number has no words to map: write map or decode, not both") }
        let schedule = map.field("schedule").flatMap(loadSchedule)
        if schedule != nil {
            if unit.quantity != .price {
                map.mapping.report(at: "schedule", "a schedule is of prices; this source is \(unit.quantity.rawValue) (\(unit.rawValue)): give it a price unit such as EUR/kWh")
            }
            // Each slot says when its price is in force: nothing about the schedule turns stale.
            let written = Set(map.pairs.compactMap(\.key.scalarValue))
            if written.contains("stale_after") {
                map.mapping.report(at: "stale_after", "a schedule's slots say how long each price holds; leave stale_after out")
            }
            staleAfter = nil
            let single = ["format", "regex", "decode", "sign", "direction", "map", "decimal_comma"]
            for key in single where written.contains(key) {
                map.mapping.report(at: key, "belongs to a source of one number; a schedule is a JSON list of slots (json: says where it is)")
            }
            if combine?.value == .sum { map.mapping.report(at: "combine", "a schedule is one list of prices; it does not add up (leave combine out)") }
        }
        guard let topic else { return nil }
        let decoder = PayloadDecoder(path: path, decimalComma: decimalComma?.value ?? false, format: format, sign: sign, map: valueMap)
        let config = SourceConfig(
            name: name, topic: topic, decoder: decoder,
            unit: unit, scale: scale?.value ?? 1, invert: invert, staleAfterSeconds: staleAfter, maxGapSeconds: maxGap,
            maxPowerW: maxPower?.value ?? SourceConfig.defaultMaxPowerW, combine: combine?.value ?? .latest, maxPayloadBytes: maxPayload,
            priceCurrency: priceCurrency, direction: direction?.map(\.value), schedule: schedule)
        return (config, direction)
    }

    /// `schedule: true` (slots `{"start", "end", "value"}` or `[start, end, price]`, as evcc
    /// publishes them), or `schedule: {start: start_time, end: end_time, price: price_per_kwh}`:
    /// the keys of a slot, for the lists of other feeds.
    func loadSchedule(_ node: ConfigNode) -> ScheduleFormat? {
        if node.node.pairs == nil {
            guard let flag = node.flag() else { return nil }
            if !flag.value { flag.report("leave schedule out for a source of one price") }
            return flag.value ? ScheduleFormat() : nil
        }
        guard var map = node.mapping() else { return nil }
        defer { map.finish() }
        let defaults = ScheduleFormat()
        func key(_ name: String, _ fallback: String) -> String {
            guard let text = map.text(name) else { return fallback }
            if text.value.isEmpty { text.report("must not be empty (the key of a slot's \(name))") }
            return text.value
        }
        return ScheduleFormat(startKey: key("start", defaults.startKey), endKey: key("end", defaults.endKey), priceKey: key("price", defaults.priceKey))
    }

    /// `unit:`: a meter's (`W`, `kWh`, `%`…), or a price source's, which names its currency
    /// (`EUR/kWh`, `EUR/MWh` as day-ahead feeds publish) or counts in cents of the tariff's
    /// (`ct/kWh`).
    func loadUnit(_ node: ConfigNode) -> (SourceUnit, String?)? {
        guard let text = node.text() else { return nil }
        if let unit = SourceUnit(rawValue: text.value), !unit.rawValue.hasPrefix("/") { return (unit, nil) }
        if let slash = text.value.firstIndex(of: "/"), let code = Currency(code: String(text.value[..<slash])),
            let unit = SourceUnit(rawValue: String(text.value[slash...])), unit.quantity == .price
        {
            return (unit, code.code)
        }
        let meters = SourceUnit.allCases.filter { $0.quantity != .price }.map(\.rawValue)
        text.report("'\(text.value)' is not one of \(meters.joined(separator: ", ")), or a price per energy: EUR/kWh, EUR/MWh (any ISO 4217 code for EUR), ct/kWh")
        return nil
    }

    /// How the payload holds the number: `format: keyvalue` with `key:`, `regex:`, `decode:`; plain
    /// text or `json:` by default. At most one of them, and each one's own keys only with it.
    func loadFormat(_ map: inout MappingReader, path: JSONPath?, decimalComma: ConfigValue<Bool>?) -> PayloadDecoder.Format {
        var format = PayloadDecoder.Format.text
        var chosen: [String] = path == nil ? [] : ["json"]
        let keyValue = map.choice("format", as: TextFormat.self)
        let key = map.text("key")
        let separator = map.text("separator")
        let assign = map.text("assign")
        for option in [separator, assign].compactMap({ $0 }) where option.value.isEmpty { option.report("must not be empty") }
        if keyValue != nil {
            chosen.append("format")
            if let key {
                format = .keyValue(KeyValueFormat(
                    key: key.value, separator: separator.flatMap { $0.value.isEmpty ? nil : $0.value }, assign: assign.flatMap { $0.value.isEmpty ? nil : $0.value } ?? "="))
            } else {
                map.mapping.report(at: "key", "is required with format: keyvalue (the key whose value is the number)")
            }
            if let decimalComma, decimalComma.value, separator?.value.contains(",") ?? true {
                decimalComma.report("a decimal comma cannot be told from the pairs' separator ','; set `separator:` to another one (; or a newline)")
            }
        } else {
            for (name, option) in [("key", key), ("separator", separator), ("assign", assign)] {
                option?.report("`\(name):` belongs to format: keyvalue; add that, or leave \(name) out")
            }
        }
        if let regex = map.text("regex") {
            chosen.append("regex")
            do { format = .pattern(try PatternFormat(regex.value)) } catch { regex.report(error.description) }
        }
        let decode = map.choice("decode", as: BinaryNumberFormat.NumberType.self)
        let byteOrder = map.choice("byte_order", as: BinaryNumberFormat.ByteOrder.self)
        let hex = map.flag("hex")
        if let decode {
            chosen.append("decode")
            format = .binary(BinaryNumberFormat(decode.value, byteOrder: byteOrder?.value ?? .big, hex: hex?.value ?? false))
            if let decimalComma, decimalComma.value { decimalComma.report("a binary number has no decimal comma: write decimal_comma or decode, not both") }
        } else if map.field("decode") == nil {
            if let byteOrder { byteOrder.report("`byte_order:` belongs to decode: (int16 … float64); add that, or leave byte_order out") }
            if let hex { hex.report("`hex:` belongs to decode: (int16 … float64); add that, or leave hex out") }
        }
        if chosen.count > 1 {
            for extra in chosen.dropFirst() {
                map.mapping.report(at: extra, "a payload is read one way: write \(chosen[0]) or \(extra), not both")
            }
            return .text
        }
        return format
    }

    /// The words `format:` takes (plain text and JSON need none).
    enum TextFormat: String, CaseIterable { case keyvalue }

    /// `sign: {json: flow, negative: [exporting]}` (or `positive:`, or both).
    func loadSign(_ node: ConfigNode) -> SignField? {
        guard var map = node.mapping() else { return nil }
        defer { map.finish() }
        var path: JSONPath?
        if let text = map.required("json")?.text() {
            do { path = try JSONPath(text.value) } catch { text.report(error.description) }
        }
        func values(_ key: String) -> Set<String>? {
            guard let list = map.field(key) else { return nil }
            let items = list.items ?? [list.asItem(0)]
            let words = Set(items.compactMap { $0.text()?.value })
            if words.isEmpty { list.report("needs at least one value") }
            return words
        }
        let negative = values("negative")
        let positive = values("positive")
        if negative == nil, positive == nil {
            node.report(at: "negative", "is required (or positive:): the field's values that mean that direction")
        }
        if let negative, let positive, !negative.isDisjoint(with: positive) {
            node.report(at: "positive", "'\(negative.intersection(positive).sorted().joined(separator: ", "))' cannot be both negative and positive")
        }
        guard let path else { return nil }
        return SignField(path: path, negative: negative, positive: positive)
    }

    /// `direction: {positive: charging, negative: discharging}` (flags: either or both), or
    /// `direction: {sign_of: grid_signed}` (a signed number).
    func loadDirection(_ node: ConfigNode) -> DirectionFrom<ConfigValue<String>>? {
        guard var map = node.mapping() else { return nil }
        defer { map.finish() }
        let positive = map.text("positive")
        let negative = map.text("negative")
        let signOf = map.text("sign_of")
        switch (positive, negative, signOf) {
        case (nil, nil, let source?):
            return .signOf(source)
        case (_, _, nil) where positive != nil || negative != nil:
            if let positive, let negative, positive.value == negative.value {
                negative.report("'\(negative.value)' cannot be both the positive and the negative flag")
                return nil
            }
            return .flags(positive: positive, negative: negative)
        case (_, _, _?):
            node.report(at: "sign_of", "a direction comes from flags (positive:, negative:) or from a signed number (sign_of:): write one kind, not both")
            return nil
        default:
            node.report(at: "positive", "is required (or negative:, or sign_of:): the source whose 1 means this direction")
            return nil
        }
    }

    /// Every source a `direction:` names exists, is not the source itself and has no direction of
    /// its own (a direction is read from a flag or a number, not through another direction); a
    /// flag without a `map:` reads on/off and true/false as 1/0.
    func checkDirections(_ directions: [(source: String, direction: DirectionFrom<ConfigValue<String>>)], in sources: inout [SourceConfig]) {
        let index = Dictionary(sources.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        for (name, direction) in directions {
            for reference in direction.sources {
                guard let position = index[reference.value] else {
                    reference.report("unknown source '\(reference.value)' (sources: \(index.keys.sorted().joined(separator: ", ")))")
                    continue
                }
                if reference.value == name {
                    reference.report("'\(name)' cannot give its own direction")
                } else if sources[position].direction != nil {
                    reference.report("'\(reference.value)' takes its direction from other sources itself; name the flag or the signed number directly")
                }
            }
            if case .signOf(let reference) = direction, let source = index[reference.value].map({ sources[$0] }), source.unit.quantity != .power {
                reference.report("source '\(reference.value)' is \(source.unit.quantity.rawValue) (\(source.unit.rawValue)); sign_of reads the sign of a power")
            }
            for flag in direction.flags {
                guard let position = index[flag.value], sources[position].decoder.map == nil else { continue }
                if case .binary = sources[position].decoder.format { continue }
                sources[position].decoder.map = Self.flagWords
            }
        }
    }

    /// The words a direction flag reads without a `map:` of its own.
    static let flagWords = ValueMap(["on": 1, "off": 0, "true": 1, "false": 0])

    /// `map: {on: 1, off: 0}`: words to numbers.
    func loadValueMap(_ node: ConfigNode) -> ValueMap? {
        guard let entries = node.entries, node.node.pairs != nil else {
            node.report("expected a mapping of words to numbers, such as {on: 1, off: 0}, found \(node.node.describedKind)")
            return nil
        }
        var values: [String: Double] = [:]
        for (word, value) in entries {
            if values[word.value.lowercased()] != nil { word.report("'\(word.value)' is mapped twice (words are compared without case)") }
            if let number = value.number() { values[word.value.lowercased()] = number.value }
        }
        if entries.isEmpty { node.report("needs at least one word") }
        return ValueMap(values)
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
        guard !size.node.isNull, let value = Double(number), value.isFinite, value >= 1 else {
            size.report("'\(text)' is not a size in bytes (write e.g. 65536, 64KiB or 1MiB)")
            return nil
        }
        // Said here, not by the broker connection when `run` starts.
        guard (value * factor).rounded() <= Double(MQTTOptions.largestPayloadBytes) else {
            size.report("'\(text)' is more than an MQTT message can carry (\(MQTTOptions.largestPayloadBytes) bytes)")
            return nil
        }
        return Int((value * factor).rounded())
    }
}
