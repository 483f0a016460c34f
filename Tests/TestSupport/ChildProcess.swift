import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process for tests, started with `posix_spawn` so that it gets a clean signal mask.
///
/// Why not Foundation's `Process`: on Linux it passes on the signal mask of the spawning thread,
/// and test code runs on dispatch threads that block nearly every signal. A `mosquitto` started
/// that way ignores SIGTERM (it never stops orderly) and `mosquitto_sub -W` never times out
/// (SIGALRM). Here the child starts with no blocked signals and default handlers, and with none
/// of our file descriptors (a broker must not keep a test client's socket alive).
///
/// `@unchecked Sendable`: the only mutable state, the cached exit status, is guarded by `lock`.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    private let lock = NSLock()
    private var status: Int32?

    /// The environment this process started with (`/proc/self/environ`), on which the children's
    /// is built. Not the current one: tests here switch `TZ` while they compute local times in
    /// other zones (`SystemTimeZone`), and a daemon started meanwhile kept its day in that zone.
    public static let startEnvironment: [String: String] = {
        guard let data = FileManager.default.contents(atPath: "/proc/self/environ") else { return ProcessInfo.processInfo.environment }
        var variables: [String: String] = [:]
        for entry in data.split(separator: 0) {
            let text = String(decoding: entry, as: UTF8.self)
            guard let equals = text.firstIndex(of: "=") else { continue }
            variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        return variables
    }()

    /// Adds to `actions` the closing, in the child, of every descriptor above standard error: a
    /// child takes none of ours along. Tests run in parallel, and a descriptor another test opens
    /// while this child is spawned (a pipe whose reading end it is about to close, a client's
    /// socket) kept open in a child outlives its test's intent: a broker kept a client's socket
    /// alive, a daemon's pushes found a reader that had gone. glibc's `closefrom` action (2.34)
    /// closes whatever is open when the child starts; without it, the descriptors open now.
    public static func closeTheRest(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = closeFrom, unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3) == 0 { return }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap({ Int32($0) }) where fd > 2 {
            posix_spawn_file_actions_addclose(&actions, fd)  // one closed meanwhile is passed over
        }
    }

    /// `posix_spawn_file_actions_addclosefrom_np`, looked up once: the C library here has it,
    /// but Swift's view of it does not declare it.
    nonisolated(unsafe) private static let closeFrom: UnsafeMutableRawPointer? = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np")

    /// Starts `path` with `arguments`.
    /// - Parameters:
    ///   - outputFile: stdout and stderr are appended to it (`nil`: discarded).
    ///   - errorFile: stderr goes here instead, when given.
    ///   - standardInput: a file to read stdin from (`nil`: /dev/null).
    ///   - environment: variables added to (or replacing ones in) the one we started with.
    public init(_ path: String, _ arguments: [String], outputFile: String? = nil, errorFile: String? = nil,
                standardInput: String? = nil, environment: [String: String] = [:]) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, standardInput ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputFile ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if let errorFile {
            posix_spawn_file_actions_addopen(&actions, 2, errorFile, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        Self.closeTheRest(&actions)

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let variables = Self.startEnvironment.merging(environment) { _, new in new }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw BrokerError("cannot start \(path): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    /// Kills a child that is still running when the last reference goes, and reaps it.
    deinit {
        if isRunning {
            Glibc.kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
    }

    /// Reaps the child without blocking once it has exited.
    public var isRunning: Bool {
        lock.withLock {
            if status != nil { return false }
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid { status = raw }
            return status == nil
        }
    }

    /// The exit code, or 128 + the signal number for a child killed by a signal; `nil` while running.
    public var exitCode: Int32? {
        guard !isRunning, let raw = lock.withLock({ status }) else { return nil }
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }

    public func send(_ signal: Int32) {
        if isRunning { Glibc.kill(pid, signal) }
    }

    /// Waits (polling, so no thread is blocked) until the child has exited or `timeout` passes.
    @discardableResult
    public func waitForExit(timeout: Duration) async -> Bool {
        await eventually(timeout: timeout) { !isRunning }
    }
}
