import Dispatch
import Glibc
import Platform

/// The signals, as a part: the first SIGTERM or SIGINT asks for the graceful stop; SIGHUP reloads
/// the config. It is started first and stopped last, so a later signal is heard until the very end.
///
/// A second stop signal within `sameRequestWindow` of the first is the same request: `timeout`
/// and some supervisors signal the child and then its whole process group, so one stop arrives
/// twice, microseconds apart, and must still write the state and exit 0. One that comes later is
/// someone who does not want to wait: it exits at once, and removes the temporary file of a state
/// write it cuts short.
struct SignalHandling: Service {
    let name = "signals"
    let signals: SignalEvents
    let reload: @Sendable () -> Void
    /// Asks the group for its graceful stop.
    let stop: @Sendable () -> Void
    let status: StatusReporter
    /// The state file whose temporary siblings an exit at once removes; nil in a dry run.
    let statePath: String?
    let log: Logger

    /// How long after the first stop signal another one is taken as the same request.
    static let sameRequestWindow = Duration.seconds(1)

    func run() async throws {
        try await cancelOnGracefulShutdown {
            var stoppingSince: ContinuousClock.Instant?
            for await signal in signals.stream {
                if signal == SIGHUP {
                    reload()
                    continue
                }
                if let since = stoppingSince {
                    if since.duration(to: .now) < Self.sameRequestWindow {
                        log.log(.info, "signal \(signal) again: the same stop")
                        continue
                    }
                    log.log(.warning, "second signal \(signal): exiting at once")
                    if let statePath { TemporaryStateFiles(statePath: statePath).remove() }
                    exit(ExitStatus.failure.rawValue)
                }
                stoppingSince = .now
                log.log(.info, "signal \(signal): stopping")
                status.stopping()
                stop()
            }
        }
    }
}

/// The temporary files an atomic write of the state leaves while it runs (`state.json.tmp-a8Xk2q`,
/// see `FileIO.writeAtomically`): an exit in the middle of a write would leave one behind for good.
/// Only this process writes the state (`StateLock`), so every such file is ours or a leftover.
struct TemporaryStateFiles {
    let statePath: String

    /// The folder and the names' prefix.
    private var folder: String { FileIO.folder(of: statePath) }
    private var prefix: String { "\(statePath.split(separator: "/", omittingEmptySubsequences: false).last ?? "").tmp-" }

    /// The paths of the temporary files there now.
    func paths() -> [String] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var found: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(prefix) { found.append(folder == "/" ? "/\(name)" : "\(folder)/\(name)") }
        }
        return found
    }

    func remove() {
        for path in paths() { unlink(path) }
    }
}

/// Unix signals as an async sequence (Dispatch sources; the default actions are switched off).
package final class SignalEvents: @unchecked Sendable {
    package let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation
    /// Kept alive for as long as signals are wanted; set once in init, never mutated (hence unchecked).
    private let sources: [DispatchSourceSignal]

    private static let queue = DispatchQueue(label: "flowbridge.signals")

    /// Ends the sequence (the daemon has stopped).
    package func finish() { continuation.finish() }

    package init(_ numbers: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        self.continuation = continuation
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            // A queue of their own (a serial one): the shared pool's queues wake libdispatch's
            // monitor of that pool every second from their first use on (`ThreadExecutor`).
            let source = DispatchSource.makeSignalSource(signal: number, queue: Self.queue)
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }
}
