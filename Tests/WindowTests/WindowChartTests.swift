@testable import Configuration
@testable import Runtime
@testable import FlowCore
import Foundation
import Mosquitto
import Platform
import Testing

/// Today's chart is kept from the pushes only for the window, its one reader: a daemon without
/// the window does not record every push into it.
@Suite struct WindowChartTests {
    static func config(window: Bool) -> String {
        """
        timezone: UTC
        sources: {grid: {topic: g}}
        widgets: {w: {template: flow, flow: {exchange: {rate: grid}}, policy: {min_interval: 0s, settle: 0s}}}
        \(window ? #"http: {listen: "127.0.0.1:8099"}"# : "")
        """
    }

    @Test(arguments: [true, false])
    func theChartIsKeptOnlyForTheWindow(window: Bool) throws {
        let config = try DaemonConfig.parse(Self.config(window: window), file: "c.yaml")
        #expect((config.window != nil) == window)
        let zone = try #require(SystemTimeZone(identifier: "UTC"))
        let bridge = Bridge(engine: FlowEngine(config: config.flow, zone: zone), config: config, zone: zone, sinks: [], store: nil, log: Logger(threshold: .error))
        let noon = Date(timeIntervalSince1970: 1_780_272_000 + 12 * 3600)
        let monotonic = ContinuousClock.now
        for (index, watts) in ["1200", "-300", "450"].enumerated() {
            bridge.receive(
                MQTTMessage(topic: "g", payload: Array(watts.utf8)), at: noon.addingTimeInterval(Double(index) * 60),
                monotonic: monotonic.advanced(by: .seconds(index * 60)))
        }
        let snapshot = bridge.windowSnapshot(at: noon.addingTimeInterval(180), status: ServiceStatus(address: "b", sourceCount: 1))
        #expect((snapshot.widgets.first?.chart != nil) == window)
    }
}
