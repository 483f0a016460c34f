import Dispatch
import Glibc
import Platform

/// The signals, as a part: the first SIGTERM or SIGINT asks for the graceful stop, a second one
/// while the daemon stops exits at once; SIGHUP reloads the config. It is started first and
/// stopped last, so a second signal is heard until the very end.
struct SignalHandling: Service {
    let name = "signals"
    let signals: SignalEvents
    let reload: @Sendable () -> Void
    /// Asks the group for its graceful stop.
    let stop: @Sendable () -> Void
    let status: StatusReporter
    let log: Logger

    func run() async throws {
        try await cancelOnGracefulShutdown {
            var stopping = false
            for await signal in signals.stream {
                if signal == SIGHUP {
                    reload()
                    continue
                }
                if stopping {
                    log.log(.warning, "second signal \(signal): exiting at once")
                    exit(ExitStatus.failure.rawValue)
                }
                stopping = true
                log.log(.info, "signal \(signal): stopping")
                status.stopping()
                stop()
            }
        }
    }
}

/// Unix signals as an async sequence (Dispatch sources; the default actions are switched off).
package final class SignalEvents: @unchecked Sendable {
    package let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation
    /// Kept alive for as long as signals are wanted; set once in init, never mutated (hence unchecked).
    private let sources: [DispatchSourceSignal]

    /// Ends the sequence (the daemon has stopped).
    package func finish() { continuation.finish() }

    package init(_ numbers: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        self.continuation = continuation
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }
}
