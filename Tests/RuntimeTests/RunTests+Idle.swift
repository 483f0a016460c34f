import Foundation
import TestSupport
import Testing

extension RunTests {
    /// An idle daemon wakes for its clock's beat and its network loop's timeout, and for nothing
    /// else: no thread of libdispatch's pool, whose monitor (a timer of one second, armed for good
    /// once the pool has run anything) woke it every second while the commands' tasks ran there
    /// (`ThreadExecutor`), and no other thread of its own.
    @Test func anIdleDaemonWakesOnlyForItsClockAndItsNetworkLoop() async throws {
        let broker = try await MosquittoBroker()
        let daemon = try Daemon(broker: broker)
        #expect(await daemon.waitFor("subscribed to"), "\(daemon.text)")
        // The last of the start: the pages read only to start given back, on a thread that ends.
        #expect(await daemon.waitFor("running: gave back"), "\(daemon.text)")
        let pid = daemon.process.pid
        let before = ProcessThread.all(of: pid)
        #expect(before.values.contains { $0.name == "tasks" }, "\(before)")
        // The monitor woke the daemon every second: in 2.5 s, at least twice.
        let quiet = await consistently(for: .milliseconds(2500)) {
            ProcessThread.all(of: pid).allSatisfy { tid, now in
                ["clock", "mqtt network"].contains(now.name) || (before[tid].map { now.switches == $0.switches } ?? false)
            }
        }
        #expect(quiet, "before: \(before)\nafter: \(ProcessThread.all(of: pid))")
        await daemon.stop()
    }
}
