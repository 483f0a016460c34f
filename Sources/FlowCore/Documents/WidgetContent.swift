import FoundationEssentials

/// The content of a widget, in one of the two templates flowbridge feeds
/// (`spec/flow-template.txt`, `spec/progress-template.txt`).
///
/// The models keep what the spec lets a sender get wrong (a missing rate, a date text) so that
/// `validate(now:)` can name the broken rule instead of a decoder failing on the first one; a trend
/// is one of its three words or none, and a word the spec does not know fails the decoding, as a
/// field of the wrong type does. A document that `validate` passes is one the widget API accepts.
///
/// `indirect`: a document passes through the patch policy, the push and every sink, and a boxed
/// one is copied as a reference; inline, each copy moved the whole flow (measured: a flow pushed
/// at every reading took 5 % more CPU than the flow alone).
public indirect enum WidgetContent: Sendable, Equatable {
    case flow(FlowContent)
    case progress(ProgressContent)
}

/// The fields every template shares.
public struct SharedContent: Sendable, Equatable {
    public var label: String?
    public var subtitle: String?
    public var icon: String?
    public var accentColor: String?
    public var backgroundColor: String?
    public var textColor: String?

    public init(
        label: String? = nil, subtitle: String? = nil, icon: String? = nil, accentColor: String? = nil,
        backgroundColor: String? = nil, textColor: String? = nil
    ) {
        self.label = label
        self.subtitle = subtitle
        self.icon = icon
        self.accentColor = accentColor
        self.backgroundColor = backgroundColor
        self.textColor = textColor
    }
}

/// One node of a flow: an input, the output, the storage or the exchange.
public struct FlowNode: Sendable, Equatable {
    public var name: String?
    /// Required by the spec; optional here only so that validation can say it is missing.
    public var rate: Double?
    /// Energy so far today (kWh).
    public var total: Double?
    /// Fill percentage; drawn on the storage slot only.
    public var level: Double?
    public var icon: String?
    public var color: String?

    public init(
        name: String? = nil, rate: Double?, total: Double? = nil, level: Double? = nil, icon: String? = nil,
        color: String? = nil
    ) {
        self.name = name
        self.rate = rate
        self.total = total
        self.level = level
        self.icon = icon
        self.color = color
    }
}

extension FlowContent {
    /// The node the config puts at `place`, as this document shows it, or nil. The inputs of a
    /// document carry no position (an input with nothing to show is left out, and the next moves
    /// up): all of them are there, or the configured name (`inputNames`, the config's, in order)
    /// tells which one it is, if no other input has it; otherwise which one is unknown. Home
    /// Assistant's sensors and `/metrics` read a node's value by it.
    public func node(configured place: NodePlace, inputNames names: [String?]) -> FlowNode? {
        switch place {
        case .output: return output
        case .storage: return storage
        case .exchange: return exchange
        case .input(let index):
            let shown = inputs ?? []
            if shown.count == names.count { return index < shown.count ? shown[index] : nil }
            guard index < names.count, let name = names[index], names.filter({ $0 == name }).count == 1 else { return nil }
            return shown.first { $0.name == name }
        }
    }
}

/// The four slots of the flow template.
public enum FlowSlot: String, Sendable, CaseIterable, Hashable {
    case inputs, output, storage, exchange
}

public struct FlowContent: Sendable, Equatable {
    public var shared: SharedContent
    /// Content-level unit of every rate ("W").
    public var unit: String?
    public var inputs: [FlowNode]?
    public var output: FlowNode?
    public var storage: FlowNode?
    public var exchange: FlowNode?

    public init(
        shared: SharedContent = SharedContent(), unit: String? = nil, inputs: [FlowNode]? = nil,
        output: FlowNode? = nil, storage: FlowNode? = nil, exchange: FlowNode? = nil
    ) {
        self.shared = shared
        self.unit = unit
        self.inputs = inputs
        self.output = output
        self.storage = storage
        self.exchange = exchange
    }

    /// Whether the content draws `slot`. A test of the optional's case: `output != nil` copies
    /// the node (its texts retained and released) at every message.
    public func draws(_ slot: FlowSlot) -> Bool {
        switch slot {
        case .inputs: if case .some = inputs { true } else { false }
        case .output: if case .some = output { true } else { false }
        case .storage: if case .some = storage { true } else { false }
        case .exchange: if case .some = exchange { true } else { false }
        }
    }
}

public struct StatRow: Sendable, Equatable {
    public var label: String
    public var value: String
    public var unit: String?

