import FlowCore
import FoundationEssentials

/// The simulated home in accelerated time: every publishing cycle (one second of real time when
/// published live) moves the home on by `speed` simulated seconds and yields what each device
/// sends then. Pure: cycle n is the same for the same seed, date, start and speed.
public struct Simulation: Sendable {
    public let speed: Double
    public private(set) var home: SimulatedHome
    /// Cycles produced so far.
    public private(set) var cycles = 0
    let start: Date

    /// The fastest simulation: a day in 24 cycles. Faster would say little about the day.
    public static let maximumSpeed = 3600.0

    /// A home on `date` in `zone`, whose first cycle is `secondsIntoDay` after the date's local
    /// midnight (the home is run there from midnight, so its battery has had the morning it had).
    public init(seed: UInt64, date: CivilDate, secondsIntoDay: Double = 0, speed: Double, zone: any LocalTimeZone, profile: HomeProfile = .demo) {
        precondition(speed > 0 && speed <= Self.maximumSpeed, "speed must be in (0, \(Self.maximumSpeed)]")
        self.speed = speed
        home = SimulatedHome(seed: seed, date: date, zone: zone, profile: profile)
        start = home.firstDay.start.addingTimeInterval(max(0, secondsIntoDay))
    }

    /// The local day the simulation starts on.
    public var firstDay: LocalDay { home.firstDay }

    /// The next cycle: the home advanced to its instant, and every device's messages.
    public mutating func next() -> SimulationCycle {
        let at = start.addingTimeInterval(Double(cycles) * speed)
        cycles += 1
        home.advance(to: at)
        let state = home.state
        let profile = home.profile
        return SimulationCycle(
            state: state,
            bursts: HomeDevice.allCases.map { DeviceBurst(device: $0, messages: $0.messages(for: state, profile: profile)) })
    }
}

/// One device's messages of a cycle.
public struct DeviceBurst: Sendable, Equatable {
    public var device: HomeDevice
    public var messages: [DeviceMessage]
}

/// What the home's devices send at one simulated instant.
public struct SimulationCycle: Sendable, Equatable {
    /// The home at the cycle's instant (`state.at`).
    public var state: HomeState
    public var bursts: [DeviceBurst]

    public var at: Date { state.at }

    /// Every message with the simulated instant it is sent at: the devices a few milliseconds
    /// apart (`HomeDevice.offsetMilliseconds`), as they are apart in real time.
    public var timedMessages: [(at: Date, message: DeviceMessage)] {
        bursts.flatMap { burst in
            let sentAt = at.addingTimeInterval(Double(burst.device.offsetMilliseconds) / 1000)
            return burst.messages.map { (sentAt, $0) }
        }
    }
}
