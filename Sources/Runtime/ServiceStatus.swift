import Configuration
import FoundationEssentials
import Persistence
import Platform
import Synchronization

/// The one-line status `systemctl status flowbridge` shows (sd_notify `STATUS=`): the broker
/// connection and, once connected, the sources that have sent nothing within their grace.
struct ServiceStatus: Equatable {
    enum Broker: Equatable {
        case connecting
        case connected
        /// Not connected; `cause` says why ("connection refused").
        case waiting(cause: String)
    }

    /// `HOST:PORT` of the broker.
    var address: String
    var broker = Broker.connecting
    var sourceCount: Int
    /// Sources that sent nothing at all within their grace after the subscription (a typo in a
    /// topic shows here), by name.
    var silentSources: [String] = []
    /// Topic filters the broker refused to subscribe (its ACL) on this connection.
    var refusedTopics: [String] = []
    /// When the connection that is up came up (the window shows it).
    var connectedSince: Date?
    /// Connections so far, the first one included.
    var connections = 0

    init(address: String, sourceCount: Int) {
        self.address = address
        self.sourceCount = sourceCount
    }

    var text: String {
        switch broker {
        case .connecting: return "connecting to broker \(address)"
        case .waiting(let cause): return "waiting for broker \(address): \(cause)"
        case .connected:
            let silent = silentSources.isEmpty
                ? "" : "; \(silentSources.count) of \(counted(sourceCount, "source")) silent: \(silentSources.joined(separator: ", "))"
            let refused = refusedTopics.isEmpty ? "" : "; subscription refused: \(refusedTopics.joined(separator: ", "))"
            return "connected to \(address)\(refused)\(silent)"
        }
    }
}

/// What the daemon tells systemd: ready, the watchdog's pings, the stop, and `STATUS=` whenever
/// the status text changes (and nothing when it does not), from whichever task changed it.
final class StatusReporter: Sendable {
    private let notifier: SystemdNotifier
    private let state: Mutex<(status: ServiceStatus, sent: String?)>

    init(_ status: ServiceStatus, notifier: SystemdNotifier) {
        self.notifier = notifier
        state = Mutex((status, nil))
    }

    var text: String { state.withLock { $0.status.text } }

    var status: ServiceStatus { state.withLock { $0.status } }

    /// Ready means configured and running, not connected: a broker that is down at boot must not
    /// make the start time out. The status says what the connection is doing.
    func ready() { send(prefix: "READY=1\n", force: true) }

    /// The watchdog's ping, when systemd asks for them (`WatchdogSec=`).
    func watchdog() {
        if notifier.watchdogInterval != nil { notifier.notify("WATCHDOG=1") }
    }

    /// The graceful stop has begun.
    func stopping() { notifier.notify("STOPPING=1") }

    func update(_ change: (inout ServiceStatus) -> Void) {
        state.withLock { change(&$0.status) }
        send(prefix: "", force: false)
    }

    private func send(prefix: String, force: Bool) {
        // Under the lock, so two tasks never send two texts in the wrong order.
        state.withLock { state in
            let text = state.status.text
            guard force || text != state.sent else { return }
            state.sent = text
            notifier.notify("\(prefix)STATUS=\(text)")
        }
    }
}
