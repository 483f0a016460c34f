import FoundationEssentials

/// The engine's clock, as a part: once a second the engine's deadlines and state saves
/// (`Bridge.tick`), the systemd watchdog, the Victron keepalives due and the status line's silent
/// sources. Its stop is a last tick, so what fell due meanwhile reaches the sinks before they stop.
struct EngineClock: Service {
    let name = "engine clock"
    let bridge: Bridge
    let status: StatusReporter
    let messages: OwnMessages

    func run() async throws {
        try await cancelOnGracefulShutdown {
            var second = 0
            while (try? await Task.sleep(for: .seconds(1))) != nil {
                bridge.tick(reading: bridge.time.read())
                second += 1
                status.watchdog()
                messages.sendKeepalives(bridge.config.keepalives, atSecond: second)
                let silent = bridge.silentSources
                status.update { $0.silentSources = silent }
            }
        }
        bridge.tick(reading: bridge.time.read())
    }
}
