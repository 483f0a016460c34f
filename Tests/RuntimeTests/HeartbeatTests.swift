import Foundation
@testable import Runtime
import Synchronization
import Testing
import Threads

/// The daemon's one clock: every part's beat on one thread named `clock`, in the order the parts
/// started, and none after its part stopped.
///
/// The clock beats every 10 ms here; the tests wait for beats to have happened, never for a time.
@Suite(.timeLimit(.minutes(1))) struct HeartbeatTests {
    /// What the beats did, in order, and on which threads; latches opened once enough beats of
    /// a part, or on a thread, are in.
    final class Beats: Sendable {
        /// Which beats a wait counts: a part's, or those run on the thread of a name.
        enum Counted: Sendable {
            case part(String)
            case thread(String)

            func counts(_ beat: Beat) -> Bool {
                switch self {
                case .part(let part): beat.part == part
                case .thread(let thread): beat.thread == thread
                }
            }
        }

        struct Beat: Sendable {
            var part: String
            var thread: String
        }

        private let list = Mutex<[Beat]>([])
        private let waits = Mutex<[(counted: Counted, count: Int, latch: Latch)]>([])

        func beat(_ part: String) {
            let thread = ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .newlines)
            let beats = list.withLock { list in
                list.append(Beat(part: part, thread: thread))
                return list
            }
            for wait in waits.withLock({ $0 }) where beats.count(where: wait.counted.counts) >= wait.count { wait.latch.open() }
        }

        /// The beats so far that `counted` counts.
        func count(_ counted: Counted) -> Int { list.withLock { $0.count(where: counted.counts) } }

        var all: [String] { list.withLock { $0.map(\.part) } }
        var threads: Set<String> { Set(list.withLock { $0.map(\.thread) }) }

        /// Returns once `count` beats that `counted` counts have run in all.
        func wait(for counted: Counted, count: Int) async throws {
            let latch = Latch()
            waits.withLock { $0.append((counted, count, latch)) }
            if self.count(counted) >= count { latch.open() }
            try await latch.wait()
        }
    }

    @Test func eachBeatRunsThePartsInTheOrderTheyStartedOnTheClocksThread() async throws {
        let clock = try Heartbeat(interval: .milliseconds(10))
        let beats = Beats()
        let running = Task { try await clock.run() }
        func part(_ name: String) -> Task<Void, any Error> {
            Task { try await clock.beating { beats.beat(name) } }
        }
        let first = part("first")
        try await beats.wait(for: .part("first"), count: 1)
        let second = part("second")
        try await beats.wait(for: .part("second"), count: 5)
        second.cancel()
        first.cancel()
        running.cancel()
        _ = await running.result
        // From the beat where both ran: first, second, first, second, …
        let all = beats.all
        let both = all.index(before: all.firstIndex(of: "second")!)
        #expect(Array(all[both...].prefix(10)) == Array(repeating: ["first", "second"], count: 5).flatMap { $0 })
        #expect(beats.threads == ["clock"])
    }

    @Test func aPartThatStoppedBeatsNoMoreWhileTheOthersGoOn() async throws {
        let clock = try Heartbeat(interval: .milliseconds(10))
        let beats = Beats()
        let running = Task { try await clock.run() }
        let stopping = Task { try await clock.beating { beats.beat("stopping") } }
        let going = Task { try await clock.beating { beats.beat("going") } }
        try await beats.wait(for: .part("stopping"), count: 3)
        stopping.cancel()
        // `beating` returns once the part's beat has run for the last time.
        _ = await stopping.result
        let left = beats.all.count { $0 == "stopping" }
        let goingThen = beats.all.count { $0 == "going" }
        try await beats.wait(for: .part("going"), count: goingThen + 5)
        #expect(beats.all.count { $0 == "stopping" } == left)
        going.cancel()
        running.cancel()
        _ = await running.result
    }

    /// Readings that come faster than the grace take the beat on their own thread (the network
    /// thread, done with a batch, asks `beatIfDue`); once they stop, the clock's thread beats again.
    @Test func readingsTakeTheBeatWhileTheyComeAndTheClockTakesItBackAfter() async throws {
        let clock = try Heartbeat(interval: .milliseconds(20))
        let beats = Beats()
        let running = Task { try await clock.run() }
        let part = Task { try await clock.beating { beats.beat("part") } }
        try await beats.wait(for: .part("part"), count: 1)
        // A reading every millisecond, a fifth of the grace apart, asking after each.
        let readingsStop = Atomic(false)
        let readings = try NamedThread.start("readings") {
            while !readingsStop.load(ordering: .relaxed) {
                clock.beatIfDue()
                usleep(1000)
            }
        }
        let before = beats.all.count
        try await beats.wait(for: .part("part"), count: before + 5)
        readingsStop.store(true, ordering: .relaxed)
        pthread_join(readings, nil)
        #expect(beats.threads.contains("readings"), "\(beats.threads)")
        // Without readings, the clock's own thread beats again.
        let onClock = beats.count(.thread("clock"))
        try await beats.wait(for: .thread("clock"), count: onClock + 2)
        part.cancel()
        running.cancel()
        _ = await running.result
    }
}
