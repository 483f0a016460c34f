import Configuration
import FoundationEssentials
import Mosquitto
import Platform
import Synchronization

/// flowbridge's own messages on the broker (its status, Victron keepalives). A publish that fails
/// is logged, once a minute per topic, never swallowed.
package final class OwnMessages: Sendable {
    let client: MQTTClient
    let log: Logger
    private let throttle = Mutex(LogThrottle())

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
