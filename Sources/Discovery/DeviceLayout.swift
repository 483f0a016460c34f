import FlowCore

/// One device family's topic layout: recognizes its topics in what was heard and says what they
/// mean for the widget, with the units and signs the device documents.
protocol DeviceLayout: Sendable {
    func recognize(_ catalog: TopicIndex) -> [Recognition]
}

/// A number a device publishes, ready to become a source of the config.
public struct SourceDraft: Sendable, Equatable {
    /// The source name to use, unless another source has it already.
    public var name: String
    public var topic: String
    public var json: String?
    public var unit: SourceUnit
    public var invert: Bool
    /// `stale_after`, when the device's rhythm needs one of its own (`11m`, `never`).
    public var staleAfter: String?
    /// A wildcard topic whose matches add up (`combine: sum`): one reading per inverter.
    public var sumsMatches: Bool
    /// Why this topic, path, unit and sign: a comment beside the source.
    public var note: String

    public init(
        name: String, topic: String, json: String? = nil, unit: SourceUnit = .watt, invert: Bool = false, staleAfter: String? = nil,
        sumsMatches: Bool = false, note: String
    ) {
        self.name = name
        self.topic = topic
        self.json = json
        self.unit = unit
        self.invert = invert
        self.staleAfter = staleAfter
        self.sumsMatches = sumsMatches
        self.note = note
    }
}

/// What a node's daily total is read from.
public enum TotalDraft: Sendable, Equatable {
    /// A word the config takes as is: `integrate`, `import`, `charge`.
    case word(String)
    /// A lifetime counter of the device.
    case counter(SourceDraft)
    /// The device's own daily counter.
    case daily(SourceDraft)
}

/// The slot a recognized reading feeds.
public enum Role: String, Sendable, CaseIterable {
    case production, grid, battery
}

/// One node of the widget as a device offers it.
public struct NodeDraft: Sendable, Equatable {
    public struct Term: Sendable, Equatable {
        public var source: SourceDraft
        public var negated = false
    }

    public var role: Role
    public var name: String
    /// Added up (negated terms subtracted): two inverters, three phases, import minus export.
    public var terms: [Term]
    public var total: TotalDraft
    /// Battery only: the fill level (%).
    public var level: SourceDraft?

    /// A node whose rate adds up `rate` (nothing subtracted).
    init(role: Role, name: String, rate: [SourceDraft], total: TotalDraft, level: SourceDraft? = nil) {
        self.init(role: role, name: name, terms: rate.map { Term(source: $0) }, total: total, level: level)
    }

    /// Every source the node reads: its terms, its counter, its level.
    var sources: [SourceDraft] {
        var all = terms.map(\.source)
        switch total {
        case .counter(let draft), .daily(let draft): all.append(draft)
        case .word: break
        }
        return all + [level].compactMap { $0 }
    }

    init(role: Role, name: String, terms: [Term], total: TotalDraft, level: SourceDraft? = nil) {
        self.role = role
        self.name = name
        self.terms = terms
        self.total = total
        self.level = level
    }
}

/// A device found in the catalog, and what it offers.
public struct Recognition: Sendable, Equatable {
    public enum Standing: Int, Sendable, Comparable {
        /// Republishes what other meters measure (evcc, Home Assistant): used only where no meter
        /// is read directly, since it would count the same panels or the same grid twice.
        case aggregator
        /// Reads its own meter or inverter.
        case meter

