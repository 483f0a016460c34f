@testable import Mosquitto
import Testing

struct PayloadBufferTests {
    /// `payload` of these bytes.
    static func payload(_ bytes: [UInt8], in buffer: inout PayloadBuffer) -> [UInt8] {
        bytes.withUnsafeBytes { buffer.payload($0.baseAddress!, count: $0.count) }
    }

    /// Where an array's bytes are.
    static func storage(_ array: [UInt8]) -> UnsafeRawPointer? {
        array.withUnsafeBytes { $0.baseAddress }
    }

    @Test("each payload reads as its bytes, whether the one before was let go or kept", arguments: [
        [Array("1234".utf8), Array(#"{"ENERGY":{"Power":812}}"#.utf8), Array("7".utf8)],
        [[0x00, 0xFF, 0x80], Array(repeating: 0x41, count: PayloadBuffer.maxKeptBytes + 1), Array("nan".utf8)],
    ])
    func payloadsReadAsTheirBytes(messages: [[UInt8]]) {
        var buffer = PayloadBuffer()
        var kept: [[UInt8]] = []
        for (index, bytes) in messages.enumerated() {
            let payload = Self.payload(bytes, in: &buffer)
            #expect(payload == bytes)
            if index % 2 == 0 { kept.append(payload) }
        }
        // What was kept still holds its own bytes, whatever came after it.
        #expect(kept == messages.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
    }

    @Test("a payload let go is written over by the next; one kept is left as it was")
    func letGoIsReusedKeptIsNot() {
        var buffer = PayloadBuffer()
        let first = Self.storage(Self.payload(Array(repeating: UInt8(ascii: "9"), count: 120), in: &buffer))
        // Let go: the next, a little shorter, is written into the same array, which keeps its
        // room (an array made for 70 bytes has room for some 72).
        let second = Self.payload(Array(repeating: UInt8(ascii: "5"), count: 70), in: &buffer)
        #expect(second == Array(repeating: UInt8(ascii: "5"), count: 70))
        #expect(first != nil && Self.storage(second) == first && second.capacity >= 120)
        // `second` is held while the next comes: that one goes elsewhere.
        let third = Self.payload(Array("3".utf8), in: &buffer)
        #expect(second == Array(repeating: UInt8(ascii: "5"), count: 70) && third == Array("3".utf8))
        #expect(Self.storage(third) != Self.storage(second))
    }

    /// What a keeper of payloads holds (`discover` keeps each topic's latest): a reading's few
    /// bytes after a large payload come in an array of their own size, not in the large one's.
    /// (`large` is still held at the next payload in the second case: an array made for that one
    /// as a copy would keep the room of the array it stands in for.)
    @Test("a payload is handed out with room for at most twice its bytes (or `leastRoom`)", arguments: [false, true])
    func roomIsBoundedByThePayload(largeKept: Bool) {
        var buffer = PayloadBuffer()
        for size in [1_000, PayloadBuffer.maxKeptBytes + 1] {
            var large: [UInt8]? = Self.payload(Array(repeating: 0x20, count: size), in: &buffer)
            #expect(large!.capacity >= size)
            if !largeKept { large = nil }
            let small = Self.payload(Array("42".utf8), in: &buffer)
            #expect(small == Array("42".utf8) && small.capacity <= PayloadBuffer.leastRoom, "after \(size) bytes")
            withExtendedLifetime(large) {}
        }
    }
}
