import Glibc

/// The pages of code and read-only data the daemon touched only to start, given back once it runs.
///
/// Loading touches far more of the executable and its libraries than a message ever does: the
/// dynamic linker walks every library's symbol and relocation tables (libcurl's thirty libraries
/// are linked `-z now`, so all of them at once), the config is parsed, and the kernel maps 64 kB
/// around every page a fault reads. Measured after 30,000 messages, 9.1 MB of the executable's
/// code and constants were resident and 1.2 MB of it had been read since the start (bench/NOTES.md,
/// "Pages touched only to start"). Those pages are clean copies of files, so the kernel can drop
/// them at no risk: a page needed again is read again from the file.
public enum StartupPages {
    /// What `release` gave back: how many mappings it asked about, and their resident memory
    /// before and after, in kB (the sum of their `Rss` in `/proc/self/smaps`). The mappings' own
    /// figure, not the process's: memory that other threads allocate meanwhile is not in it.
    public struct Released: Sendable, Equatable {
        public var mappings: Int
        public var rssBeforeKB: Int
        public var rssAfterKB: Int

        /// `gave back 7.6 MB of pages read only to start (12 mappings of the executable and its
        /// libraries)`: the log's line, at the moment `after` names.
        public func text(after moment: String) -> String {
            let megabytes = Double(max(0, rssBeforeKB - rssAfterKB)) / 1024
            let shown = (megabytes * 10).rounded() / 10
            return "\(moment): gave back \(shown) MB of pages read only to start (\(mappings) mappings of the executable and its libraries)"
        }
    }

    /// Asks the kernel to page out every private, read-only mapping of a file (the executable's
    /// code and constants, the libraries'). Pages that another process maps too (glibc's, a
    /// library the broker shares) are left where they are by the kernel. The mappings keep the
    /// kernel's readahead: read a page at a time (`MADV_RANDOM`), a scan of the executable's
    /// tables after the release took one disk read per page, and the pages resident after 30,000
    /// messages were the same.
    /// Nil where the kernel cannot (`MADV_PAGEOUT` is Linux 5.4's) or `/proc` is not mounted: the
    /// daemon then runs as before, with the pages resident.
    public static func release() -> Released? {
        guard let maps = try? FileIO.read("/proc/self/maps", atMost: 1 << 20) else { return nil }
        let ranges = String(decoding: maps, as: UTF8.self).split(separator: "\n").compactMap(readOnlyFileRange)
        guard let before = residentKB(of: Set(ranges)) else { return nil }
        var given: Set<Range<UInt>> = []
        var refused = 0
        for range in ranges {
            let start = UnsafeMutableRawPointer(bitPattern: range.lowerBound)
            // A locked mapping (mlock) is refused; the others are still asked.
            if madvise(start, range.count, pageOut) == 0 { given.insert(range) } else { refused += 1 }
        }
        guard !given.isEmpty || refused == 0 else { return nil }
        return Released(mappings: given.count, rssBeforeKB: before, rssAfterKB: residentKB(of: Set(ranges)) ?? before)
    }

    /// `MADV_PAGEOUT`, which Swift's Glibc module does not show.
    private static let pageOut: Int32 = 21

    /// The address range of a line of `/proc/self/maps` that maps a file privately and read-only
    /// (`r--p`, `r-xp`): `START-END PERMS OFFSET DEVICE INODE PATH`.
    package static func readOnlyFileRange(_ line: Substring) -> Range<UInt>? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        // A file's path starts with `/`; `[heap]`, `[vdso]` and anonymous mappings have none.
        guard fields.count >= 6, fields[5].hasPrefix("/"), fields[1].utf8.count == 4 else { return nil }
        let permissions = Array(fields[1].utf8)
        guard permissions[0] == UInt8(ascii: "r"), permissions[1] == UInt8(ascii: "-"), permissions[3] == UInt8(ascii: "p") else { return nil }
        let bounds = fields[0].split(separator: "-")
        guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16), start < end else { return nil }
        return start..<end
    }

    /// The resident memory of the mappings at `ranges`, in kB: the sum of their `Rss` lines in
    /// `/proc/self/smaps`, where each mapping's header line is its `/proc/self/maps` line.
    private static func residentKB(of ranges: Set<Range<UInt>>) -> Int? {
        guard let smaps = try? FileIO.read("/proc/self/smaps", atMost: 16 << 20) else { return nil }
        var total = 0
        var counting = false
        for line in String(decoding: smaps, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("Rss:") {
                if counting { total += Int(line.dropFirst(4).split(separator: " ").first ?? "") ?? 0 }
            } else if let range = readOnlyFileRange(line) {
                counting = ranges.contains(range)
            } else if line.first?.isHexDigit == true, line.contains("-") {
                counting = false
            }
        }
        return total
    }
}
