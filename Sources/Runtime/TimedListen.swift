import Configuration
import FoundationEssentials
import Mosquitto
import Persistence
import Platform

/// Listens to a broker for a fixed time, with the daemon's own MQTT client: what `check --listen`,
/// `discover` and `record` share. Messages are handed over in order with the wall-clock time they
/// arrived, a tick comes once a second, and at the end the client stops (publishing nothing).
/// Cancelling the task that runs it ends it early, the same way: `record` stops at a signal.
package struct TimedListen {
    let client: MQTTClient
    /// nil: until the task that runs the listen is cancelled.
    let seconds: Double?
    let log: Logger

    package init(client: MQTTClient, seconds: Double?, log: Logger) {
        self.client = client
        self.seconds = seconds
        self.log = log
    }

    /// How the connection went, for the report: a listen that never connected heard nothing, and
    /// says why.
    package struct Outcome: Sendable {
        package var connected = false
        package var lastProblem: String?
        /// Topic filters the broker refused to subscribe, with its reason.
        package var refusedSubscriptions: [(filter: String, reason: String)] = []
    }

    /// Runs for `seconds` (or until cancelled): `connected` after every (re)connect, `message` for
    /// each message, `tick` once a second with the whole seconds elapsed. Returns once the client
    /// has stopped.
    package func run(
        connected: @escaping @Sendable () -> Void, message: @escaping @Sendable (MQTTMessage, Date) -> Void,
        tick: @escaping @Sendable (Int, Date) -> Void
    ) async -> Outcome {
        let client = client
        let log = log
        let end = seconds.map { ContinuousClock.now + .milliseconds(Int(($0 * 1000).rounded())) }
        do { try client.start() } catch {
            return Outcome(connected: false, lastProblem: "\(error)")
        }
        return await withTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                var outcome = Outcome()
                for await event in client.events {
                    switch event {
                    case .message(let received):
                        message(received, Date())
                    case .connected:
                        outcome.connected = true
                        log.log(.info, "connected to \(client.options.host):\(client.options.port)")
                        connected()
                    case .disconnected(let reason):
                        outcome.lastProblem = client.lastError?.cause ?? reason
                        log.log(.warning, "broker connection: \(reason); retrying")
                    case .subscribed(let taken):
                        log.log(.info, BrokerConnection.subscribedText(taken))
                    case .subscriptionRefused(let filter, let reason):
                        log.log(.error, BrokerConnection.refusalText(filter: filter, reason: reason))
                        if !outcome.refusedSubscriptions.contains(where: { $0.filter == filter }) {
                            outcome.refusedSubscriptions.append((filter, reason))
                        }
                    case .publishRefused(let topic, let reason):
                        log.log(.warning, "the broker refused the publish to '\(topic)': \(reason)")
                    case .caughtUp:
                        break  // each message is reported as it comes
                    case .oversizedMessage(let topic, let bytes):
                        log.log(.warning, "a message of \(bytes) bytes on '\(topic)' is larger than the largest max_payload: not read")
                    }
                }
                return outcome
            }
            group.addTask {
                var second = 0
                while end.map({ ContinuousClock.now < $0 }) ?? true {
                    let next = ContinuousClock.now + .seconds(1)
                    try? await Task.sleep(until: end.map { min($0, next) } ?? next, clock: .continuous)
                    if Task.isCancelled { break }
                    second += 1
                    tick(second, Date())
                }
                // Stopping ends the events, and with them the other task.
                client.stop()
                return nil
            }
            var outcome = Outcome()
            for await result in group { if let result { outcome = result } }
            return outcome
        }
    }
}
