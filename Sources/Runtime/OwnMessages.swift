import Configuration
import Persistence
import Platform

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
