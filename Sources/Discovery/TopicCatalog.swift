import FlowCore

/// Everything heard on the broker, one record per topic: its latest payload, the latest that
/// carried a number, and whether it was only ever the broker's retained copy. Bounded, since `#` on a busy broker (Home Assistant, Victron) is thousands
/// of topics.
public struct TopicCatalog: Sendable {
    public struct Record: Sendable, Equatable {
        /// Every message so far was the broker's retained copy.
        public var retainedOnly = true
        /// The latest payload with a number in it (a bare number, or JSON with a number inside).
        /// nil while the topic only ever said "no value" (`{"value": null}`, an empty message, `nan`)
        /// or carried no number at all: such a topic cannot become a source that reads.
        public var reading: [UInt8]?
        /// The latest payload of any kind (an attribute such as `"W"`, a status such as `online`).
        public var latest: [UInt8] = []

        /// The latest reading's JSON object or array, when it is one (a bare number is not).
        public var json: JSONValue? {
            guard let reading, TopicCatalog.startsStructure(reading) else { return nil }
            return try? JSONValue(parsing: reading)
        }

        /// The latest reading as a bare number (`612.4`, `"19.6"`), when it is one.
        public var number: Double? {
            guard let reading, case .value(let value) = PayloadDecoder().decode(reading) else { return nil }
            return value
        }

        /// The latest reading's number at `path`, as the engine would read it.
        public func number(at path: String) -> Double? {
            guard let reading, let path = try? JSONPath(path), case .value(let value) = PayloadDecoder(path: path).decode(reading) else {
                return nil
            }
            return value
        }

        /// The latest payload as text (attributes and statuses).
        public var latestText: String { String(decoding: latest, as: UTF8.self) }
    }

    /// No meter writes this much for a few numbers; bigger payloads are counted, not kept.
    public static let maxPayloadBytes = 16_384
    /// What the catalog keeps at most, topics and payloads (bytes): a Home Assistant with
    /// statestream's attributes on is tens of thousands of topics, and all of them fit; a topic
    /// heard once the catalog is full is counted, not kept.
    public static let maxBytes = 32 << 20

    public private(set) var records: [String: Record] = [:]
    public private(set) var messages = 0
    /// Topics heard after the catalog was full.
    public private(set) var overflowTopics = 0
    /// The bytes kept: every topic's name, latest payload and latest reading.
    public private(set) var keptBytes = 0

    public init() {}

    public mutating func hear(topic: String, payload: [UInt8], retained: Bool) {
        messages += 1
        let kept = payload.count <= Self.maxPayloadBytes
        let holdsNumber = kept && Self.holdsNumber(payload)
        var record: Record
        if let known = records[topic] {
            record = known
        } else {
            guard keptBytes + topic.utf8.count + 2 * payload.count <= Self.maxBytes else {
                overflowTopics += 1
                return
            }
            record = Record()
            keptBytes += topic.utf8.count
        }
        record.retainedOnly = record.retainedOnly && retained
        if kept {
            keptBytes += payload.count - record.latest.count
            record.latest = payload
            if holdsNumber {
                keptBytes += payload.count - (record.reading?.count ?? 0)
                record.reading = payload
            }
        }
        records[topic] = record
    }

    public subscript(topic: String) -> Record? { records[topic] }

    /// A bare number, or JSON with a number somewhere inside.
    static func holdsNumber(_ payload: [UInt8]) -> Bool {
        if case .value = PayloadDecoder().decode(payload) { return true }
        guard startsStructure(payload), let json = try? JSONValue(parsing: payload) else { return false }
        return containsNumber(json)
    }

    /// The payload starts with `{` or `[` (after spaces).
    static func startsStructure(_ payload: [UInt8]) -> Bool {
        let first = payload.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
    }

    static func containsNumber(_ value: JSONValue) -> Bool {
        switch value {
        case .number: true
        case .object(let members): members.values.contains(where: containsNumber)
        case .array(let items): items.contains(where: containsNumber)
        default: false
        }
    }
}
