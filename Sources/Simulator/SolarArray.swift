import Glibc

/// The panels: the sun's geometry for the date and hour, the air the light goes through, and the
/// clouds that pass. Zero at night, a peak near solar noon, high in June and low in December.
struct SolarArray: Sendable {
    let profile: HomeProfile
    let noise: SeededNoise

    /// Below this the micro-inverters stay asleep: too little light to power up.
    static let wakeThresholdW = 10.0

    /// The array's output at `moment`, clouds included. `awake` is true while there is light
    /// enough for the inverters to run, whatever the clouds: they power up once at sunrise (and
    /// then restart their daily counter) and go to sleep once at dusk; asleep, they deliver 0 W.
    func output(at moment: LocalMoment, seconds: Double) -> (awake: Bool, powerW: Double) {
        let sky = clearSky(at: moment)
        guard sky.directW + sky.diffuseW >= Self.wakeThresholdW else { return (false, 0) }
        return (true, sky.directW * cloudTransmission(at: moment, seconds: seconds) + sky.diffuseW)
    }

    /// Direct and diffuse light on the panels under a clear sky.
    ///
    /// The sun's height from the declination of the date and the hour angle; the direct beam on a
    /// south-facing panel tilted by β at latitude φ falls as on a flat one at φ − β; the air mass
    /// (Meinel's 0.7^(AM^0.678)) dims a low sun; the diffuse sky light follows the sun's height.
    func clearSky(at moment: LocalMoment) -> (directW: Double, diffuseW: Double) {
        let radians = Double.pi / 180
        let declination = -23.44 * radians * cos(2 * .pi * Double(moment.dayOfYear + 10) / 365)
        let hourAngle = 15 * radians * (moment.solarHours - 12)
        let latitude = profile.latitudeDegrees * radians
        let sinElevation = sin(latitude) * sin(declination) + cos(latitude) * cos(declination) * cos(hourAngle)
        guard sinElevation > 0 else { return (0, 0) }
        let plane = latitude - profile.panelTiltDegrees * radians
        let incidence = max(0, sin(plane) * sin(declination) + cos(plane) * cos(declination) * cos(hourAngle))
        let airMass = 1 / max(sinElevation, 0.02)
        let transmission = pow(0.7, pow(airMass, 0.678)) / 0.7
        return (profile.solarPeakW * 0.88 * incidence * transmission, profile.solarPeakW * 0.12 * sinElevation)
    }

    /// How much of the direct beam gets through: each day has its own cloudiness (most days fair,
    /// some overcast), and clouds drift across in minutes.
    func cloudTransmission(at moment: LocalMoment, seconds: Double) -> Double {
        let cloudiness = pow(noise.unit(.dayCloudiness, moment.date.daysSinceEpoch), 1.6) * 0.8
        let field = 0.65 * noise.smooth(.passingClouds, at: seconds, periodSeconds: 900)
            + 0.35 * noise.smooth(.cloudShape, at: seconds, periodSeconds: 150)
        // Under a cloud where the field is below the day's cloudiness; soft edges.
        let covered = min(1, max(0, (cloudiness + 0.06 - field) / 0.12))
        return (1 - 0.3 * cloudiness) * (1 - 0.8 * covered)
    }
}
