@testable import Persistence
import FlowCore
import Testing

/// Each copy of the state says how new it is and whether it is whole.
@Suite struct StateSealTests {
    /// zlib's CRC-32: the check value of "123456789", and of nothing.
    @Test(arguments: [("123456789", UInt32(0xCBF4_3926)), ("", UInt32(0))])
    func theChecksumIsZlibs(text: String, crc: UInt32) {
        #expect(CRC32.checksum(Array(text.utf8)) == crc)
    }

    static let body = Array(#"{"readings":{},"totals":{"w/inputs[0]":{"kind":"integrate","kwh":2.5}},"version":1}"#.utf8)

    static func reading(_ bytes: [UInt8]) throws -> StateSeal.Reading {
        let members = try #require(try JSONValue(parsing: bytes).objectValue)
        return StateSeal.read(bytes, members: members)
    }

    @Test func aSealedCopyReadsBackWholeWithItsSequence() throws {
        let bytes = StateSeal.sealed(Self.body, sequence: 41)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix(#"{"format":"flowbridge-state","sequence":41,"readings":{}"#), "\(text)")
        #expect(try Self.reading(bytes) == .sealed(sequence: 41, intact: true))
        // The padding that keeps a copy's size does not count.
        #expect(try Self.reading(StateFileWriter.padded(bytes, blockSize: 4096)) == .sealed(sequence: 41, intact: true))
        let members = try #require(try JSONValue(parsing: bytes).objectValue)
        var expected = try #require(try JSONValue(parsing: Self.body).objectValue)
        expected["format"] = "flowbridge-state"
        #expect(StateSeal.unsealed(members) == expected)
    }

    /// (what a power cut or an editor did to a sealed copy, the copy's bytes from the sealed ones)
    static let damages: [(String, @Sendable ([UInt8]) -> [UInt8])] = [
        ("a digit of a total changed (a torn sector that still parses)", { bytes in
            Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "2.5", with: "7.5").utf8)
        }),
        ("the sequence changed", { bytes in Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: ":41,", with: ":42,").utf8) }),
        ("pretty-printed by an editor", { bytes in Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: ",", with: ",\n  ").utf8) }),
        ("the checksum cut to seven digits", { bytes in
            var text = String(decoding: bytes, as: UTF8.self)
            text.remove(at: text.index(text.endIndex, offsetBy: -4))
            return Array(text.utf8)
        }),
    ]

    @Test(arguments: damages)
    func aChangedCopyIsNotWhole(what: String, damage: @Sendable ([UInt8]) -> [UInt8]) throws {
        let damaged = damage(StateSeal.sealed(Self.body, sequence: 41))
        guard case .sealed(_, let intact) = try Self.reading(damaged) else {
            Issue.record("\(what): read as unsealed")
            return
        }
        #expect(!intact, "\(what)")
    }

    /// A state of a release before the seal has none: its sequence is 0, older than any sealed copy.
    @Test func aStateWithoutASealIsUnsealed() throws {
        let reading = try Self.reading(Array(#"{"format":"flowbridge-state","readings":{},"totals":{},"version":1}"#.utf8))
        #expect(reading == .unsealed && reading.sequence == 0 && reading.isIntact)
    }
}
