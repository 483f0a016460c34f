import Testing
@testable import Mosquitto

/// The topics the network thread hands out again: always the text `String(cString:)` makes, the
/// same string for the same bytes while kept, a bounded number kept.
struct RecentTopicsTests {
    /// `topic` of these NUL-terminated bytes.
    static func topic(_ bytes: [UInt8], in recent: inout RecentTopics) -> String {
        (bytes + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { recent.topic($0.baseAddress!) }
        }
    }

    static func expected(_ bytes: [UInt8]) -> String {
        (bytes + [0]).withUnsafeBufferPointer { buffer in buffer.withMemoryRebound(to: CChar.self) { String(cString: $0.baseAddress!) } }
    }

    /// Where a string's bytes are: the same place for the same string (one of more than 15 bytes,
    /// not held inline).
    static func storage(_ text: String) -> UnsafeRawPointer? {
        text.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
    }

    @Test("each topic, new or kept, reads as String(cString:) makes it", arguments: [
        Array("a".utf8),
        Array("tele/tasmota_5F1A2B/SENSOR".utf8),
        Array("home/küche/power".utf8),
        [0x74, 0xFF, 0x2F, 0x70],  // not UTF-8: repaired, as String(cString:) does
        [0x68, 0x6F, 0x6D, 0x65, 0x2F, 0xC3],  // a sequence cut short
    ])
    func readsAsCString(bytes: [UInt8]) {
        var recent = RecentTopics()
        for _ in 0..<3 { #expect(Self.topic(bytes, in: &recent) == Self.expected(bytes)) }
    }

    @Test("a kept topic is the same string again; topics of one length or one prefix stay apart")
    func keptTopicsAreHandedOutAgain() {
        var recent = RecentTopics()
        let solar = Array("bench/meter/solar-inverter".utf8), grid = Array("bench/meter/grid-meter-main".utf8)
        let first = Self.topic(solar, in: &recent)
        #expect(Self.topic(grid, in: &recent) == "bench/meter/grid-meter-main")
        let again = Self.topic(solar, in: &recent)
        #expect(again == "bench/meter/solar-inverter")
        #expect(Self.storage(again) != nil && Self.storage(again) == Self.storage(first))
        // The same length, other bytes; a longer topic that starts with a kept one.
        #expect(Self.topic(Array("bench/meter/solar-inverteR".utf8), in: &recent) == "bench/meter/solar-inverteR")
        #expect(Self.topic(Array("bench/meter/solar-inverter/2".utf8), in: &recent) == "bench/meter/solar-inverter/2")
        #expect(Self.topic(Array("bench/meter/solar".utf8), in: &recent) == "bench/meter/solar")
    }

    @Test("a topic longer than `maxKeptBytes` is made anew each time, and kept not")
    func longTopicsAreNotKept() {
        var recent = RecentTopics()
        let long = Array(String(repeating: "x", count: RecentTopics.maxKeptBytes + 1).utf8)
        let first = Self.topic(long, in: &recent)
        let again = Self.topic(long, in: &recent)
        #expect(again == first && again.utf8.count == RecentTopics.maxKeptBytes + 1)
        #expect(Self.storage(again) != Self.storage(first))
        let longest = Array(String(repeating: "y", count: RecentTopics.maxKeptBytes).utf8)
        #expect(Self.storage(Self.topic(longest, in: &recent)) == Self.storage(Self.topic(longest, in: &recent)))
    }

    @Test("at most `capacity` topics are kept: past it, the oldest is made anew (and still right)")
    func boundedByCapacity() {
        var recent = RecentTopics()
        let name = { (n: Int) in Array("a/topic/long/enough/\(n)".utf8) }
        let first = Self.topic(name(0), in: &recent)
        for n in 1..<RecentTopics.capacity { _ = Self.topic(name(n), in: &recent) }
        #expect(Self.storage(Self.topic(name(0), in: &recent)) == Self.storage(first))  // all kept
        _ = Self.topic(name(RecentTopics.capacity), in: &recent)  // replaces the oldest
        let remade = Self.topic(name(0), in: &recent)
        #expect(remade == "a/topic/long/enough/0")
        #expect(Self.storage(remade) != Self.storage(first))
    }
}
