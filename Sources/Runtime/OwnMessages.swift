import Configuration
import FlowCore
import FoundationEssentials
import Mosquitto
import Platform
import Synchronization

/// flowbridge's own messages on the broker (its status, Victron keepalives). A publish that fails
/// is logged, once a minute per topic, never swallowed; so is one the broker refuses (an MQTT 5
/// PUBACK: not authorized), whichever part of flowbridge published it, and a message too large to read.
package final class OwnMessages: Sendable {
    let client: MQTTClient
    let log: Logger
    private let throttle = Mutex(LogThrottle())
    /// Apart from `throttle`, which a publish that is handed over clears: the broker's refusal of
    /// it comes later, and would be said every time.
    private let refusals = Mutex(LogThrottle())

    package init(client: MQTTClient, log: Logger) {
        self.client = client
        self.log = log
    }

    func publish(topic: String, payload: String = "", qos: QoS = .atMostOnce, retain: Bool = false) {
        do {
            try client.publish(topic: topic, payload: Array(payload.utf8), qos: qos, retain: retain)
            throttle.withLock { $0.clear(topic) }
        } catch {
            if throttle.withLock({ $0.allows(topic, at: Date()) }) { log.log(.warning, "\(error)") }
        }
    }
}

extension OwnMessages {
    /// The broker refused a publish to `topic` (MQTT 5 PUBACK): said once a minute per topic.
    package func refused(topic: String, reason: String) {
        if refusals.withLock({ $0.allows("publish \(topic)", at: Date()) }) {
            log.log(.error, "the broker refused the publish to '\(topic)': \(reason); it goes nowhere (is the broker's ACL for this user right?)")
        }
    }

    /// A message larger than any source takes: left unread, said once a minute whatever its topic
    /// (a wildcard's topics are the broker's to make up: one key each would keep them all, and say
    /// each).
    package func oversized(topic: String, bytes: Int, limit: Int) {
        if refusals.withLock({ $0.allows("oversized", at: Date()) }) {
            log.log(.warning, "a message of \(bytes) bytes on '\(topic)' is larger than the largest max_payload (\(limit) bytes): not read")
        }
    }
}

/// Victron Venus OS publishes only while asked (`R/<portal>/keepalive`), and every command that
/// listens to one asks the same way: at once on every connect, then on each keepalive's interval.
extension OwnMessages {
    /// Asks every portal now (after a connect).
    package func sendKeepalives(_ keepalives: [KeepaliveSettings]) {
        for keepalive in keepalives { publish(topic: keepalive.topic) }
    }

    /// Asks the portals whose interval ends at whole second `second` of the run.
    package func sendKeepalives(_ keepalives: [KeepaliveSettings], atSecond second: Int) {
        for keepalive in keepalives where second % max(1, Int(keepalive.intervalSeconds)) == 0 {
            publish(topic: keepalive.topic)
        }
    }
}
