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
        let before = Self.switchesByThread(of: pid)
        #expect(before.values.contains { $0.name == "tasks" }, "\(before)")
        // The monitor woke the daemon every second: in 2.5 s, at least twice.
        let quiet = await consistently(for: .milliseconds(2500)) {
            Self.switchesByThread(of: pid).allSatisfy { tid, now in
                ["clock", "mqtt network"].contains(now.name) || (before[tid].map { now.switches == $0.switches } ?? false)
            }
        }
        #expect(quiet, "before: \(before)\nafter: \(Self.switchesByThread(of: pid))")
        await daemon.stop()
    }

    /// Each thread of process `pid`: its name and its context switches so far, voluntary and
    /// not (a sleeping thread switches only when it wakes).
    static func switchesByThread(of pid: pid_t) -> [Int: (name: String, switches: Int)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var threads: [Int: (name: String, switches: Int)] = [:]
        for task in tasks {
            guard let tid = Int(task),
                  let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8),
                  let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            else { continue }
            // `voluntary_ctxt_switches:\t12` and `nonvoluntary_ctxt_switches:\t3`.
            let switches = status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
                .compactMap { line in line.split(separator: "\t").last.flatMap { Int($0) } }.reduce(0, +)
            threads[tid] = (name.trimmingCharacters(in: .newlines), switches)
        }
        return threads
    }
}
