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
        let long = Array(repeating: UInt8(ascii: "9"), count: 200)
        let first = Self.storage(Self.payload(long, in: &buffer))
        // Let go: the next, shorter, is written into the same array, which keeps its room (an
        // array made for six bytes has room for a few dozen at most).
        let second = Self.payload(Array("2000.5".utf8), in: &buffer)
        #expect(second == Array("2000.5".utf8))
        #expect(first != nil && Self.storage(second) == first && second.capacity >= long.count)
        // `second` is held while the next comes: that one goes elsewhere.
        let third = Self.payload(Array("3".utf8), in: &buffer)
        #expect(second == Array("2000.5".utf8) && third == Array("3".utf8))
        #expect(Self.storage(third) != Self.storage(second))
    }

    /// (`large` is still held when the next payload comes: a new array for it would keep the
    /// capacity of the one it stands in for.)
    @Test("an array grown past `maxKeptBytes` is let go at the next payload")
    func largeBuffersAreNotKept() {
        var buffer = PayloadBuffer()
        let large = Self.payload(Array(repeating: 0x20, count: PayloadBuffer.maxKeptBytes + 1), in: &buffer)
        #expect(large.capacity > PayloadBuffer.maxKeptBytes)
        let small = Self.payload(Array("42".utf8), in: &buffer)
        #expect(small == Array("42".utf8) && small.capacity <= PayloadBuffer.maxKeptBytes)
    }
}
