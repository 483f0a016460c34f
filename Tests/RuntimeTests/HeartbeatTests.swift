import Foundation
@testable import Runtime
import Synchronization
import Testing

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
            let thread = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
            threadNames.withLock { _ = $0.insert(thread.trimmingCharacters(in: .newlines)) }
            let count = list.withLock { list in
                list.append(part)
                return list.count { $0 == part }
            }
            for wait in waits.withLock({ $0 }) where wait.part == part && count >= wait.count { wait.latch.open() }
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
        let clock = Heartbeat(interval: .milliseconds(10))
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
        let clock = Heartbeat(interval: .milliseconds(10))
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
}
