import Dispatch
import Glibc
import Platform
import Synchronization

/// The signals, as a part: the first SIGTERM or SIGINT asks for the graceful stop; SIGHUP reloads
/// the config. It is started first and stopped last, so a later signal is heard until the very end.
///
/// A second stop signal within `sameRequestWindow` of the first is the same request: `timeout`
/// and some supervisors signal the child and then its whole process group, so one stop arrives
/// twice, microseconds apart, and must still write the state and exit 0. One that comes later is
/// someone who does not want to wait: it exits at once, and removes the temporary file of a state
/// write it cuts short. Both are judged by when the signal arrived, where it arrives
/// (`SignalEvents`), not when a task gets to it: the tasks run on one thread, which a stop's step
/// may hold for a second (the broker's "offline").
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
        // A late stop signal exits where it arrives, on the signals' queue: the tasks may be
        // busy with the stop it cuts short (`ThreadExecutor` runs them on one thread).
        signals.onLateStop { [log, statePath] signal in
            log.log(.warning, "second signal \(signal): exiting at once")
            if let statePath { TemporaryStateFiles(statePath: statePath).remove() }
            exit(ExitStatus.failure.rawValue)
        }
        try await cancelOnGracefulShutdown {
            var stopping = false
            for await signal in signals.stream {
                if signal == SIGHUP {
                    reload()
                    continue
                }
                // Within the window of the first (judged as each arrived), or before this part
                // started: the same request.
                if stopping {
                    log.log(.info, "signal \(signal) again: the same stop")
                    continue
                }
                stopping = true
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
///
/// Each stop signal (any but SIGHUP) is judged as it arrives, by when: the first, and any within
/// `SignalHandling.sameRequestWindow` of it, go into the sequence; a later one goes to the
/// `onLateStop` action, once one is set (before, into the sequence too).
package final class SignalEvents: @unchecked Sendable {
    package let stream: AsyncStream<Int32>
    private let arrivals: Arrivals
    /// Kept alive for as long as signals are wanted; set once in init, never mutated (hence unchecked).
    private let sources: [DispatchSourceSignal]

    /// The signals' handlers run here, one at a time. A queue of their own (a serial one): the
    /// shared pool's queues wake libdispatch's monitor of that pool every second from their first
    /// use on (`ThreadExecutor`).
    private static let queue = DispatchQueue(label: "flowbridge.signals")

    /// Ends the sequence (the daemon has stopped).
    package func finish() { arrivals.continuation.finish() }

    /// What a stop signal that comes later than the window after the first does, where it arrives.
    package func onLateStop(_ action: @escaping @Sendable (Int32) -> Void) { arrivals.lateStop.withLock { $0 = action } }

    package init(_ numbers: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        let arrivals = Arrivals(continuation: continuation)
        self.arrivals = arrivals
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: Self.queue)
            source.setEventHandler { arrivals.arrived(number, at: .now) }
            source.resume()
            return source
        }
    }

    /// The signals as they arrive, on the signals' queue.
    private final class Arrivals: Sendable {
        let continuation: AsyncStream<Int32>.Continuation
        /// When the first stop signal arrived.
        let firstStop = Mutex<ContinuousClock.Instant?>(nil)
        let lateStop = Mutex<(@Sendable (Int32) -> Void)?>(nil)

        init(continuation: AsyncStream<Int32>.Continuation) { self.continuation = continuation }

        func arrived(_ signal: Int32, at now: ContinuousClock.Instant) {
            if signal != SIGHUP {
                let late = firstStop.withLock { first in
                    guard let first else {
                        first = now
                        return false
                    }
                    return first.duration(to: now) >= SignalHandling.sameRequestWindow
                }
                if late, let action = lateStop.withLock({ $0 }) { return action(signal) }
            }
            continuation.yield(signal)
        }
    }
}
