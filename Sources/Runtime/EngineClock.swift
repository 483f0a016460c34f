import FoundationEssentials
import Synchronization

/// The engine's clock, as a part: on each of the clock's beats the engine's deadlines and state
/// saves (`Bridge.tick`), the systemd watchdog, the Victron keepalives due and the status line's
/// silent sources. Its stop is a last tick, so what fell due meanwhile reaches the sinks before
/// they stop.
struct EngineClock: Service {
    let name = "engine clock"
    let clock: Heartbeat
    let bridge: Bridge
    let status: StatusReporter
    let messages: OwnMessages

    func run() async throws {
        let second = Mutex(0)
        try await clock.beating {
            bridge.tick(reading: bridge.time.read())
            status.watchdog()
            let now = second.withLock { second in
                second += 1
                return second
            }
            messages.sendKeepalives(bridge.config.keepalives, atSecond: now)
            let silent = bridge.silentSources
            status.update { $0.silentSources = silent }
        }
        bridge.tick(reading: bridge.time.read())
    }
}
