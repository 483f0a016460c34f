@testable import Runtime
import Platform
import Synchronization
import TestSupport
import Testing

/// The daemon's parts start in one order and stop in the reverse one, each waiting for the one
/// before; a part that fails stops the others in that order; cancellation stops them at once.
///
/// The tests wait for what they need (the last part's start) however long a busy machine takes,
/// without a deadline of their own: a group that never gets there is ended by the time limit.
@Suite(.timeLimit(.minutes(2))) struct ServiceGroupTests {
    /// What the parts did, in order.
    final class Events: Sendable {
        private let list = Mutex<[String]>([])
        func add(_ event: String) { list.withLock { $0.append(event) } }
        var all: [String] { list.withLock { $0 } }
    }

    struct Broken: Error, CustomStringConvertible {
        let name: String
        var description: String { "\(name) broke" }
    }

    /// A part that says when it has started and when it stops. `startTime` and `stopTime` make it
    /// slow (a broker that takes its time, a sink's deadline), so that an order that came from
    /// timing and not from the group would show; `work` is what it does while it runs.
    struct Part: Service {
        let name: String
        let events: Events
        var startTime = Duration.zero
        var stopTime = Duration.zero
        var failsAtStart = false
        var work: (@Sendable () async throws -> Void)?
        /// Opened once it has started.
        var started: Latch?

        func run() async throws {
            try await Task.sleep(for: startTime)
            if failsAtStart {
                events.add("fail \(name)")
                throw Broken(name: name)
            }
            events.add("start \(name)")
            started?.open()
            if let work { try await cancelOnGracefulShutdown(work) } else { try await gracefulShutdown() }
            events.add("stopping \(name)")
            try await Task.sleep(for: stopTime)
            events.add("stopped \(name)")
        }
    }

    /// A loop like the engine's clock: it runs until it is cancelled.
    static let loop: @Sendable () async throws -> Void = {
        while (try? await Task.sleep(for: .seconds(3600))) != nil {}
    }

    static func group() -> ServiceGroup { ServiceGroup(log: Logger(threshold: .error)) }

    struct Timing: Sendable, CustomTestStringConvertible {
        /// Of a, b and c, in milliseconds.
        var starts: [Int]
        var stops: [Int]
        var testDescription: String { "starts \(starts) ms, stops \(stops) ms" }
    }

    @Test(arguments: [
        Timing(starts: [0, 0, 0], stops: [0, 0, 0]),
        Timing(starts: [60, 0, 0], stops: [0, 0, 60]),
        Timing(starts: [0, 60, 0], stops: [0, 60, 0]),
    ])
    func partsStartInOrderAndStopInTheReverseOrder(timing: Timing) async throws {
        let events = Events()
        let group = Self.group()
        let lastStarted = Latch()
        let parts = ["a", "b", "c"].enumerated().map { index, name in
            Part(
                name: name, events: events, startTime: .milliseconds(timing.starts[index]), stopTime: .milliseconds(timing.stops[index]),
                work: name == "b" ? Self.loop : nil, started: name == "c" ? lastStarted : nil)
        }
        let running = Task { try await group.run(parts) }
        try await lastStarted.wait()
        group.stop()
        try await running.value
        #expect(events.all == [
            "start a", "start b", "start c",
            "stopping c", "stopped c", "stopping b", "stopped b", "stopping a", "stopped a",
        ])
    }

    /// A stop asked for before the parts have started (a signal while the daemon starts) lets
    /// them all start, then stops them in order.
    @Test func aStopAskedForWhileStartingWaitsUntilEveryPartHasStarted() async throws {
        let events = Events()
        let group = Self.group()
        group.stop()
        try await group.run(["a", "b"].map { Part(name: $0, events: events) })
        #expect(events.all == ["start a", "start b", "stopping b", "stopped b", "stopping a", "stopped a"])
    }

    struct Failure: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var failsAtStart = false
        /// What b does once c has started.
        var work: (@Sendable (Events) async throws -> Void)?
        var events: [String]
        var error: String
    }

    @Test(arguments: [
        Failure(
            testDescription: "b fails at its start: c never starts", failsAtStart: true,
            events: ["start a", "fail b", "stopping a", "stopped a"], error: "b broke"),
        Failure(
            testDescription: "b fails while it runs",
            work: { events in
                events.add("fail b")
                throw Broken(name: "b")
            },
            events: ["start a", "start b", "start c", "fail b", "stopping c", "stopped c", "stopping a", "stopped a"], error: "b broke"),
        Failure(
            testDescription: "b ends unasked", work: { _ in },
            events: ["start a", "start b", "start c", "stopping b", "stopped b", "stopping c", "stopped c", "stopping a", "stopped a"],
            error: "b ended before it was asked to stop"),
    ])
    func aPartThatEndsStopsTheOthersInOrder(failure: Failure) async throws {
        let events = Events()
        let lastStarted = Latch()
        let work = failure.work.map { work in
            { @Sendable in
                try await lastStarted.wait()
                try await work(events)
            }
        }
        let parts = [
            Part(name: "a", events: events), Part(name: "b", events: events, failsAtStart: failure.failsAtStart, work: work),
            Part(name: "c", events: events, started: lastStarted),
        ]
        let error = await #expect(throws: (any Error).self) { try await Self.group().run(parts) }
        #expect(error.map { "\($0)" } == failure.error)
        #expect(events.all == failure.events)
    }

    /// Cancelling the task that runs the group is the hard stop: no part does its stop, a loop
    /// ends too, and the group throws `CancellationError`.
    @Test func cancellationStopsEveryPartAtOnce() async throws {
        let events = Events()
        let lastStarted = Latch()
        let parts = [
            Part(name: "a", events: events), Part(name: "b", events: events, work: Self.loop),
            Part(name: "c", events: events, started: lastStarted),
        ]
        let running = Task { try await Self.group().run(parts) }
        try await lastStarted.wait()
        running.cancel()
        await #expect(throws: CancellationError.self) { try await running.value }
        #expect(events.all == ["start a", "start b", "start c"])
    }
}
