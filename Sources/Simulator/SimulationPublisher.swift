import FoundationEssentials
import Mosquitto

/// Publishes a simulation live: one cycle per `interval` of real time whatever the speed, each
/// device its messages a few milliseconds after the one before, like meters on a real network.
public struct SimulationPublisher: Sendable {
    public let client: MQTTClient
    /// Real time between two cycles.
    public let interval: Duration
    /// Connection trouble and recovery, one line each.
    public let log: @Sendable (String) -> Void
    /// When the first cycle goes out (the simulation's first instant, on a clock shared with the
    /// daemon's); nil: once connected.
    public let startAt: Date?

    public init(client: MQTTClient, interval: Duration = .seconds(1), startAt: Date? = nil, log: @escaping @Sendable (String) -> Void) {
        self.client = client
        self.interval = interval
        self.startAt = startAt
        self.log = log
    }

    /// Waits for the broker (the client connects in the background), calls `connected`, then
    /// publishes cycle after cycle until the task is cancelled. A cycle that finds the broker gone
    /// is not sent: the next one carries the home's state then, as a device that reconnects does.
    public func run(_ simulation: Simulation, connected: @Sendable () -> Void) async {
        var simulation = simulation
        for await event in client.events {
            if case .connected = event { break }
            if case .disconnected(let reason) = event { log("broker: \(reason); retrying") }
        }
        guard !Task.isCancelled else { return }
        connected()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await reportConnection() }
            if let startAt, startAt.timeIntervalSinceNow > 0 { try? await Task.sleep(for: .seconds(startAt.timeIntervalSinceNow)) }
            let clock = ContinuousClock()
            var deadline = clock.now
            var failing = false
            while !Task.isCancelled {
                let sent = await publish(simulation.next())
                if sent == failing {  // the broker went away, or came back
                    failing = !sent
                    log(sent ? "publishing again" : "cannot publish (the broker is gone); the next cycles will try again")
                }
                deadline += interval
                // A machine that stalled (suspended, overloaded) resumes the rhythm from now, without a burst.
                if deadline < clock.now - interval { deadline = clock.now }
                try? await Task.sleep(until: deadline, clock: clock)
            }
            group.cancelAll()
        }
    }

    /// Sends a cycle's messages, device after device; false when any could not be sent.
    private func publish(_ cycle: SimulationCycle) async -> Bool {
        var sent = true
        var elapsedMilliseconds = 0
        for burst in cycle.bursts {
            let lag = burst.device.offsetMilliseconds - elapsedMilliseconds
            if lag > 0 {
                try? await Task.sleep(for: .milliseconds(lag))
                elapsedMilliseconds += lag
            }
            for message in burst.messages {
                do { try client.publish(topic: message.topic, payload: message.payload, qos: message.qos, retain: message.retain) } catch {
                    sent = false
                }
            }
        }
        return sent
    }

    /// Logs the connection's ups and downs until cancelled.
    private func reportConnection() async {
        for await event in client.events {
            switch event {
            case .connected: log("broker: connected again")
            case .disconnected(let reason): log("broker: \(reason); reconnecting")
            case .message, .caughtUp, .subscribed, .subscriptionRefused, .publishRefused, .oversizedMessage: break
            }
        }
    }
}
