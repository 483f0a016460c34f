import FlowCore
import Foundation
import Mosquitto
import Testing

/// Paths inside the repository: a clone alone has everything a test reads.
public enum Repository {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    public static let fixtures = root.appendingPathComponent("Tests/Fixtures")

    /// Payloads real devices published (`Tests/Fixtures/devices.json`), by device and topic.
    public static func deviceCases() throws -> [JSONValue] {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("devices.json"))
        return try JSONValue(parsing: Array(data))["cases"]?.arrayValue ?? []
    }

    /// The payload a real device published on `topic` (the first case, or the one whose payload matches).
    public static func payload(_ topic: String, where matches: (String) -> Bool = { _ in true }) throws -> String {
        let found = try deviceCases().first { $0["topic"]?.stringValue == topic && matches($0["payload"]?.stringValue ?? "") }
        guard let payload = found?["payload"]?.stringValue else { throw FixtureMissing(topic: topic) }
        return payload
    }

    public struct FixtureMissing: Error { var topic: String }

    /// One poll of an LG ESS through pyess's essmqtt (`Tests/Fixtures/lg-ess-pyess.json`): each
    /// topic with its payload, in the order essmqtt publishes them.
    public static func lgESSMessages() throws -> [(topic: String, payload: String)] {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("lg-ess-pyess.json"))
        return try (JSONValue(parsing: Array(data))["messages"]?.arrayValue ?? []).map { message in
            guard let topic = message["topic"]?.stringValue, let payload = message["payload"]?.stringValue else { throw FixtureMissing(topic: "\(message)") }
            return (topic, payload)
        }
    }

    /// Price schedules in the shape each feed's source writes them (`Tests/Fixtures/price-schedules.json`).
    public static func scheduleCases() throws -> [JSONValue] {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("price-schedules.json"))
        return try JSONValue(parsing: Array(data))["cases"]?.arrayValue ?? []
    }

    /// Every file under `Config/` (recursively), relative to the root: `Config/examples/evcc.yaml`.
    public static var shippedConfigs: [String] {
        let folder = root.appendingPathComponent("Config")
        let files = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? []
        return files.filter { !$0.hasSuffix("/") && !isDirectory(folder.appendingPathComponent($0).path) }.sorted().map { "Config/\($0)" }
    }

    public static func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }

    /// The built `flowbridge` binary, beside the test bundle.
    public static var binary: String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("flowbridge").path,
            root.appendingPathComponent(".build/debug/flowbridge").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[1]
    }
}

/// Runs the flowbridge binary; returns exit status, standard output and standard error.
public func runFlowbridge(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
    try runProgram(Repository.binary, arguments, stdin: stdin, environment: environment)
}

/// Runs a program to its end; returns exit status, standard output and standard error.
public func runProgram(
    _ path: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = ChildProcess.startEnvironment.merging(environment) { _, new in new }
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

/// Publishes `messages` (topic, payload) in order over one connection of flowbridge's own MQTT client, and returns
/// once the broker has taken them all. For a listen with a fixed window (`check --listen`,
/// `discover`): its messages must all come inside it, and one `mosquitto_pub` each takes a second
/// or more on a machine busy with the parallel suite.
public func publishInOrder(_ broker: MosquittoBroker, _ messages: [(String, String)]) async throws {
    let user = broker.users.keys.sorted().first
    let options = MQTTOptions(
        port: broker.port, clientID: "test-publisher-\(UUID().uuidString.prefix(8))", username: user, password: user.flatMap { broker.users[$0] },
        tls: broker.tlsFiles.map { TLSOptions(caFile: $0.caFile) })
    let client = try MQTTClient(options: options, subscriptions: [])
    try client.start()
    defer { client.stop() }
    guard await eventually({ client.isConnected }) else { throw BrokerError("the publisher did not connect. Log:\n\(broker.log)") }
    for (topic, payload) in messages { try client.publish(topic: topic, payload: Array(payload.utf8), qos: .atMostOnce) }
    guard await broker.waitForLog("Received PUBLISH from \(options.clientID)", count: messages.count) else {
        throw BrokerError("the broker did not get all \(messages.count) messages. Log:\n\(broker.log)")
    }
}

/// A temporary folder removed at the end of the test.
public final class TemporaryFolder {
    public let url: URL
    public init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("flowbridge-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    public func write(_ name: String, _ text: String) throws -> String {
        let path = url.appendingPathComponent(name).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// A figure in kB of `/proc/PID/status` (`VmHWM:`, `VmRSS:`), nil when the process or the field
/// is gone.
public func statusKilobytes(_ field: String, of pid: pid_t = getpid()) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    let line = status.split(separator: "\n").first { $0.hasPrefix(field) }
    return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true)[1]) }
}

/// Runs the flowbridge binary to its end and measures its peak resident memory (`wait4`'s
/// `ru_maxrss`); standard error is returned, standard output discarded. Linux counts the memory
/// the child shared with this process until its exec (posix_spawn is a vfork): the figure is at
/// least this test process's own peak at the spawn, `floorKilobytes`, which grows as the tests
/// running beside it do, so a figure is compared with its own floor, not another run's.
public func runFlowbridgeMeasured(
    _ arguments: [String], environment: [String: String] = [:]
) throws -> (status: Int32, err: String, peakRSSKilobytes: Int, floorKilobytes: Int) {
    let folder = TemporaryFolder()
    let errors = folder.url.appendingPathComponent("err.log").path
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    ChildProcess.closeTheRest(&actions)
    let argv = ([Repository.binary] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let variables = ChildProcess.startEnvironment.merging(environment) { _, new in new }
    let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { envp.forEach { free($0) } }
    var pid = pid_t()
    let floor = statusKilobytes("VmHWM:") ?? 0
    let rc = posix_spawn(&pid, Repository.binary, &actions, nil, argv, envp)
    guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EINVAL) }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    let text = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
    return ((status >> 8) & 0xff, text, Int(usage.ru_maxrss), floor)
}

/// The command that runs `arguments` as a normal user: through `setpriv` as nobody when the tests
/// run as root (as CI does), as they are otherwise. The flowbridge binary is linked into `folder`
/// first: the build folder may be one nobody cannot enter (CI tests a copy in a 0700 folder).
public func asNormalUser(_ arguments: [String], in folder: TemporaryFolder) -> (path: String, arguments: [String]) {
    guard getuid() == 0 else { return (arguments[0], Array(arguments.dropFirst())) }
    var arguments = arguments
    if let position = arguments.firstIndex(of: Repository.binary) {
        let reachable = folder.url.appendingPathComponent("flowbridge").path
        if !FileManager.default.fileExists(atPath: reachable), link(Repository.binary, reachable) != 0 {
            try? FileManager.default.copyItem(atPath: Repository.binary, toPath: reachable)
        }
        arguments[position] = reachable
    }
    return ("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--"] + arguments)
}

/// Hands `path` (and what is under it) to the user `asNormalUser` runs as.
public func giveToNormalUser(_ path: String) {
    guard getuid() == 0 else { return }
    chown(path, 65534, 65534)
    for item in FileManager.default.subpaths(atPath: path) ?? [] { chown("\(path)/\(item)", 65534, 65534) }
}
