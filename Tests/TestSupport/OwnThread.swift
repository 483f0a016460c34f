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
        // A test goes on without its executor if the system has no thread to give it.
        try await ThreadExecutor.onThread(named: test.name, function)
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test on a thread of its own (see `OwnThreadTrait`).
    public static var ownThread: Self { Self() }
}
