import FlowCore
import Foundation
import Glibc
import TestSupport
import Synchronization
import Testing

/// `deploy/flowbridge.service` holds what it promises, without a running systemd: the system calls
/// the daemon really makes (strace) pass its `SystemCallFilter=`, the address families its
/// `RestrictAddressFamilies=`, and a missing credential file does not fail the start.
@Suite(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason), .ownThread)
struct ServiceUnitTests {
    static let unitPath = Repository.root.appendingPathComponent("deploy/flowbridge.service")

    /// The values of `Key=` lines in the unit, in order.
    static func values(of key: String) throws -> [String] {
        try String(contentsOf: unitPath, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("\(key)=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    /// A short life of the daemon: connect, messages, a push, a state save, SIGHUP (with a topic
    /// that changed), SIGTERM; plus what a session adds for a sink of its own. Adding a sink to
    /// this test is adding a session: its config section and what makes the sink deliver.
    struct Session: Sendable, CustomTestStringConvertible {
        var name: String
        /// Config lines appended to the base config (a sink's section).
        var extraConfig: @Sendable (Context) async throws -> String = { _ in "" }
        /// Runs while the daemon is up and connected, after the base session's first push.
        var exercise: @Sendable (Context) async throws -> Void = { _ in }

        var testDescription: String { name }

        /// What a session has at hand.
        final class Context: Sendable {
            let broker: MosquittoBroker
            let folder: URL
            /// `$CREDENTIALS_DIRECTORY` of the daemon.
            let credentials: URL
            /// The daemon's output so far (pushes and log lines).
            let output: @Sendable () -> String
            /// What the session started and needs until the end (a server).
            let objects = Mutex<[any Sendable]>([])
            func keep(_ object: any Sendable) { objects.withLock { $0.append(object) } }
            var kept: [any Sendable] { objects.withLock { $0 } }

            init(broker: MosquittoBroker, folder: URL, credentials: URL, output: @escaping @Sendable () -> String) {
                self.broker = broker
                self.folder = folder
                self.credentials = credentials
                self.output = output
            }
        }

        static let all: [Session] = [
            Session(name: "stdout sink"),
            // libcurl over HTTPS to the widget stand-in, its token a credential: PUT, then a PATCH.
            Session(
                name: "widget API sink",
                extraConfig: { context in
                    let service = try await WidgetStandIn(tls: true)
                    context.keep(service)
                    try Data((service.token + "\n").utf8).write(to: context.credentials.appendingPathComponent("widget-token"))
                    let ca = try #require(service.tlsFiles).caFile
                    return "\n    push: {url: \"\(service.url)\", token_file: widget-token, ca_file: \(ca)}\n"
                },
                exercise: { context in
                    let service = try #require(context.kept.first as? WidgetStandIn)
                    try await context.broker.publish(topic: "grid/power", payload: "-250")
                    // A PUT and then a PATCH (or two: the pushes before may not have coalesced).
                    let delivered = await service.waitUntil { $0.requests.map(\.method).prefix(2) == ["PUT", "PATCH"] }
                    #expect(delivered != nil, "\(context.output())")
                }),
        ]
    }

    @Test(arguments: Session.all)
    func everySystemCallTheDaemonMakesPassesTheUnitsFilter(session: Session) async throws {
        let strace = try #require(["/usr/bin/strace", "/bin/strace"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                  "strace is missing: make test installs it")
        let broker = try await MosquittoBroker(users: ["meter": "s3cret"], tls: true)
        let tls = try #require(broker.tlsFiles)
        let folder = TemporaryFolder()
        let credentials = folder.url.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        try Data("s3cret\n".utf8).write(to: credentials.appendingPathComponent("mqtt-password"))
        let stateDirectory = folder.url.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: true)
        let output = folder.url.appendingPathComponent("out.log").path
        let context = Session.Context(
            broker: broker, folder: folder.url, credentials: credentials, output: { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" })
        let config = """
            mqtt: {host: 127.0.0.1, port: \(broker.port), client_id: flowbridge-strace, username: meter, password_file: mqtt-password, tls: {ca_file: \(tls.caFile)}}
            keepalive: [{topic: R/c0619ab1d2e3/keepalive, interval: 1s}]
            output: {stdout: true}
            sources:
              solar: {topic: solar/ac/power}
              grid: {topic: grid/power}
            widgets:
              power:
                template: flow
                flow:
                  inputs: [{name: Solar, rate: solar, total: integrate}]
                  exchange: {name: Grid, rate: grid, total: import}
                  output: {name: Home, rate: balance}
                policy: {min_interval: 0s, settle: 0s, rate_step: 1, rate_deadband: 0}
            """ + (try await session.extraConfig(context))
        let configPath = try folder.write("config.yaml", config)
        let notify = try NotifySocket(in: folder)
        let trace = folder.url.appendingPathComponent("trace.txt").path
        // What systemd gives the service: its state directory, credentials, the notify socket,
        // the watchdog, and the journal on standard error.
        let tracer = try ChildProcess(
            strace, ["-f", "-qq", "-o", trace, "--", Repository.binary, "run", "--config", configPath], outputFile: output,
            environment: [
                "STATE_DIRECTORY": stateDirectory.path, "CREDENTIALS_DIRECTORY": credentials.path, "NOTIFY_SOCKET": notify.path,
                "WATCHDOG_USEC": "30000000",
            ])
        defer { tracer.send(SIGKILL) }
        let daemonPID = try #require(await Self.child(of: tracer.pid, running: Repository.binary), "strace did not start flowbridge: \(context.output())")
        defer { kill(daemonPID, SIGKILL) }  // a tracee outlives a killed strace
        func waitFor(_ needle: String) async -> Bool { await eventually { context.output().contains(needle) } }
        #expect(await waitFor("subscribed to"), "\(context.output())")
        try await broker.publish(topic: "solar/ac/power", payload: "1200")
        try await broker.publish(topic: "grid/power", payload: "-300")
        #expect(await waitFor(#""rate":900"#), "\(context.output())")
        try await session.exercise(context)
        let statePath = stateDirectory.appendingPathComponent("state.json").path
        #expect(await eventually { FileManager.default.fileExists(atPath: statePath) }, "no state saved: \(context.output())")
        _ = try folder.write("config.yaml", config.replacingOccurrences(of: "grid/power", with: "grid/power2"))
        kill(daemonPID, SIGHUP)
        #expect(await waitFor("loaded"), "\(context.output())")
        try await broker.publish(topic: "grid/power2", payload: "-100")
        #expect(await waitFor(#""rate":1100"#), "\(context.output())")
        kill(daemonPID, SIGTERM)
        #expect(await tracer.waitForExit(timeout: .seconds(10)), "\(context.output())")
        #expect(context.output().contains("state written to"), "\(context.output())")

        let calls = try Self.systemCalls(inTrace: trace)
        #expect(calls.names.contains("setpriority") && calls.names.contains("sendto"), "the trace is incomplete: \(calls.names.sorted())")
        let allowed = try Self.allowedSystemCalls()
        let denied = calls.names.subtracting(allowed).sorted()
        #expect(denied.isEmpty, "SystemCallFilter= in deploy/flowbridge.service would kill flowbridge (SIGSYS) at: \(denied.joined(separator: ", "))")
        let families = Set(try Self.values(of: "RestrictAddressFamilies").flatMap { $0.split(separator: " ").map(String.init) })
        let refused = calls.addressFamilies.subtracting(families).sorted()
        #expect(refused.isEmpty, "RestrictAddressFamilies= would refuse sockets of: \(refused.joined(separator: ", "))")
    }

    /// The system calls in an `strace -f` trace, and the address families of its sockets.
    static func systemCalls(inTrace path: String) throws -> (names: Set<String>, addressFamilies: Set<String>) {
        var names: Set<String> = []
        var families: Set<String> = []
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            // "1234  name(args) = 0", "1234  name(args <unfinished ...>", "1234  <... name resumed>) = 0"
            var rest = line.drop { $0.isNumber }.drop { $0 == " " }
            if rest.hasPrefix("<... ") { rest = rest.dropFirst(5) }
            let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            guard !name.isEmpty, rest.dropFirst(name.count).first == "(" || rest.dropFirst(name.count).hasPrefix(" resumed") else { continue }
            names.insert(String(name))
            if name == "socket", rest.hasPrefix("socket(") {
                families.insert(String(rest.dropFirst("socket(".count).prefix { $0 != "," }))
            }
        }
        return (names, families)
    }

    /// The system calls the unit's `SystemCallFilter=` lines allow, as systemd builds the filter:
    /// the first line makes an allow list (with `@default`, which systemd always adds), a later
    /// `~` line removes from it, a later plain line adds to it, an empty one starts over.
    static func allowedSystemCalls() throws -> Set<String> {
        var allowed: Set<String> = []
        var started = false
        for value in try values(of: "SystemCallFilter") {
            if value.isEmpty {
                allowed = []
                started = false
                continue
            }
            let removing = value.hasPrefix("~")
            let names = try value.dropFirst(removing ? 1 : 0).split(separator: " ").flatMap {
                try expand(String($0.prefix { $0 != ":" }))
            }
            if !started {
                #expect(!removing, "the unit's first SystemCallFilter= must be an allow list, so anything new is denied")
                allowed = try expand("@default")
                started = true
            }
            if removing { allowed.subtract(names) } else { allowed.formUnion(names) }
        }
        return allowed
    }

    /// A system call, or the calls of a `@group` with its nested groups, from `systemd-analyze`.
    static func expand(_ name: String) throws -> Set<String> {
        guard name.hasPrefix("@") else { return [name] }
        let tool = try #require(["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) })
        let analyzed = try runProgram(tool, ["syscall-filter", name])
        let text = analyzed.out
        #expect(analyzed.status == 0, "systemd-analyze syscall-filter \(name): \(analyzed.err)")
        var names: Set<String> = []
        for entry in text.split(separator: "\n").dropFirst().map({ $0.trimmingCharacters(in: .whitespaces) })
        where !entry.isEmpty && !entry.hasPrefix("#") {
            names.formUnion(try expand(entry))
        }
        return names
    }

    /// The child process of `pid` that runs `executable` (strace's tracee), once it has exec'd it.
    /// strace may fork a short-lived helper first, so the first child is not necessarily the tracee.
    static func child(of pid: pid_t, running executable: String) async -> pid_t? {
        await poll {
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            return children.split(separator: " ").compactMap { pid_t($0) }.first { child in
                let commandLine = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(child)/cmdline"))) ?? Data()
                return commandLine.split(separator: 0).first.map { String(decoding: $0, as: UTF8.self) } == executable
            }
        }
    }

    /// systemd 252 fails a unit whose `LoadCredential=` file is missing, unless a `SetCredential=`
    /// of the same name gives a default; the default is one flowbridge reads as empty (`\n`: 252
    /// refuses an empty value, which `systemdUnitVerifies` would show).
    /// The daemon starts after the clock is set where systemd can tell (time-sync.target), and the
    /// unit says why that alone does not keep a wrong clock out.
    @Test func theDaemonStartsAfterTimeSync() throws {
        #expect(try Self.values(of: "After").contains { $0.split(separator: " ").contains("time-sync.target") })
        let unit = try String(contentsOf: Self.unitPath, encoding: .utf8)
        #expect(unit.contains("systemd-time-wait-sync.service") && unit.contains("not enough on its own"))
    }

    @Test func everyLoadedCredentialHasAnEmptyDefault() throws {
        let loaded = try Self.values(of: "LoadCredential").map { String($0.prefix { $0 != ":" }) }
        let defaults = try Self.values(of: "SetCredential")
        #expect(!loaded.isEmpty)
        for name in loaded {
            let value = defaults.first { $0.hasPrefix("\(name):") }?.dropFirst(name.count + 1)
            #expect(value == #"\n"#, "LoadCredential=\(name) without SetCredential=\(name):\\n")
        }
    }

    /// The README's install lines can be run again after an edit: they never overwrite the config
    /// or a secret that is already there.
    @Test func theReadmesInstallLinesKeepWhatIsThere() throws {
        let readme = try String(contentsOf: Repository.root.appendingPathComponent("README.md"), encoding: .utf8)
        let installs = readme.split(separator: "\n").filter { $0.contains("install ") && $0.contains("/etc/flowbridge/") && !$0.contains("install -d") }
        #expect(!installs.isEmpty)
        for line in installs {
            let target = String(line.split(separator: " ").first { $0.hasPrefix("/etc/flowbridge/") } ?? "")
            #expect(line.contains("test -e \(target) ||"), "\(line)")
        }
    }
}