    public init(label: String, value: String, unit: String? = nil) {
        self.label = label
        self.value = value
        self.unit = unit
    }
}

public struct ProgressContent: Sendable, Equatable {
    /// Which way the bar is going, in the spec's words (`up`, `down`, `flat`).
    public enum Trend: String, Sendable, CaseIterable {
        case up, down, flat
    }

    public var shared: SharedContent
    /// A fraction in 0…1; optional only when both dates are set.
    public var value: Double?
    public var trend: Trend?
    public var statRows: [StatRow]?
    /// RFC 3339 texts, as sent.
    public var startDate: String?
    public var endDate: String?

    public init(
        shared: SharedContent = SharedContent(), value: Double?, trend: Trend? = nil, statRows: [StatRow]? = nil,
        startDate: String? = nil, endDate: String? = nil
    ) {
        self.shared = shared
        self.value = value
        self.trend = trend
        self.statRows = statRows
        self.startDate = startDate
        self.endDate = endDate
    }
}

// MARK: - Rules

/// A spec rule that a document breaks, with the field it concerns.
public struct ContentViolation: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Rule: Sendable, Equatable {
        case notAnObject
        case templateValue
        case wrongType(expected: String)
        case unknownField
        case noSlot
        case tooManyInputs
        case rateRequired
        case notFinite
        case textTooLong(limit: Int)
        case colorFormat
        case totalNegative
        case levelOutOfRange
        case levelOutsideStorage
        case valueRequired
        case valueOutOfRange
        case trendValue
        case tooManyStatRows
        case dateFormat
        case dateTooEarly
        case dateTooFarAhead
        case dateOrder
    }

    /// Where in the content: `flow.inputs[1].name`, `start_date`.
    public var path: String
    public var rule: Rule

    public init(_ path: String, _ rule: Rule) {
        self.path = path
        self.rule = rule
    }

    public var description: String {
        let what: String
        switch rule {
        case .notAnObject: what = "content must be an object"
        case .templateValue: what = #"template must be "flow" or "progress""#
        case .wrongType(let expected): what = "must be \(expected)"
        case .unknownField: what = "is not a field of this template"
        case .noSlot: what = "needs at least one of inputs, output, storage, exchange"
        case .tooManyInputs: what = "holds more than 3 inputs"
        case .rateRequired: what = "rate is required on every node"
        case .notFinite: what = "must be a finite number"
        case .textTooLong(let limit): what = "is longer than \(limit) characters"
        case .colorFormat: what = "must be a named color (letters: yellow) or hex (#FFCC00)"
        case .totalNegative: what = "must not be negative"
        case .levelOutOfRange: what = "must be between 0 and 100"
        case .levelOutsideStorage: what = "level is only read on the storage slot"
        case .valueRequired: what = "value is required unless both start_date and end_date are set"
        case .valueOutOfRange: what = "must be a fraction between 0 and 1"
        case .trendValue: what = "must be up, down or flat"
        case .tooManyStatRows: what = "holds more than 6 rows"
        case .dateFormat: what = "must be an RFC 3339 date-time"
        case .dateTooEarly: what = "must be after 2000-01-01"
        case .dateTooFarAhead: what = "must be no more than 366 days ahead"
        case .dateOrder: what = "start_date must be strictly before end_date"
        }
        return path.isEmpty ? what : "\(path): \(what)"
    }
}

// MARK: - Validation

extension WidgetContent {
    /// Every spec rule the document breaks, in document order; empty when the widget would take it.
    /// `now` bounds the dates ("no more than 366 days ahead").
    public func validate(now: Date) -> [ContentViolation] {
        var found: [ContentViolation] = []
        switch self {
        case .flow(let flow): flow.validate(into: &found)
        case .progress(let progress): progress.validate(now: now, into: &found)
        }
        return found
    }
}

/// Text limits count what a person sees (grapheme clusters): "Sonnenstrom ☀️" is 13 characters.
/// A text of no more UTF-8 bytes than the limit has no more characters, so only a longer one is
/// counted; and the path is made only for a violation (documents are checked at every push).
private func checkLength(_ text: String?, limit: Int, _ path: @autoclosure () -> String, into found: inout [ContentViolation]) {
    if let text, text.utf8.count > limit, text.count > limit { found.append(ContentViolation(path(), .textTooLong(limit: limit))) }
}

extension SharedContent {
    func validate(into found: inout [ContentViolation]) {
        checkLength(icon, limit: 128, "icon", into: &found)
    }
}

