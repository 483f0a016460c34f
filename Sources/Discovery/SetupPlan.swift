import FlowCore

/// What the devices heard on a broker make together: the widget's nodes, picked from what each
/// device offers, and what was left out or could not be placed, with why.
///
/// Where two devices offer the same slot, the one that reads its own meter wins over one that
/// republishes others' (evcc, Home Assistant): evcc's grid power is the grid meter's, read again,
/// and both at once would count it twice.
public struct SetupPlan: Sendable, Equatable {
    /// The devices recognized, in the order they are named in the config.
    public var devices: [String]
    /// Up to 3, as the widget draws.
    public var production: [NodeDraft] = []
    public var grid: NodeDraft?
    public var battery: NodeDraft?
    public var keepalives: [String] = []
    /// Readings of recognized devices that were not used, with why.
    public var leftOut: [LeftOut] = []
    /// Topics of no recognized device that carry numbers and look like readings.
    public var unplaced: [Unplaced] = []
    /// Topics of the plan heard only as the broker's retained copy: a device replaced long ago
    /// leaves those behind, so the config says so beside them.
    public var retainedOnly: Set<String> = []

    /// A topic no layout knows, and the fields in it that look like readings.
    public struct Unplaced: Sendable, Equatable, CustomStringConvertible {
        public var topic: String
        /// JSON paths that look like readings (`ENERGY.Power`); empty for a bare number.
        public var fields: [String]
        /// The source keys that read a payload that is neither text nor JSON (`format: keyvalue, key: pwr`).
        public var format: String? = nil

        /// `custom/meter (Leistung, Spannung)`, `modbus/heater (decode: int16 or uint16 …)`.
        public var description: String {
            topic + (fields.isEmpty ? "" : " (\(fields.prefix(4).joined(separator: ", ")))") + (format.map { " (\($0))" } ?? "")
        }
    }

    /// The widget draws at most this many inputs.
    public static let maxInputs = 3

    public var isEmpty: Bool { production.isEmpty && grid == nil && battery == nil }

    /// The home's draw is derived when there is production and something to balance it with.
    public var derivesOutput: Bool { !production.isEmpty && (grid != nil || battery != nil) }

    init(catalog: TopicCatalog, layouts: [any DeviceLayout]) {
        let index = TopicIndex(catalog)
        let recognitions = layouts.flatMap { $0.recognize(index) }
        devices = recognitions.map(\.device)
        keepalives = Array(Set(recognitions.flatMap(\.keepalives))).sorted()
        leftOut = recognitions.flatMap(\.leftOut)
        var offers: [(node: NodeDraft, recognition: Recognition)] = []
        for recognition in recognitions {
            for node in recognition.nodes { offers.append((node, recognition)) }
        }
        for role in Role.allCases {
            let candidates = offers.filter { $0.node.role == role }
            guard let best = candidates.map(\.recognition.standing).max() else { continue }
            var chosen = candidates.filter { $0.recognition.standing == best }
            let limit = role == .production ? Self.maxInputs : 1
            for skipped in candidates where skipped.recognition.standing < best {
                leftOut.append(LeftOut(
                    skipped.node.terms.map(\.source.topic).joined(separator: ", "),
                    "\(skipped.recognition.device) republishes the \(role.rawValue); \(chosen[0].recognition.device) is read directly"))
            }
            for extra in chosen.dropFirst(limit) {
                leftOut.append(LeftOut(
                    extra.node.terms.map(\.source.topic).joined(separator: ", "),
                    role == .production
                        ? "\(extra.recognition.device): the widget draws at most \(Self.maxInputs) inputs"
                        : "\(extra.recognition.device) also offers the \(role.rawValue); \(chosen[0].recognition.device) is used"))
            }
            chosen = Array(chosen.prefix(limit))
            switch role {
            case .production: production = chosen.map(\.node)
            case .grid: grid = chosen.first?.node
            case .battery: battery = chosen.first?.node
            }
        }
        let used = (production + [grid, battery].compactMap { $0 }).flatMap(\.sources).map(\.topic)
        retainedOnly = Set(used.filter { catalog[$0]?.retainedOnly == true })
        let claimed = recognitions.reduce(into: Set<String>()) { $0.formUnion($1.claimed) }
        unplaced = index.topics.compactMap { topic in
            guard !claimed.contains(topic), !topic.hasPrefix("flowbridge/"), let record = catalog[topic] else { return nil }
            guard record.reading != nil else { return Self.otherFormat(topic: topic, record) }
            if let json = record.json {
                let fields = Self.readingFields(json, topic: topic)
                return fields.isEmpty ? nil : Unplaced(topic: topic, fields: fields)
            }
            return NameHint.matches(topic, NameHint.energyWords) ? Unplaced(topic: topic, fields: []) : nil
        }
    }

    /// Number fields whose path, or whose topic, says power, energy or the like (`ENERGY.Power`,
    /// or `value` on `…/battery/power`).
    static func readingFields(_ json: JSONValue, topic: String, path: String = "") -> [String] {
        switch json {
        case .number:
            return NameHint.matches(topic + "/" + path, NameHint.energyWords) ? [path] : []
        case .object(let members):
            return members.keys.sorted().flatMap { key in
                readingFields(members[key]!, topic: topic, path: path.isEmpty ? key : "\(path).\(key)")
            }
        default:
            return []
        }
    }
}
