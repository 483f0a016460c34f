import FoundationEssentials

/// The daemon's clock: the wall clock, or, for the demo and for tests of whole days, the simulated
/// home's, which runs `speed` times as fast from `origin` (`run --speed N --origin EPOCH` beside
/// `simulate` given the same two). On one clock with the simulated home the engine counts every
/// total, integrated or a device's counter, over the same hours, closes its days at the home's
/// midnight, and its durations (`stale_after`, `max_gap`, `min_interval`) are the home's seconds.
package struct DaemonTime: Sendable {
    /// Simulated seconds per real second; 1 for the wall clock.
    package let speed: Double
    /// The instant from which the clock runs at `speed`: it reads the wall clock's time there, and
    /// stands at it until then (the daemon may be up before the simulated home starts).
    package let origin: Date
    /// The monotonic instant at `origin`, from which the monotonic clock runs at `speed` too (the
    /// engine tells a stepped wall clock by comparing the two).
    private let monotonicOrigin: ContinuousClock.Instant

    package static let wall = DaemonTime(speed: 1, origin: Date())

    package init(speed: Double, origin: Date) {
        self.speed = speed
        self.origin = origin
        monotonicOrigin = ContinuousClock.now.advanced(by: .seconds(origin.timeIntervalSinceNow))
    }

    package func now() -> Date {
        let wall = Date()
        return speed == 1 ? wall : origin.addingTimeInterval(max(0, wall.timeIntervalSince(origin)) * speed)
    }

    package func monotonic() -> ContinuousClock.Instant {
        let now = ContinuousClock.now
        return speed == 1 ? now : monotonicOrigin.advanced(by: max(.zero, monotonicOrigin.duration(to: now)) * speed)
    }
}