extension FlowContent {
    func validate(into found: inout [ContentViolation]) {
        shared.validate(into: &found)
        checkLength(unit, limit: 32, "unit", into: &found)
        if inputs == nil && output == nil && storage == nil && exchange == nil {
            found.append(ContentViolation("flow", .noSlot))
        }
        if let inputs {
            if inputs.count > 3 { found.append(ContentViolation("flow.inputs", .tooManyInputs)) }
            for (index, node) in inputs.enumerated() {
                node.validate(path: "flow.inputs[\(index)]", isStorage: false, into: &found)
            }
        }
        output?.validate(path: "flow.output", isStorage: false, into: &found)
        storage?.validate(path: "flow.storage", isStorage: true, into: &found)
        exchange?.validate(path: "flow.exchange", isStorage: false, into: &found)
    }
}

extension FlowNode {
    /// `path` is made only for a violation.
    func validate(path: @autoclosure () -> String, isStorage: Bool, into found: inout [ContentViolation]) {
        if let rate {
            if !rate.isFinite { found.append(ContentViolation("\(path()).rate", .notFinite)) }
        } else {
            found.append(ContentViolation("\(path()).rate", .rateRequired))
        }
        checkLength(name, limit: 32, "\(path()).name", into: &found)
        if let total {
            if !total.isFinite {
                found.append(ContentViolation("\(path()).total", .notFinite))
            } else if total < 0 {
                found.append(ContentViolation("\(path()).total", .totalNegative))
            }
        }
        if let level {
            if !isStorage {
                found.append(ContentViolation("\(path()).level", .levelOutsideStorage))
            } else if !(0...100).contains(level) {
                found.append(ContentViolation("\(path()).level", .levelOutOfRange))
            }
        }
        checkLength(icon, limit: 128, "\(path()).icon", into: &found)
        if let color, !Self.isColor(color) { found.append(ContentViolation("\(path()).color", .colorFormat)) }
    }

    /// A node's color is "a named color or hex": a name is ASCII letters (`yellow`, `mint`), a hex
    /// color `#` with 3, 4, 6 or 8 hex digits (`#fc0`, `#FFCC00`, `#FFCC0080`). The config loader
    /// asks the same, so that `check` refuses what the widget would.
    public static func isColor(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.first == UInt8(ascii: "#") else {
            return !bytes.isEmpty && bytes.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        }
        let digits = bytes.dropFirst()
        switch digits.count {
        case 3, 4, 6, 8: return digits.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
        default: return false
        }
    }
}

extension ProgressContent {
    static let earliestDate = Date(timeIntervalSince1970: 946_684_800)  // 2000-01-01T00:00:00Z
    /// The spec's bound: a date no more than 366 days ahead.
    static let latestDateSeconds = 366.0 * 86_400

    func validate(now: Date, into found: inout [ContentViolation]) {
        shared.validate(into: &found)
        let bothDates = startDate != nil && endDate != nil
        if let value {
            if !(0...1).contains(value) { found.append(ContentViolation("value", .valueOutOfRange)) }
        } else if !bothDates {
            found.append(ContentViolation("value", .valueRequired))
        }
        if let statRows {
            if statRows.count > 6 { found.append(ContentViolation("stat_rows", .tooManyStatRows)) }
            for (index, row) in statRows.enumerated() {
                checkLength(row.label, limit: 32, "stat_rows[\(index)].label", into: &found)
                checkLength(row.value, limit: 32, "stat_rows[\(index)].value", into: &found)
                checkLength(row.unit, limit: 16, "stat_rows[\(index)].unit", into: &found)
            }
        }
        let start = Self.checkDate(startDate, "start_date", now: now, into: &found)
        let end = Self.checkDate(endDate, "end_date", now: now, into: &found)
        if let start, let end, start >= end { found.append(ContentViolation("start_date", .dateOrder)) }
    }

    static func checkDate(_ text: String?, _ path: String, now: Date, into found: inout [ContentViolation]) -> Date? {
        guard let text else { return nil }
        guard let date = RFC3339.parse(text) else {
            found.append(ContentViolation(path, .dateFormat))
            return nil
        }
        if date <= earliestDate { found.append(ContentViolation(path, .dateTooEarly)) }
        if date > now.addingTimeInterval(latestDateSeconds) { found.append(ContentViolation(path, .dateTooFarAhead)) }
        return date
    }
}

// MARK: - JSON

extension WidgetContent {
    /// The document as the widget API takes it inside `{"content": …}`.
    public var json: JSONValue {
        switch self {
        case .flow(let flow): flow.json
        case .progress(let progress): progress.json
        }
    }

