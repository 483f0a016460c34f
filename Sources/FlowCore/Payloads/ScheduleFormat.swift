import FoundationEssentials

/// One slot of a price schedule as a payload wrote it: a price in force from `start` to `end`,
/// in the source's unit (before unit, scale and sign). `price` nil: the feed has no price for it
/// (`null`, `nan`, `unavailable`: Nord Pool's hours not yet published), and the slot says nothing.
public struct ScheduleSlot: Sendable, Equatable {
    public var start: Date
    public var end: Date
    public var price: Double?

    public init(start: Date, end: Date, price: Double?) {
        self.start = start
        self.end = end
        self.price = price
    }
}

/// Reads a price schedule out of an MQTT payload (`schedule:` on a price source): a JSON list of
/// slots, each a price with the times it is in force, as price feeds publish them ahead:
///
/// - evcc's `evcc/site/forecast/grid` (and `…/feedIn`), from 0.203 on: `[{"start":
///   "2026-06-01T14:00:00+02:00", "end": "2026-06-01T14:15:00+02:00", "value": 0.312}, …]` (its
///   `api.Rate`, the currency per kWh; before 0.203 the price was `price`);
/// - evcc's later arrays `[[1780315200, 1780316100, 0.312], …]` (start and end in Unix seconds);
/// - a Home Assistant day-ahead list forwarded to MQTT: the Nord Pool integration's `raw_today`
///   and `raw_tomorrow` (`{"start", "end", "value"}`, the currency per kWh by default), EPEX
///   Spot's `data` (`{"start_time", "end_time", "price_per_kwh"}`): the keys are the config's.
///
/// Each time is RFC 3339 text with its zone (`Z` or `+02:00`) or a number of Unix seconds. A time
/// without a zone is refused: it could be any of 38 offsets, and a price an hour off bills every
/// slot wrong. A list is taken whole or not at all: slots that end before they start, that overlap,
/// or more than `maxSlots` of them make the list refused, with the reason.
public struct ScheduleFormat: Sendable, Hashable {
    /// The keys of a slot object: where its start, end and price are.
    public var startKey: String
    public var endKey: String
    public var priceKey: String

    /// Nine days of 15-minute slots: more is no day-ahead list, and the memory stays bounded.
    public static let maxSlots = 864
    /// Times a slot may have: 2000 to 2200, as the state file's. Anything else is a wrong unit
    /// (milliseconds) or a damaged list.
    static let plausibleSeconds: ClosedRange<Double> = 946_684_800...7_258_118_400

    public init(startKey: String = "start", endKey: String = "end", priceKey: String = "value") {
        self.startKey = startKey
        self.endKey = endKey
        self.priceKey = priceKey
    }

    /// What a payload says.
    public enum Decoded: Sendable, Equatable {
        /// The slots, sorted by start, none overlapping another.
        case slots([ScheduleSlot])
        /// An empty payload or `null`: the feed erased its schedule (evcc does on shutdown). It
        /// takes back no price already known.
        case noSchedule
        case invalid(PayloadError)
    }

