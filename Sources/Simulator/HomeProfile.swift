/// The simulated home's equipment: where its panels face, how big its battery is. The defaults are
/// a plausible central-European house; the demo config (`Config/demo.yaml`) is written for them.
public struct HomeProfile: Sendable, Equatable {
    /// Sets the sun's height through the seasons.
    public var latitudeDegrees: Double
    /// South-facing panels at this tilt: more winter sun than flat ones, a flatter summer peak.
    public var panelTiltDegrees: Double
    /// The array's output in full sun (three micro-inverters, one per phase).
    public var solarPeakW: Double
    public var batteryCapacityWh: Double
    public var batteryMaxChargeW: Double
    public var batteryMaxDischargeW: Double
    /// The battery keeps this much for a power cut and never discharges below it.
    public var batteryReservePercent: Double
    /// The grid meter's device ID, the middle of its topics (`shellypro3em-<id>/status/em:0`).
    public var shellyDeviceID: String

    public init(
        latitudeDegrees: Double = 50, panelTiltDegrees: Double = 35, solarPeakW: Double = 6000,
        batteryCapacityWh: Double = 10_000, batteryMaxChargeW: Double = 4000, batteryMaxDischargeW: Double = 4000,
        batteryReservePercent: Double = 5, shellyDeviceID: String = "shellypro3em-08f9e0e5a1c4"
    ) {
        self.latitudeDegrees = latitudeDegrees
        self.panelTiltDegrees = panelTiltDegrees
        self.solarPeakW = solarPeakW
        self.batteryCapacityWh = batteryCapacityWh
        self.batteryMaxChargeW = batteryMaxChargeW
        self.batteryMaxDischargeW = batteryMaxDischargeW
        self.batteryReservePercent = batteryReservePercent
        self.shellyDeviceID = shellyDeviceID
    }

    /// The home `flowbridge simulate` publishes.
    public static let demo = HomeProfile()
}