    /// Reads a content document. Fails on the structural rules (not an object, unknown template,
    /// a field of the wrong type or unknown to the template); the others are `validate(now:)`'s.
    public init(json: JSONValue) throws(ContentViolation) {
        var reader = try JSONObjectReader(json, path: "")
        switch try reader.string("template") {
        case "flow": self = .flow(try FlowContent(reading: &reader))
        case "progress": self = .progress(try ProgressContent(reading: &reader))
        default: throw ContentViolation("template", .templateValue)
        }
        try reader.finish()
    }
}

/// Reads the members of one JSON object, remembering which it took so that leftovers are reported.
struct JSONObjectReader {
    let members: [String: JSONValue]
    let path: String
    var taken: Set<String> = []

    init(_ value: JSONValue, path: String) throws(ContentViolation) {
        guard case .object(let members) = value else {
            throw ContentViolation(path, path.isEmpty ? .notAnObject : .wrongType(expected: "an object"))
        }
        self.members = members
        self.path = path
    }

    func childPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    mutating func value(_ key: String) -> JSONValue? {
        taken.insert(key)
        return members[key]
    }

    mutating func string(_ key: String) throws(ContentViolation) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            throw ContentViolation(childPath(key), .wrongType(expected: "a text"))
        }
        return text
    }

    mutating func number(_ key: String) throws(ContentViolation) -> Double? {
        guard let value = value(key) else { return nil }
        guard case .number(let number) = value else {
            throw ContentViolation(childPath(key), .wrongType(expected: "a number"))
        }
        return number
    }

    mutating func array(_ key: String) throws(ContentViolation) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else {
            throw ContentViolation(childPath(key), .wrongType(expected: "an array"))
        }
        return items
    }

    mutating func object(_ key: String) throws(ContentViolation) -> JSONObjectReader? {
        guard let value = value(key) else { return nil }
        return try JSONObjectReader(value, path: childPath(key))
    }

    func finish() throws(ContentViolation) {
        if let extra = members.keys.filter({ !taken.contains($0) }).sorted(by: JSONValue.keyOrder).first {
            throw ContentViolation(childPath(extra), .unknownField)
        }
    }
}

/// Builds a JSON object from optional members, leaving out the absent ones.
struct JSONObjectBuilder {
    var members: [String: JSONValue] = [:]

    mutating func set(_ key: String, _ value: String?) {
        if let value { members[key] = .string(value) }
    }

    mutating func set(_ key: String, _ value: Double?) {
        if let value { members[key] = .number(value) }
    }

    mutating func set(_ key: String, _ value: JSONValue?) {
        if let value { members[key] = value }
    }

    var json: JSONValue { .object(members) }
}

extension SharedContent {
    /// The wire names of the shared fields. Key paths are immutable values and the array is never
    /// written, which is why it may be shared unchecked.
    nonisolated(unsafe) static let keys: [(String, WritableKeyPath<SharedContent, String?>)] = [
        ("label", \.label), ("subtitle", \.subtitle), ("icon", \.icon), ("accent_color", \.accentColor),
        ("background_color", \.backgroundColor), ("text_color", \.textColor),
    ]

    init(reading reader: inout JSONObjectReader) throws(ContentViolation) {
        self.init()
        for (key, field) in Self.keys { self[keyPath: field] = try reader.string(key) }
    }

    func write(to builder: inout JSONObjectBuilder) {
        for (key, field) in Self.keys { builder.set(key, self[keyPath: field]) }
    }
}

extension FlowNode {
    init(reading value: JSONValue, path: String) throws(ContentViolation) {
        var reader = try JSONObjectReader(value, path: path)
        self.init(
            name: try reader.string("name"), rate: try reader.number("rate"), total: try reader.number("total"),
            level: try reader.number("level"), icon: try reader.string("icon"), color: try reader.string("color"))
        try reader.finish()
    }

    /// A field of a node: its wire name, whether two nodes differ in it, and its JSON value (nil:
    /// absent). One table serves both the document and the node-level patch, so the two cannot
    /// disagree; the comparison is typed, so a patch makes JSON only of what changed. An enum, in
    /// key order (the order a patch's text is written in): walking it copies nothing.
    enum Field: Int, CaseIterable {
        case color, icon, level, name, rate, total

        var key: String {
            switch self {
            case .color: "color"
            case .icon: "icon"
            case .level: "level"
            case .name: "name"
            case .rate: "rate"
            case .total: "total"
            }
        }

