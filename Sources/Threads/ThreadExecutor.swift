import Synchronization

/// Runs the jobs of the tasks that prefer it (`withTaskExecutorPreference`,
/// `Task(executorPreference:)`), one at a time and in order, on a thread of its own.
///
/// The daemon's tasks run on one (`tasks`). Swift's shared pool is libdispatch's on Linux, and
/// libdispatch, once a thread of that pool has run anything, looks over the pool with a timer of
/// one second for as long as the process lives: a wake-up every second, idle or not, and at ten
/// readings a second one reading in ten pays for it. The daemon's tasks mostly wait (readings are
/// the network thread's, the beat the clock's), and one thread is all they need.
/// Tests run on them for their own reason (`.ownThread`: a test waits for nothing but what it
/// waits for). Child tasks run on the executor too; unstructured tasks (`Task {}`) do not.
public final class ThreadExecutor: TaskExecutor, Sendable {
    private struct Queue: ~Copyable {
        var jobs: [UnownedJob] = []
        var finished = false
    }

    private let queue = Mutex(Queue())
    private let wake = Wakeup()

    /// Starts the thread, named `name`.
    public init(name: String) throws(NamedThread.StartError) {
        try NamedThread.start(name, detached: true) { [self] in
            while let job = next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let taken = queue.withLock { queue in
            guard !queue.finished else { return false }
            queue.jobs.append(job)
            return true
        }
        // After the end, anything left over (nothing, in structured code) runs on the shared pool.
        if taken { wake.signal() } else { globalConcurrentExecutor.enqueue(job) }
    }

    /// Runs `body` with its tasks on a thread of their own, named `name`, which ends once `body`
    /// has returned; where the system gives no thread, on the executor `body` would have had.
    public static func onThread<T, Failure: Error>(
        named name: String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        let executor = try? ThreadExecutor(name: name)
        defer { executor?.finish() }
        return try await withTaskExecutorPreference(executor, isolation: isolation, operation: body)
    }

    /// The thread ends once it has run the jobs it has; later ones go to the shared pool.
    public func finish() {
        queue.withLock { $0.finished = true }
        wake.signal()
    }

    /// The next job, waited for; nil once finished with none left.
    private func next() -> UnownedJob? {
        while true {
            let (job, finished) = queue.withLock { queue in queue.jobs.isEmpty ? (nil, queue.finished) : (queue.jobs.removeFirst(), false) }
            if let job { return job }
            if finished { return nil }
            wake.wait()
        }
    }
}
