import FlowCore
import Foundation
import TestSupport
import Testing

/// Price schedules read from payloads: every feed's shape (`Tests/Fixtures/price-schedules.json`)
/// to its slots, and every kind of bad list refused whole, with a reason that says what is wrong.
@Suite struct ScheduleFormatTests {
    static func format(_ keys: JSONValue?) -> ScheduleFormat {
        let defaults = ScheduleFormat()
        return ScheduleFormat(
            startKey: keys?["start"]?.stringValue ?? defaults.startKey, endKey: keys?["end"]?.stringValue ?? defaults.endKey,
            priceKey: keys?["price"]?.stringValue ?? defaults.priceKey)
    }

    static let feeds: [String] = (try? Repository.scheduleCases().compactMap { $0["feed"]?.stringValue }) ?? []

    @Test(arguments: feeds)
    func eachFeedsScheduleReadsAsItsSlots(feed: String) throws {
        let found = try #require(try Repository.scheduleCases().first { $0["feed"]?.stringValue == feed })
        let payload = Array(try #require(found["payload"]?.stringValue).utf8)
        let expected = try #require(found["slots"]?.arrayValue).compactMap(\.arrayValue).map { slot in
            ScheduleSlot(
                start: Date(timeIntervalSince1970: slot[0].numberValue ?? 0), end: Date(timeIntervalSince1970: slot[1].numberValue ?? 0),
                price: slot[2].numberValue)
        }
        #expect(Self.format(found["schedule"]).decode(payload, path: nil) == .slots(expected))
    }

    @Test func theFixturesHoldEveryFeed() {
        #expect(Self.feeds.count == 6)
    }

    /// A list inside a message: Nord Pool's whole attribute set, forwarded as one object.
    @Test func aPathFindsTheListInAnObject() throws {
        let payload = #"{"currency": "EUR", "raw_today": [{"start": "2026-06-01T00:00:00+02:00", "end": "2026-06-01T01:00:00+02:00", "value": 0.25}]}"#
        let decoded = ScheduleFormat().decode(Array(payload.utf8), path: try JSONPath("raw_today"))
        #expect(decoded == .slots([ScheduleSlot(start: Date(timeIntervalSince1970: 1_780_264_800), end: Date(timeIntervalSince1970: 1_780_268_400), price: 0.25)]))
    }

    /// A slot the feed has no price for says nothing (it is no error, and no price 0).
    @Test(arguments: ["null", #""nan""#, #""unavailable""#])
    func aSlotWithoutAPriceHasNone(price: String) {
        let payload = #"[[1780315200, 1780316100, 0.3], [1780316100, 1780317000, \#(price)]]"#
        guard case .slots(let slots) = ScheduleFormat().decode(Array(payload.utf8), path: nil) else {
            Issue.record("not read")
            return
        }
        #expect(slots.map(\.price) == [0.3, nil])
    }

    /// An empty retained message (evcc erases its topics when it stops) and `null` erase nothing.
    @Test(arguments: ["", "  ", "null"])
    func anEmptyPayloadIsNoSchedule(payload: String) {
        #expect(ScheduleFormat().decode(Array(payload.utf8), path: nil) == .noSchedule)
    }

    /// Out of order is fine: the slots come sorted.
    @Test func slotsComeSorted() {
        let payload = "[[1780316100, 1780317000, 2], [1780315200, 1780316100, 1]]"
        guard case .slots(let slots) = ScheduleFormat().decode(Array(payload.utf8), path: nil) else {
            Issue.record("not read")
            return
        }
        #expect(slots.map(\.price) == [1, 2])
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        var name: String
        var payload: String
        /// What the reason must say.
        var reason: String
        var testDescription: String { name }
    }

    static let slot = #"{"start": "2026-06-01T14:00:00+02:00", "end": "2026-06-01T14:15:00+02:00", "value": 0.3}"#

    static let bad: [Bad] = [
        Bad(name: "not JSON", payload: "[{start: 1}", reason: "not JSON"),
        Bad(name: "an object", payload: #"{"value": 0.3}"#, reason: "the payload is an object, not a list of slots"),
        Bad(name: "a number", payload: "0.312", reason: "a number, not a list of slots"),
        Bad(name: "a slot that is a number", payload: "[1780315200]", reason: "slot 1: a number, not a slot"),
        Bad(name: "an array of two", payload: "[[1780315200, 1780316100]]", reason: "slot 1: an array, not a slot"),
        Bad(name: "no end", payload: #"[{"start": "2026-06-01T14:00:00Z", "value": 0.3}]"#, reason: #"slot 1: no "end""#),
        Bad(name: "no price", payload: #"[{"start": "2026-06-01T14:00:00Z", "end": "2026-06-01T15:00:00Z"}]"#, reason: #"slot 1: no "value""#),
        Bad(name: "ends at its start", payload: "[[1780315200, 1780315200, 0.3]]", reason: "slot 1: ends at 2026-06-01T12:00:00Z, not after its start"),
        Bad(name: "ends before it starts", payload: "[\(slot), [1780316100, 1780315200, 0.3]]", reason: "slot 2: ends at"),
        Bad(name: "overlapping slots", payload: "[\(slot), [1780315800, 1780319400, 0.4]]", reason: "the slots 2026-06-01T12:00:00Z–2026-06-01T12:15:00Z and 2026-06-01T12:10:00Z–2026-06-01T13:10:00Z overlap"),
        Bad(name: "a time without a zone", payload: #"[{"start": "2026-06-01T14:00:00", "end": "2026-06-01T15:00:00", "value": 0.3}]"#, reason: "slot 1: '2026-06-01T14:00:00' has no zone"),
        Bad(name: "a time that is no time", payload: #"[{"start": "14:00", "end": "15:00", "value": 0.3}]"#, reason: "slot 1: '14:00' is not an RFC 3339 time"),
        Bad(name: "milliseconds", payload: "[[1780315200000, 1780316100000, 0.3]]", reason: "slot 1: 1780315200000 is not a time in Unix seconds"),
        Bad(name: "a time that is a boolean", payload: "[[true, 1780316100, 0.3]]", reason: "slot 1: a time is a boolean"),
        Bad(name: "a price that is text", payload: #"[[1780315200, 1780316100, "cheap"]]"#, reason: #"slot 1: the price "cheap" is not a number"#),
        Bad(name: "a price that is a list", payload: "[[1780315200, 1780316100, [0.3]]]", reason: "slot 1: the price is an array"),
        Bad(name: "a huge list", payload: "[" + (0..<865).map { "[\(1_780_315_200 + $0 * 900), \(1_780_316_100 + $0 * 900), 0.3]" }.joined(separator: ",") + "]",
            reason: "865 slots are more than the 864"),
    ]

    @Test(arguments: bad)
    func aBadListIsRefusedWhole(_ bad: Bad) {
        guard case .invalid(let error) = ScheduleFormat().decode(Array(bad.payload.utf8), path: nil) else {
            Issue.record("\(bad.name) was read")
            return
        }
        #expect(error.kind == .schedule || error.kind == .json)
        #expect(error.description.contains(bad.reason), "\(error.description)")
    }

    @Test func aPathThatFindsNothingSaysSo() throws {
        let decoded = ScheduleFormat().decode(Array(#"{"raw_tomorrow": []}"#.utf8), path: try JSONPath("raw_today"))
        #expect(decoded == .invalid(PayloadError(.schedule, "no list at raw_today")))
    }
}