        func differs(_ old: FlowNode, _ new: FlowNode) -> Bool {
            switch self {
            case .color: old.color != new.color
            case .icon: old.icon != new.icon
            case .level: old.level != new.level
            case .name: old.name != new.name
            case .rate: old.rate != new.rate
            case .total: old.total != new.total
            }
        }

        func value(_ node: FlowNode) -> JSONValue? {
            switch self {
            case .color: node.color.map(JSONValue.string)
            case .icon: node.icon.map(JSONValue.string)
            case .level: node.level.map(JSONValue.number)
            case .name: node.name.map(JSONValue.string)
            case .rate: node.rate.map(JSONValue.number)
            case .total: node.total.map(JSONValue.number)
            }
        }
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [:]
        members.reserveCapacity(Field.allCases.count)
        for field in Field.allCases { members[field.key] = field.value(self) }
        return .object(members)
    }
}

extension FlowContent {
    init(reading reader: inout JSONObjectReader) throws(ContentViolation) {
        self.init(shared: try SharedContent(reading: &reader), unit: try reader.string("unit"))
        guard var flow = try reader.object("flow") else {
            throw ContentViolation("flow", .noSlot)
        }
        func node(_ slot: FlowSlot) throws(ContentViolation) -> FlowNode? {
            guard let value = flow.value(slot.rawValue) else { return nil }
            return try FlowNode(reading: value, path: flow.childPath(slot.rawValue))
        }
        if let items = try flow.array("inputs") {
            var nodes: [FlowNode] = []
            for (index, item) in items.enumerated() {
                nodes.append(try FlowNode(reading: item, path: "flow.inputs[\(index)]"))
            }
            inputs = nodes
        }
        output = try node(.output)
        storage = try node(.storage)
        exchange = try node(.exchange)
        try flow.finish()
    }

    public var json: JSONValue {
        var flow = JSONObjectBuilder()
        flow.set("inputs", inputs.map { JSONValue.array($0.map(\.json)) })
        flow.set("output", output?.json)
        flow.set("storage", storage?.json)
        flow.set("exchange", exchange?.json)
        var builder = JSONObjectBuilder()
        shared.write(to: &builder)
        builder.set("template", "flow")
        builder.set("unit", unit)
        builder.set("flow", flow.json)
        return builder.json
    }
}

extension StatRow {
    init(reading value: JSONValue, path: String) throws(ContentViolation) {
        var reader = try JSONObjectReader(value, path: path)
        guard let label = try reader.string("label") else {
            throw ContentViolation("\(path).label", .wrongType(expected: "a text"))
        }
        guard let value = try reader.string("value") else {
            throw ContentViolation("\(path).value", .wrongType(expected: "a text"))
        }
        self.init(label: label, value: value, unit: try reader.string("unit"))
        try reader.finish()
    }

    public var json: JSONValue {
        var builder = JSONObjectBuilder()
        builder.set("label", label)
        builder.set("value", value)
        builder.set("unit", unit)
        return builder.json
    }
}

extension ProgressContent {
    init(reading reader: inout JSONObjectReader) throws(ContentViolation) {
        shared = try SharedContent(reading: &reader)
        value = try reader.number("value")
        if let word = try reader.string("trend") {
            guard let trend = Trend(rawValue: word) else { throw ContentViolation(reader.childPath("trend"), .trendValue) }
            self.trend = trend
        }
        if let items = try reader.array("stat_rows") {
            var rows: [StatRow] = []
            for (index, item) in items.enumerated() {
                rows.append(try StatRow(reading: item, path: "stat_rows[\(index)]"))
            }
            statRows = rows
        }
        startDate = try reader.string("start_date")
        endDate = try reader.string("end_date")
    }

    /// The wire names of the template's own fields with their JSON values (nil: absent). One table
    /// serves both the document and its patch, so the two cannot disagree.
    static let fields: [(String, @Sendable (ProgressContent) -> JSONValue?)] = [
        ("value", { $0.value.map(JSONValue.number) }), ("trend", { $0.trend.map { JSONValue.string($0.rawValue) } }),
        ("stat_rows", { $0.statRows.map { JSONValue.array($0.map(\.json)) } }),
        ("start_date", { $0.startDate.map(JSONValue.string) }), ("end_date", { $0.endDate.map(JSONValue.string) }),
    ]

    public var json: JSONValue {
        var builder = JSONObjectBuilder()
        shared.write(to: &builder)
        builder.set("template", "progress")
        for (key, value) in Self.fields { builder.set(key, value(self)) }
        return builder.json
    }
}
