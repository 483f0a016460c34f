import FlowCore

/// What each copy of the state carries to say how new it is and whether it is whole: a sequence
/// number after the marker, and at the end a CRC-32 of every byte before it:
///
///     {"format":"flowbridge-state","sequence":1234,"accounts":{…},…,"crc32":"89abcdef"}
///
/// The two copies are rewritten in place, in turn (`StateFileWriter`), so a power cut during a
/// save can leave the copy being written torn: some of its sectors new and some old, which may
/// even be valid JSON with numbers of two saves. The checksum tells that copy from a whole one;
/// the sequence tells which of two whole copies is the newer. The file stays the JSON it was: a
/// person reads it, and `jq` and the tests take the two members as any others.
enum StateSeal {
    static let sequenceKey = "sequence"
    static let checksumKey = "crc32"
    /// What comes before the checksum's eight hex digits; `"}` comes after them.
    static let checksumLead = Array(#","crc32":""#.utf8)
    /// The length of the seal's end: `,"crc32":"89abcdef"}`.
    static let checksumLength = checksumLead.count + 8 + 2

    /// A copy's bytes: the marker, the sequence, the members of `body` (the state, an encoded JSON
    /// object `{…}` without a marker or seal of its own), the checksum and a newline.
    static func sealed(_ body: [UInt8], sequence: UInt64) -> [UInt8] {
        var bytes = StateStore.header
        bytes.append(contentsOf: Array(#","\#(sequenceKey)":\#(sequence)"#.utf8))
        if body.count > 2 {
            bytes.append(UInt8(ascii: ","))
            bytes.append(contentsOf: body.dropFirst().dropLast())
        }
        let checksum = hex(CRC32.checksum(bytes))
        bytes.append(contentsOf: checksumLead)
        bytes.append(contentsOf: checksum)
        bytes.append(contentsOf: Array("\"}\n".utf8))
        return bytes
    }

    /// What a copy says of itself.
    enum Reading: Equatable, Sendable {
        /// No checksum: written by a release before the two copies (or by hand).
        case unsealed
        /// `intact`: the checksum matches the bytes before it.
        case sealed(sequence: UInt64, intact: Bool)

        /// The sequence a copy has; an unsealed state is older than any sealed one.
        var sequence: UInt64 {
            if case .sealed(let sequence, _) = self { sequence } else { 0 }
        }

        /// Whether nothing says the copy is torn: a sealed copy whose checksum matches, or one
        /// without a seal to check.
        var isIntact: Bool {
            if case .sealed(_, let intact) = self { intact } else { true }
        }
    }

    /// The seal of a copy: `bytes` as read (a byte order mark already taken off), `members` its
    /// parsed top level.
    static func read(_ bytes: [UInt8], members: [String: JSONValue]) -> Reading {
        guard members[checksumKey] != nil else { return .unsealed }
        let sequence = members[sequenceKey]?.numberValue.flatMap { $0 >= 0 && $0 < 0x1p63 ? UInt64(exactly: $0) : nil }
        // The padding after the seal is spaces and a newline.
        let end = bytes.lastIndex { $0 != UInt8(ascii: " ") && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }.map { $0 + 1 } ?? 0
        let covered = end - checksumLength
        guard covered >= 0, bytes[covered..<(covered + checksumLead.count)].elementsEqual(checksumLead),
            bytes[(end - 2)..<end].elementsEqual(Array("\"}".utf8))
        else { return .sealed(sequence: sequence ?? 0, intact: false) }
        let digits = Array(bytes[(covered + checksumLead.count)..<(end - 2)])
        return .sealed(sequence: sequence ?? 0, intact: sequence != nil && digits == hex(CRC32.checksum(bytes[..<covered])))
    }

    /// `members` without the seal's own members: what the engine and the sinks read.
    static func unsealed(_ members: [String: JSONValue]) -> [String: JSONValue] {
        members.filter { $0.key != sequenceKey && $0.key != checksumKey }
    }

    /// Eight lowercase hex digits.
    private static func hex(_ value: UInt32) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        return (0..<8).map { digits[Int((value >> (28 - 4 * UInt32($0))) & 0xF)] }
    }
}
