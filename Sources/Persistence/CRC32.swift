/// CRC-32 as zlib, PNG and `python3 -c 'import zlib; zlib.crc32(…)'` compute it (the reflected
/// polynomial 0xEDB88320, all ones in and out), so a person can check a state file's `crc32` by
/// hand. It tells a torn copy of the state from a whole one (`StateSeal`); it is no defence against
/// someone who means to forge one.
enum CRC32 {
    static func checksum<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }

    /// The remainder of each byte, computed once.
    private static let table: [UInt32] = (0..<256).map { index in
        (0..<8).reduce(UInt32(index)) { crc, _ in crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
    }
}
