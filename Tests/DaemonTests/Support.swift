import Daemon
import FlowCore
import Foundation
import TestSupport

/// Paths inside the repository: a clone alone has everything a test reads.
enum Repository {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = root.appendingPathComponent("Tests/Fixtures")

    /// Payloads real devices published (`Tests/Fixtures/devices.json`), by device and topic.
    static func deviceCases() throws -> [JSONValue] {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("devices.json"))
        return try JSONValue(parsing: Array(data))["cases"]?.arrayValue ?? []
    }

    /// The payload a real device published on `topic` (the first case, or the one whose payload matches).
    static func payload(_ topic: String, where matches: (String) -> Bool = { _ in true }) throws -> String {
        let found = try deviceCases().first { $0["topic"]?.stringValue == topic && matches($0["payload"]?.stringValue ?? "") }
        guard let payload = found?["payload"]?.stringValue else { throw FixtureMissing(topic: topic) }
        return payload
    }

    struct FixtureMissing: Error { var topic: String }

    /// The built `flowbridge` binary, beside the test bundle.
    static var binary: String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("flowbridge").path,
            root.appendingPathComponent(".build/debug/flowbridge").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[1]
    }
}

/// Runs the flowbridge binary; returns exit status, standard output and standard error.
func runFlowbridge(_ arguments: [String], stdin: String? = nil) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: Repository.binary)
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    let input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

/// A temporary folder removed at the end of the test.
final class TemporaryFolder {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("flowbridge-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    func write(_ name: String, _ text: String) throws -> String {
        let path = url.appendingPathComponent(name).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// A trace line.
func traceLine(_ time: String, _ topic: String, _ payload: String) -> String {
    TraceMessage(at: RFC3339.parse(time)!, topic: topic, payload: Array(payload.utf8)).line
}

/// Replays a trace in-process and returns the NDJSON lines it prints.
func replay(config text: String, trace lines: [String], final: Bool = true) throws -> (lines: [JSONValue], engine: FlowEngine) {
    let config = try DaemonConfig.parse(text, file: "test.yaml")
    let zone = config.timezone.flatMap(SystemTimeZone.init(identifier:)) ?? SystemTimeZone(identifier: "UTC")!
    var replay = Replay(config: config.flow, zone: zone)
    var output: [String] = []
    func emit(_ items: [FlowEngine.Output]) {
        for case .push(let widget, let at, let push) in items { output.append(replay.pushLine(widget: widget, at: at, patch: push.patch)) }
    }
    for line in lines { emit(replay.feed(try TraceMessage(line: Array(line.utf8)))) }
    emit(replay.finish())
    if final { output += replay.finalLines() }
    return (try output.map { try JSONValue(parsing: $0) }, replay.engine)
}
