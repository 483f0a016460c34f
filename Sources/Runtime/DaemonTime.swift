import FlowCore
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
    /// engine tells a stepped wall clock by comparing the two), as the time since `monotonicBase`:
    /// with a `ContinuousClock.Instant` in place, a type whose layout is known only when the
    /// program runs, the clock was copied through the runtime's metadata at every message.
    private let monotonicOrigin: Duration
    private static let monotonicBase = ContinuousClock.now

    package static let wall = DaemonTime(speed: 1, origin: Date())

    package init(speed: Double, origin: Date) {
        self.speed = speed
        self.origin = origin
        monotonicOrigin = Self.monotonicBase.duration(to: .now) + .seconds(origin.timeIntervalSinceNow)
    }

    package func now() -> Date { read().now }

    /// The time and the monotonic instant, for the engine to tell a step of the wall clock. At
    /// `speed` both come from one reading of the monotonic clock: read apart, a thread preempted
    /// between the two readings would look, N times magnified, like a step.
    package func read() -> (now: Date, monotonic: ContinuousClock.Instant) {
        guard speed != 1 else { return (Date(), ContinuousClock.now) }
        let elapsed = Self.monotonicBase.duration(to: .now) - monotonicOrigin
        let seconds = max(0, elapsed.seconds) * speed
        return (origin.addingTimeInterval(seconds), Self.monotonicBase.advanced(by: monotonicOrigin + .seconds(seconds)))
    }
}
