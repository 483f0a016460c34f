import Foundation
import Testing
import Threads

/// Runs each test of a suite on a thread of its own instead of Swift's shared cooperative pool:
/// `@Suite(.ownThread)`. For tests that wait with a deadline or inside a window (a child process,
/// a broker, a listen of 12 s, a stop "within 2 s").
///
/// Why: the pool has one thread per core (two on the machines this runs on), and the suite's
/// synchronous tests block them while their child processes run (`runFlowbridge`). An
/// asynchronous test resumes from every wait through that pool, queued behind every test waiting
/// to start: in a full run a poll of 10 ms came back seconds later, a listen of 12 s heard none
/// of its messages, a stop was measured at 4 s. On its own thread a test waits for nothing but
/// what it waits for; a blocking call in it holds only that thread. Child tasks (`async let`,
/// task groups) run there too; unstructured tasks (`Task {}`) do not.
public struct OwnThreadTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite has no body of its own: each of its test cases gets the thread.
        guard testCase != nil else { return try await function() }
        let executor = ThreadExecutor(name: test.name)
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor, operation: function)
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test on a thread of its own (see `OwnThreadTrait`).
    public static var ownThread: Self { Self() }
}

/// Runs the jobs given to it, one at a time and in order, on a thread of its own.
///
/// `@unchecked Sendable`: the queue of jobs and the finished flag are guarded by `condition`.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    public init(name: String) {
        // A test goes on without its executor if the system has no thread to give it.
        _ = try? NamedThread.start(name, detached: true) { [self] in
            while let job = next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        condition.lock()
        if finished {
            condition.unlock()
            // After the end, anything left over (nothing, in structured code) runs on the shared pool.
            globalConcurrentExecutor.enqueue(job)
            return
        }
        jobs.append(UnownedJob(job))
        condition.signal()
        condition.unlock()
    }

    /// The thread ends once it has run the jobs it has; later ones go to the shared pool.
    public func finish() {
        condition.withLock {
            finished = true
            condition.signal()
        }
    }

    private func next() -> UnownedJob? {
        condition.withLock {
            while jobs.isEmpty && !finished { condition.wait() }
            return jobs.isEmpty ? nil : jobs.removeFirst()
        }
    }
}
