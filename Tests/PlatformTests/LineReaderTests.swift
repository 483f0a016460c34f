import Commands
import FlowCore
import Foundation
import Platform
import ReplaySupport
import TestSupport
import Testing

/// Trace lines are read as they stream by: a line up to the cap whole, a longer one skipped and said,
/// and the lines after it read as if it were not there.
@Suite struct LineReaderTests {
    /// What a reader yields, short enough to print: `abc`, or `N bytes` for a long line, or
    /// `too long: N bytes`.
    static func describe(_ read: LineReader.Read) -> String {
        switch read {
        case .line(let bytes) where bytes.count <= 16: String(decoding: bytes, as: UTF8.self)
        case .line(let bytes): bytes.first == UInt8(ascii: "x") && bytes.last == UInt8(ascii: "x") ? "\(bytes.count) bytes" : "\(bytes.count) bytes, not x…x"
        case .tooLong(let bytes): "too long: \(bytes) bytes"
        }
    }

    /// Everything a reader yields from `text`, written to a file and read back.
    static func read(_ text: [UInt8], maxLineBytes: Int = LineReader.maxLineBytes) throws -> [String] {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("trace").path
        try Data(text).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        return LineReader(fd: fd, maxLineBytes: maxLineBytes).map(describe)
    }

    static func xs(_ count: Int) -> [UInt8] { [UInt8](repeating: UInt8(ascii: "x"), count: count) }

    /// At the documented cap: a line of exactly that many bytes is read whole, one byte more is
    /// skipped, in the middle of the trace and as its last line without a newline.
    @Test func aLineAtTheCapIsReadAndOneByteMoreIsSkipped() throws {
        let cap = LineReader.maxLineBytes
        let text = Array("first\n".utf8) + Self.xs(cap) + Array("\nsecond\n".utf8) + Self.xs(cap + 1) + Array("\nthird\n".utf8) + Self.xs(cap + 1)
        #expect(try Self.read(text) == ["first", "\(cap) bytes", "second", "too long: \(cap + 1) bytes", "third", "too long: \(cap + 1) bytes"])
    }

    /// Around the cap and around the reader's 64 KiB reads: which lines come whole, which are
    /// skipped, and that what follows is read.
    @Test(arguments: [
        (Array("a\n\nb\r\nc".utf8), 4, ["a", "", "b\r", "c"]),
        (Array("abcd\nabcde\nabc".utf8), 4, ["abcd", "too long: 5 bytes", "abc"]),
        (Array("abcdefgh".utf8), 4, ["too long: 8 bytes"]),
        (Array("\n".utf8), 4, [""]),
        ([], 4, []),
        (xs(200_000) + Array("\nafter\n".utf8), 150_000, ["too long: 200000 bytes", "after"]),
        (xs(65_535) + Array("\n".utf8) + xs(65_537) + Array("\nafter".utf8), 65_536, ["65535 bytes", "too long: 65537 bytes", "after"]),
        (xs(150_000) + Array("\n".utf8) + xs(150_000) + Array("\n".utf8), 150_000, ["150000 bytes", "150000 bytes"]),
    ] as [([UInt8], Int, [String])])
    func linesAroundTheCap(_ text: [UInt8], _ cap: Int, _ expected: [String]) throws {
        #expect(try Self.read(text, maxLineBytes: cap) == expected)
    }

    /// `replay` says a line beyond the cap with its number, skips it without parsing it, and goes
    /// on with the next.
    @Test func replaySaysALineBeyondTheCapAndReadsTheNext() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", BerlinDay.config)
        let huge = #"{"t": "2026-06-01T12:00:01Z", "topic": "grid/power", "payload": ""# + String(repeating: "9", count: LineReader.maxLineBytes) + #""}"#
        let trace = try folder.write("t.ndjson", [
            traceLine("2026-06-01T12:00:00Z", "grid/power", "100"), huge, traceLine("2026-06-01T12:00:02Z", "grid/power", "200"),
        ].joined(separator: "\n"))
        let run = try runFlowbridge(["replay", "--config", config, "--final", trace])
        #expect(run.status == 0, "\(run.err)")
        #expect(run.err.contains("\(trace) line 2: longer than 16 MiB (\(huge.utf8.count) bytes); skipped"), "\(run.err)")
        let final = try finalDocument(run.out)
        #expect(final["content"]?["flow"]?["exchange"]?["rate"]?.numberValue == 200)
    }
}
