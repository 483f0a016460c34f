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
    /// a part are in.
    final class Beats: Sendable {
        private let list = Mutex<[String]>([])
        private let waits = Mutex<[(part: String, count: Int, latch: Latch)]>([])
        private let threadNames = Mutex<Set<String>>([])

        func beat(_ part: String) {
            let thread = ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .newlines)
            threadNames.withLock { _ = $0.insert(thread) }
            let (count, onThread) = list.withLock { list in
                list.append(part)
                return (list.count { $0 == part }, onThreads.withLock { counts in
                    counts[thread, default: 0] += 1
                    return counts[thread]!
                })
            }
            for wait in waits.withLock({ $0 }) where (wait.part == part && count >= wait.count) || (wait.part == "thread:" + thread && onThread >= wait.count) {
                wait.latch.open()
            }
        }

        private let onThreads = Mutex<[String: Int]>([:])

        /// Beats run on the thread named `thread` so far.
        func count(on thread: String) -> Int { onThreads.withLock { $0[thread] ?? 0 } }

        /// Returns once `count` beats in all have run on the thread named `thread`.
        func wait(onThread thread: String, count: Int) async throws {
            let latch = Latch()
            waits.withLock { $0.append(("thread:" + thread, count, latch)) }
            if self.count(on: thread) >= count { latch.open() }
            try await latch.wait()
        }

        var all: [String] { list.withLock { $0 } }
        var threads: Set<String> { threadNames.withLock { $0 } }

        /// Returns once `part` has beaten `count` times in all.
        func wait(for part: String, count: Int) async throws {
            let latch = Latch()
            waits.withLock { $0.append((part, count, latch)) }
            if all.count(where: { $0 == part }) >= count { latch.open() }
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
        try await beats.wait(for: "first", count: 1)
        let second = part("second")
        try await beats.wait(for: "second", count: 5)
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
        try await beats.wait(for: "stopping", count: 3)
        stopping.cancel()
        // `beating` returns once the part's beat has run for the last time.
        _ = await stopping.result
        let left = beats.all.count { $0 == "stopping" }
        let goingThen = beats.all.count { $0 == "going" }
        try await beats.wait(for: "going", count: goingThen + 5)
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
        try await beats.wait(for: "part", count: 1)
        // A reading every millisecond, a fifth of the grace apart, asking after each.
        let readingsStop = Atomic(false)
        let readings = try NamedThread.start("readings") {
            while !readingsStop.load(ordering: .relaxed) {
                clock.beatIfDue()
                usleep(1000)
            }
        }
        let before = beats.all.count
        try await beats.wait(for: "part", count: before + 5)
        readingsStop.store(true, ordering: .relaxed)
        pthread_join(readings, nil)
        #expect(beats.threads.contains("readings"), "\(beats.threads)")
        // Without readings, the clock's own thread beats again.
        let onClock = beats.count(on: "clock")
        try await beats.wait(onThread: "clock", count: onClock + 2)
        part.cancel()
        running.cancel()
        _ = await running.result
    }
}
