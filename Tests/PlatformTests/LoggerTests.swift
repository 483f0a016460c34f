import FlowCore
import Foundation
import Glibc
import ReplaySupport
import TestSupport
import Testing

/// The log as the daemon writes it, through the binary: under the journal (JOURNAL_STREAM names
/// standard error) and elsewhere (a terminal, `docker logs`).
@Suite struct LoggerTests {
    /// A JSON source and a plain one; the payloads are a stranger's: a JSON string with the escapes
    /// of NUL, ESC and BEL (a `<0>` after the NUL, an emergency if the journal took it as a new
    /// entry), and ESC and BEL raw.
    static let config = """
        timezone: UTC
        sources:
          grid: {topic: grid/power, json: power}
          solar: {topic: solar/power}
        widgets:
          w: {template: flow, flow: {exchange: {rate: grid}, inputs: [{rate: solar}]}}
        """
    static let trace = [
        traceLine("2026-06-01T12:00:00Z", "grid/power", #"{"power": "boom\u0000<0>x\u001b]0;owned\u0007\u001b[2J"}"#),
        traceLine("2026-06-01T12:00:01Z", "solar/power", "\u{1B}[2J\u{07}raw"),
    ]

    /// `replay` with its standard error in a file; under the journal, JOURNAL_STREAM is that
    /// file's device and inode, as systemd sets it for the journal's stream.
    static func log(journal: Bool) async throws -> [UInt8] {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", config)
        let trace = try folder.write("trace.ndjson", Self.trace.joined(separator: "\n") + "\n")
        let errors = try folder.write("stderr", "")
        var info = stat()
        #expect(stat(errors, &info) == 0)
        let environment = journal ? ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"] : [:]
        let process = try ChildProcess(
            Repository.binary, ["replay", "--config", config, trace], outputFile: folder.url.appendingPathComponent("stdout").path,
            errorFile: errors, environment: environment)
        #expect(await process.waitForExit(timeout: .seconds(20)))
        #expect(process.exitCode == 0)
        return Array(try Data(contentsOf: URL(fileURLWithPath: errors)))
    }

    /// Nothing heard reaches the log raw: no control character but each line's end, every line
    /// one entry of the priority flowbridge gave it, the stranger's text shown escaped.
    @Test(arguments: [true, false])
    func controlCharactersFromTheBrokerAreWrittenEscaped(journal: Bool) async throws {
        let bytes = try await Self.log(journal: journal)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!bytes.contains { ($0 < 0x20 && $0 != 0x0A) || $0 == 0x7F }, "\(bytes)")
        let lines = text.split(separator: "\n")
        #expect(lines.contains { $0.contains(#"boom\u0000<0>x\u001B]0;owned\u0007\u001B[2J"#) }, "\(text)")
        #expect(lines.contains { $0.contains("source 'solar'") }, "\(text)")
        if journal { #expect(lines.allSatisfy { $0.hasPrefix("<4>") || $0.hasPrefix("<6>") || $0.hasPrefix("<3>") }, "\(text)") }
    }

    /// Outside the journal each line starts with its time in UTC (the journal adds its own).
    @Test(arguments: [true, false])
    func theTimeLeadsEachLineOutsideTheJournal(journal: Bool) async throws {
        let lines = String(decoding: try await Self.log(journal: journal), as: UTF8.self).split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let time = RFC3339.parse(String(line.prefix(20)))
            if journal {
                #expect(time == nil && line.first == "<", "\(line)")
            } else {
                #expect(time != nil && line.dropFirst(20).hasPrefix(" flowbridge: "), "\(line)")
            }
        }
    }
}