        public static func < (lhs: Standing, rhs: Standing) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// `OpenDTU, base topic solar`: what it is and where, for the header and the log.
    public var device: String
    public var standing: Standing
    public var nodes: [NodeDraft]
    /// Topics to publish to keep the device talking (Victron's `R/<portal>/keepalive`).
    public var keepalives: [String] = []
    /// Every topic that belongs to the device, used or not: none of them is listed as unplaced.
    public var claimed: Set<String>
    /// Readings of the device that were seen and left out.
    public var leftOut: [LeftOut] = []
}

extension Recognition {
    /// An energy plug measures whatever is plugged in: it is an input only when its name (`name`)
    /// says it is a balcony plant or an inverter; otherwise it is left out, with the line that
    /// would add it. `what` says which reading and which plug (`power: a Zigbee plug`).
    static func plug(device: String, name: String, claimed: Set<String>, rate: SourceDraft, total: TotalDraft, what: String) -> Recognition {
        var recognition = Recognition(device: device, standing: .meter, nodes: [], claimed: claimed)
        if NameHint.matches(name, NameHint.production) {
            recognition.nodes.append(NodeDraft(role: .production, name: "Balcony", rate: [rate], total: total))
        } else {
            recognition.leftOut.append(LeftOut(rate.topic, "\(what); if it feeds in a balcony plant, it is an input", suggestion: rate))
        }
        return recognition
    }
}

/// A reading seen and not placed: why, and where it helps, the source that would add it.
public struct LeftOut: Sendable, Equatable {
    public var topic: String
    public var why: String
    public var suggestion: SourceDraft?

    public init(_ topic: String, _ why: String, suggestion: SourceDraft? = nil) {
        self.topic = topic
        self.why = why
        self.suggestion = suggestion
    }
}

/// Topic levels, and the small tests the layouts make on them.
extension String {
    var levels: [Substring] { split(separator: "/", omittingEmptySubsequences: false) }
}

extension Substring {
    var isDigits: Bool { !isEmpty && allSatisfy(\.isASCIIDigit) }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

/// The catalog with its topics sorted once, for the layouts to scan and search: a broker carries
/// thousands of topics, and each layout looks at all of them.
struct TopicIndex {
    let catalog: TopicCatalog
    /// Every topic heard, sorted.
    let topics: [String]

    init(_ catalog: TopicCatalog) {
        self.catalog = catalog
        topics = catalog.records.keys.sorted()
    }

    subscript(topic: String) -> TopicCatalog.Record? { catalog[topic] }

    /// Topics that start with `prefix` + `/`: a binary search for the first, then the run of them.
    func topics(under prefix: String) -> [String] {
        let start = prefix + "/"
        var low = 0
        var high = topics.count
        while low < high {
            let middle = (low + high) / 2
            if topics[middle] < start { low = middle + 1 } else { high = middle }
        }
        return Array(topics[low...].prefix { $0.hasPrefix(start) })
    }

    /// True when the topic has carried a number (at `path` when given).
    func reads(_ topic: String, json path: String? = nil) -> Bool {
        guard let record = catalog[topic] else { return false }
        return path.map { record.number(at: $0) != nil } ?? (record.number != nil)
    }
}

/// Words that say what a reading is, in the names people and firmwares give (English and German).
enum NameHint {
    static let production = ["solar", "pv", "photovolta", "inverter", "wechselrichter", "balkon", "bkw", "yield", "ertrag", "mikro", "micro", "hoymiles", "deye", "growatt"]
    static let grid = ["grid", "netz", "mains", "utility", "smartmeter", "smart_meter", "zaehler", "zähler"]
    static let battery = ["battery", "batterie", "akku", "storage", "speicher"]
    static let level = ["soc", "state_of_charge", "level", "ladestand", "ladezustand"]
    static let importing = ["import", "consum", "bezug", "from_grid", "purchase", "buy"]
    static let exporting = ["export", "return", "feed", "einspeis", "to_grid", "sold", "sell"]
    static let charging = ["charg", "lade"]
    static let discharging = ["discharg", "entlade"]
    static let energyWords = ["power", "energy", "watt", "soc", "yield", "battery", "grid", "pv", "solar", "consum", "import", "export", "leistung", "bezug", "einspeis", "ertrag", "akku"]

    static func matches(_ text: String, _ words: [String]) -> Bool {
        let lower = text.lowercased()
        return words.contains { lower.contains($0) }
    }
}
