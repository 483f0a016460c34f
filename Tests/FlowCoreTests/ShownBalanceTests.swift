import FlowCore
import FoundationEssentials
import TestSupport
import Testing

/// A derived Home is the balance of the rates the push shows, after their rounding and deadbands.
@Suite struct ShownBalanceTests {
    static let config = FlowConfig(
        sources: ["solar", "grid", "battery"].map { source($0, "m", json: $0) },
        widgets: [FlowWidgetConfig(
            name: "w", inputs: [node("solar")], output: node("balance"), storage: node("battery"), exchange: node("grid"),
            policy: PatchPolicyConfig(minIntervalSeconds: 0, rateStep: 10, rateDeadband: 20, settleSeconds: 0))])

    @Test(arguments: [
        // First push: Solar 1234 → 1230, Grid 567 → 570, Battery 89 → 90; Home 1230 + 570 − 90 = 1710
        // (the exact 1712 rounds to 1710 too).
        ([(1234.0, 567.0, 89.0)], 1710.0),
        // Then each moves less than its deadband (20 W) and stays as shown: 1230, 570, 90. The
        // exact balance moved 32 W (1244 + 580 − 80 = 1744), past the deadband on its own, but the
        // Home shown stays 1230 + 570 − 90 = 1710.
        ([(1234, 567, 89), (1244, 580, 80)], 1710),
        // Grid moves past its deadband (567 → 600): 1230 + 600 − 90 = 1740.
        ([(1234, 567, 89), (1244, 600, 80)], 1740),
        // Exporting more than the solar: 300 + (−200) − 400 = −300, shown as 0 (a clamp stays a clamp).
        ([(300, -200, 400)], 0),
    ] as [([(Double, Double, Double)], Double)])
    func homeIsTheBalanceOfWhatIsShown(readings: [(Double, Double, Double)], home: Double) {
        var widget = EngineHarness(Self.config)
        for (index, reading) in readings.enumerated() {
            widget.send("m", #"{"solar":\#(reading.0),"grid":\#(reading.1),"battery":\#(reading.2)}"#, at: 1_780_272_000 + Double(index) * 10)
        }
        #expect(widget.rate("output") == home)
    }
}
