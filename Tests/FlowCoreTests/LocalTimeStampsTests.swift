import FlowCore
import Foundation
import Testing

/// `LocalTimeStamps` writes what `RFC3339.write` writes at the zone's offset, while it keeps the
/// last second's text: each table is one sequence of instants through one kept second after another.
@Suite struct LocalTimeStampsTests {
    /// Central European time around the end of summer time 2026 (25 October, 01:00 UTC).
    struct AutumnChange: LocalTimeZone {
        static let change = 1_792_890_000.0
        var identifier: String { "Europe/Berlin" }
        func utcOffsetSeconds(at instant: Date) -> Int { instant.timeIntervalSince1970 < Self.change ? 7200 : 3600 }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var zone: any LocalTimeZone
        /// Seconds since 1970, in the order they are written.
        var instants: [Double]
    }

    static let change = AutumnChange.change
    static let cases = [
        Case(testDescription: "lines within one second and the next", zone: AutumnChange(),
             instants: [1_780_000_000, 1_780_000_000.25, 1_780_000_000.999, 1_780_000_001.001, 1_780_000_000.5]),
        Case(testDescription: "across the change of the offset, an hour's times written twice", zone: AutumnChange(),
             instants: [change - 0.5, change - 0.0004, change, change + 0.5, change - 3600.5, change + 3599.9996]),
        Case(testDescription: "a time rounded into the next second", zone: AutumnChange(),
             instants: [1_780_000_000.9994, 1_780_000_000.9996, 1_780_000_001, 1_780_000_000.9996]),
        Case(testDescription: "UTC, written Z", zone: FixedOffsetZone(),
             instants: [1_780_000_000, 1_780_000_000.125, 1_780_086_400.5]),
        Case(testDescription: "half an hour behind, before 1970", zone: FixedOffsetZone(offsetSeconds: -19_800),
             instants: [-1.5, -1.0004, -0.0004, 0, 12.01]),
    ]

    @Test(arguments: cases)
    func writesWhatRFC3339Writes(_ sample: Case) {
        var stamps = LocalTimeStamps(zone: sample.zone)
        for seconds in sample.instants {
            let instant = Date(timeIntervalSince1970: seconds)
            var kept: [UInt8] = []
            stamps.write(instant, to: &kept)
            var direct: [UInt8] = []
            RFC3339.write(instant, utcOffsetSeconds: sample.zone.utcOffsetSeconds(at: instant), to: &direct)
            #expect(String(decoding: kept, as: UTF8.self) == String(decoding: direct, as: UTF8.self), "at \(seconds)")
        }
    }
}
