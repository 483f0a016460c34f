@testable import Delivery
import FlowCore
import FoundationEssentials
import Glibc
import Testing

/// Standard output with `run --summary`: under each push's line, the widget in words and the day's
/// accounts as the engine last handed them over.
@Suite struct StdoutSinkTests {
    /// What the sink wrote to a pipe, once it has stopped.
    static func written(_ feed: (StdoutSink) -> Void) throws -> [String] {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let sink = try StdoutSink(fd: ends[1], zone: FixedOffsetZone(), summary: { "summary of \($0.widget)" }, log: { _ in })
        feed(sink)
        #expect(sink.stop(timeout: .seconds(10)))
        close(ends[1])
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let count = read(ends[0], &buffer, buffer.count), count > 0 { bytes += buffer[..<count] }
        close(ends[0])
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test func theSummarySaysTheDaysAccountsAsLastHandedOver() throws {
        let push = OutboxTests.pushes([1000])[0]
        // Solar 3.5 + Grid import 0.25 + Battery discharge 0.1 = 3.85 kWh in;
        // Home 3 + Grid export 0.6 + Battery charge 0.25 = 3.85 kWh out.
        let accounts = WidgetAccounts(widget: "power", at: push.at, accountsKWh: [
            .input(0): [.production: 3.5], .output: [.consumption: 3],
            .exchange: [.imported: 0.25, .exported: 0.6], .storage: [.charged: 0.25, .discharged: 0.1],
        ])
        let lines = try Self.written { sink in
            sink.take(accounts: accounts)
            sink.take(push)
        }
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.last == "summary of power; day so far: production 3.5 + import 0.25 + discharge 0.1 = 3.85 kWh in, consumption 3 + export 0.6 + charge 0.25 = 3.85 kWh out", "\(lines)")
    }

    /// With a tariff, the day's money follows the accounts: import 0.25 kWh cost €0.08, export
    /// 0.6 kWh earned €0.05, a third of the €0.40 standing charge: net 0.08 − 0.05 + 0.1333 =
    /// €0.16; the 3 kWh used would have cost €0.90 + €0.1333 from the grid: saved €0.87.
    @Test func theSummarySaysTheDaysMoneyWithTheAccounts() throws {
        let push = OutboxTests.pushes([1000])[0]
        let money = MoneyReport(currency: .euro, importCost: 0.08, exportEarnings: 0.05, standingCharge: 0.40 / 3, gridOnlyCost: 0.90 + 0.40 / 3)
        let accounts = WidgetAccounts(
            widget: "power", at: push.at, accountsKWh: [.output: [.consumption: 3], .exchange: [.imported: 0.25, .exported: 0.6]], money: money)
        let lines = try Self.written { sink in
            sink.take(accounts: accounts)
            sink.take(push)
        }
        #expect(lines.last?.hasSuffix("; money so far: import €0.08, export −€0.05, standing €0.13, net €0.16, saved €0.87") == true, "\(lines)")
    }

    /// Before the engine handed over any accounts (the first push of a start), the summary is the
    /// widget alone: no made-up day.
    @Test func noAccountsYetNoAccountsSaid() throws {
        let lines = try Self.written { $0.take(OutboxTests.pushes([1000])[0]) }
        #expect(lines.last == "summary of power", "\(lines)")
    }

    /// A pipe with room has the line before `take` returns: it is written where the push is
    /// offered, and no thread is woken for it. A full pipe does not hold `take` up: the sink's own
    /// thread writes the line once the reader has read.
    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func aLineIsWrittenInPlaceOnlyWhenThePipeHasRoom(full: Bool) throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let flags = fcntl(ends[0], F_GETFL)
        _ = fcntl(ends[0], F_SETFL, flags | O_NONBLOCK)
        var filler = 0
        if full {
            _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
            let page = [UInt8](repeating: UInt8(ascii: "x"), count: 4096)
            while case let count = write(ends[1], page, page.count), count > 0 { filler += count }
            _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) & ~O_NONBLOCK)
        }
        let sink = try StdoutSink(fd: ends[1], zone: FixedOffsetZone(), log: { _ in })
        sink.take(OutboxTests.pushes([1000])[0])
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        func readWhatIsThere() {
            while case let count = read(ends[0], &buffer, buffer.count), count > 0 { bytes += buffer[..<count] }
        }
        readWhatIsThere()
        if !full { #expect(bytes.last == UInt8(ascii: "\n"), "the line is there before take returned") }
        #expect(sink.stop(timeout: .seconds(30)))
        close(ends[1])
        readWhatIsThere()
        let text = String(decoding: bytes.dropFirst(filler), as: UTF8.self)
        #expect(bytes.count > filler && text.hasPrefix(#"{"patch":{"content":"#) && text.hasSuffix("\"widget\":\"power\"}\n"), "\(text)")
    }

    /// What each kind of standard output is taken for: a file is never polled (it always has
    /// room), anything else (but a terminal) asked at every write.
    enum Descriptor: CaseIterable { case file, pipe, socket, devNull }

    @Test(arguments: Descriptor.allCases)
    func eachDescriptorIsTakenForWhatItIs(descriptor: Descriptor) throws {
        var fds: [Int32] = []
        defer { fds.forEach { close($0) } }
        switch descriptor {
        case .file:
            var template = Array("/tmp/flowbridge-stdout-XXXXXX".utf8CString)
            fds = [mkstemp(&template)]
            unlink(template)
        case .pipe:
            fds = [0, 0]
            try #require(pipe(&fds) == 0)
            fds.swapAt(0, 1)
        case .socket:
            fds = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        case .devNull:
            fds = [open("/dev/null", O_WRONLY)]
        }
        try #require(fds[0] >= 0)
        let expected: FileDescriptor.Kind = switch descriptor {
        case .file: .file
        case .pipe, .socket, .devNull: .other
        }
        #expect(FileDescriptor.kind(of: fds[0]) == expected)
    }

    /// A line to a file is written before `take` returns, as to a pipe with room.
    @Test func aLineToAFileIsWrittenInPlace() throws {
        var template = Array("/tmp/flowbridge-stdout-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        try #require(fd >= 0)
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { close(fd); unlink(path) }
        let sink = try StdoutSink(fd: fd, zone: FixedOffsetZone(), log: { _ in })
        sink.take(OutboxTests.pushes([1000])[0])
        var status = stat()
        try #require(fstat(fd, &status) == 0)
        #expect(status.st_size > 0, "the line is there before take returned")
        #expect(sink.stop(timeout: .seconds(10)))
    }

    /// The accounts are worked out for standard output only when `run --summary` says them.
    @Test(arguments: [false, true])
    func takesAccountsOnlyForTheSummary(summary: Bool) throws {
        let says: (@Sendable (OutgoingPush) -> String)? = summary ? { @Sendable _ in "" } : nil
        let sink = try StdoutSink(fd: 1, zone: FixedOffsetZone(), summary: says, log: { _ in })
        #expect(sink.takesAccounts == summary)
        #expect(sink.stop(timeout: .seconds(10)))
    }
}