    /// The list at `path` in `payload` (the whole payload without a path).
    public func decode(_ payload: [UInt8], path: JSONPath?) -> Decoded {
        let text = PayloadDecoder.trimmed(payload[...])
        if text.isEmpty { return .noSchedule }
        let document: JSONValue
        do { document = try JSONValue(parsing: Array(text)) } catch {
            return .invalid(PayloadShape.of(payload).error(payload: payload) ?? PayloadError(.schedule, "not JSON (\(error))"))
        }
        var list = document
        for step in path?.steps ?? [] {
            switch step {
            case .key(let key): list = list[key] ?? .null
            case .index(let index): list = list.arrayValue.flatMap { index < $0.count ? $0[index] : nil } ?? .null
            }
        }
        if list == .null { return path == nil ? .noSchedule : .invalid(PayloadError(.schedule, "no list at \(path!)")) }
        guard let items = list.arrayValue else {
            return .invalid(PayloadError(.schedule, "\(path.map { "\($0) is" } ?? "the payload is") \(list.kindDescription), not a list of slots"))
        }
        guard items.count <= Self.maxSlots else {
            return .invalid(PayloadError(.schedule, "\(items.count) slots are more than the \(Self.maxSlots) a schedule may hold (nine days of 15 minutes)"))
        }
        var slots: [ScheduleSlot] = []
        slots.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            switch slot(item) {
            case .success(let slot): slots.append(slot)
            case .failure(let error): return .invalid(PayloadError(.schedule, "slot \(index + 1): \(error.description)"))
            }
        }
        slots.sort { $0.start < $1.start }
        for (earlier, later) in zip(slots, slots.dropFirst()) where earlier.end > later.start {
            return .invalid(PayloadError(.schedule, "the slots \(Self.text(earlier)) and \(Self.text(later)) overlap: which price is in force there?"))
        }
        return .slots(slots)
    }

    public struct SlotError: Error, CustomStringConvertible {
        public var description: String
    }

    /// A slot written as text fields (a row of a price list, `PriceFile`): judged as a payload's
    /// `[start, end, price]` is. A field that reads as a number is one (Unix seconds, a price); an
    /// empty price is none.
    public static func slot(start: String, end: String, price: String) -> Result<ScheduleSlot, SlotError> {
        func value(_ field: String) -> JSONValue {
            if field.isEmpty { return .null }
            if case .value(let number) = PayloadDecoder().number(in: Array(field.utf8)[...], quoted: false) { return .number(number) }
            return .string(field)
        }
        return ScheduleFormat().slot(.array([value(start), value(end), value(price)]))
    }

    /// One slot: an object with the three keys, or an array `[start, end, price]`.
    func slot(_ item: JSONValue) -> Result<ScheduleSlot, SlotError> {
        let fields: (start: JSONValue?, end: JSONValue?, price: JSONValue?)
        switch item {
        case .object(let members): fields = (members[startKey], members[endKey], members[priceKey])
        case .array(let members) where members.count == 3: fields = (members[0], members[1], members[2])
        default:
            return .failure(SlotError(description: "\(item.kindDescription), not a slot ({\"\(startKey)\": …, \"\(endKey)\": …, \"\(priceKey)\": …} or [start, end, price])"))
        }
        guard let startValue = fields.start else { return .failure(SlotError(description: "no \"\(startKey)\"")) }
        guard let endValue = fields.end else { return .failure(SlotError(description: "no \"\(endKey)\"")) }
        guard let priceValue = fields.price else { return .failure(SlotError(description: "no \"\(priceKey)\"")) }
        let start: Date
        let end: Date
        switch (Self.time(startValue), Self.time(endValue)) {
        case (.success(let first), .success(let second)): (start, end) = (first, second)
        case (.failure(let error), _), (_, .failure(let error)): return .failure(error)
        }
        guard end > start else {
            return .failure(SlotError(description: "ends at \(RFC3339.format(end)), not after its start \(RFC3339.format(start))"))
        }
        let price: Double?
        switch priceValue {
        case .number(let number): price = number + 0.0
        case .null: price = nil
        case .string(let text):
            switch PayloadDecoder().number(in: Array(text.utf8)[...], quoted: true) {
            case .value(let number): price = number
            case .noReading: price = nil
            default: return .failure(SlotError(description: "the price \"\(PayloadDecoder.excerpt(Array(text.utf8)))\" is not a number"))
            }
        default: return .failure(SlotError(description: "the price is \(priceValue.kindDescription), not a number"))
        }
        return .success(ScheduleSlot(start: start, end: end, price: price))
    }

    /// An RFC 3339 time with its zone, or Unix seconds.
    static func time(_ value: JSONValue) -> Result<Date, SlotError> {
        switch value {
        case .number(let seconds):
            guard plausibleSeconds.contains(seconds) else {
                return .failure(SlotError(description: "\(JSONValue.format(seconds)) is not a time in Unix seconds (milliseconds?)"))
            }
            return .success(Date(timeIntervalSince1970: seconds))
        case .string(let text):
            if let date = RFC3339.parse(text), plausibleSeconds.contains(date.timeIntervalSince1970) { return .success(date) }
            let shown = PayloadDecoder.excerpt(Array(text.utf8))
            if RFC3339.parse(text + "Z") != nil {
                return .failure(SlotError(description: "'\(shown)' has no zone (Z or +01:00): a local time could be any offset, so the list is not read"))
            }
            return .failure(SlotError(description: "'\(shown)' is not an RFC 3339 time (2026-06-01T14:00:00+02:00)"))
        default:
            return .failure(SlotError(description: "a time is \(value.kindDescription), not RFC 3339 text or Unix seconds"))
        }
    }

    /// `14:00:00Z–15:00:00Z` of a slot, in UTC, for messages.
    static func text(_ slot: ScheduleSlot) -> String { "\(RFC3339.format(slot.start))–\(RFC3339.format(slot.end))" }
}
