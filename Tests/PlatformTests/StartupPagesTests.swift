import Foundation
import Platform
import TestSupport
import Testing
import Threads

/// The pages read only to start, given back once the daemon runs (`StartupPages`).
@Suite struct StartupPagesTests {
    /// Which lines of `/proc/self/maps` are a file's private, read-only pages: code and constants,
    /// not data that was written (`rw-p`), shared mappings, or memory that is no file's.
    @Test(arguments: [
        ("55d0c0a00000-55d0c1400000 r-xp 00200000 fe:01 1312  /usr/bin/flowbridge", 0x55d0_c0a0_0000..<0x55d0_c140_0000),
        ("7f1c2a000000-7f1c2a028000 r--p 00000000 fe:01 2201   /usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f1c_2a00_0000..<0x7f1c_2a02_8000),
        ("7f1c2a400000-7f1c2a401000 r--p 00000000 fe:01 9 /opt/flow bridge/bin/flowbridge", 0x7f1c_2a40_0000..<0x7f1c_2a40_1000),
        ("55d0c1400000-55d0c1600000 rw-p 00c00000 fe:01 1312  /usr/bin/flowbridge", nil),
        ("7f1c2a200000-7f1c2a300000 r--s 00000000 00:05 44  /memfd:shared (deleted)", nil),
        ("7ffd1b5e0000-7ffd1b601000 rw-p 00000000 00:00 0   [stack]", nil),
        ("7ffd1b7f2000-7ffd1b7f4000 r-xp 00000000 00:00 0   [vdso]", nil),
        ("7f1c2a500000-7f1c2a600000 ---p 00000000 00:00 0", nil),
        ("not a line of maps", nil),
    ] as [(String, Range<UInt>?)])
    func readOnlyFileMappings(line: String, range: Range<UInt>?) {
        #expect(StartupPages.readOnlyFileRange(Substring(line)) == range)
    }

    /// This test process's own code, resident since it started, is given back, and the code goes
    /// on running: what is needed again is read again from the file. What it gave back is the
    /// mappings' own figure: another thread filling memory meanwhile (as other suites do in the
    /// same process) moves the process's resident size, not that.
    @Test func theProcessGivesBackResidentCodeAndRunsOn() throws {
        let filling = MemoryFiller()
        defer { filling.stop() }
        #expect(filling.waitUntilFilling())
        let released = try #require(StartupPages.release(), "MADV_PAGEOUT (Linux 5.4) and /proc are needed")
        #expect(released.mappings > 0)
        #expect(released.rssAfterKB < released.rssBeforeKB, "\(released)")
        #expect(released.text(after: "running").hasPrefix("running: gave back "))
        // Code the release dropped, read back: the process still computes.
        let squares: Int = (1...1000).map { $0 * $0 }.reduce(0, +)
        #expect(squares == 333_833_500)
    }
}

/// Another suite's allocations, played on a thread of its own: touches a fresh 8 MB block after
/// another, up to 512 MB, and gives them all back, until stopped.
private final class MemoryFiller: @unchecked Sendable {
    private let state = NSCondition()
    private var stopped = false
    private var blocks = 0

    init() {
        _ = try? NamedThread.start("memory filler", detached: true) { [self] in
            var held: [UnsafeMutableRawPointer] = []
            while !state.withLock({ stopped }) {
                if held.count == 64 { held.forEach { free($0) }; held.removeAll() }
                guard let block = malloc(8 << 20) else { break }
                memset(block, 1, 8 << 20)
                held.append(block)
                state.withLock { blocks += 1; state.broadcast() }
            }
            held.forEach { free($0) }
        }
    }

    /// Until the thread has touched a few blocks (bounded, so a test never hangs on it).
    func waitUntilFilling() -> Bool {
        state.withLock {
            let deadline = Date().addingTimeInterval(30)
            while blocks < 4, state.wait(until: deadline) {}
            return blocks >= 4
        }
    }

    func stop() { state.withLock { stopped = true } }
}
