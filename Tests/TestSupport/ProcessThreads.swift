import Foundation

/// A process's threads as `/proc/PID/task/*` shows them: each one's name (its `comm`), its
/// context switches so far, voluntary and not (a sleeping thread switches only when it wakes), and
/// the system call it waits in.
public struct ProcessThread: Sendable, CustomStringConvertible {
    public var name: String
    public var switches: Int
    /// The number of the system call the thread is in (its `syscall` file's first field); nil
    /// while it runs.
    public var systemCall: Int?

    /// In `clock_nanosleep` (a timed sleep: `usleep`, `nanosleep`), not waiting for an event.
    public var sleeps: Bool { systemCall == Self.clockNanosleep }

    #if arch(x86_64)
    static let clockNanosleep = 230
    #else
    static let clockNanosleep = 115  // arm64's and the generic table's
    #endif

    public var description: String { "\(name): \(switches)" }

    /// The threads of process `pid` now, by thread id; one that ends while they are read is left out.
    public static func all(of pid: pid_t = getpid()) -> [Int: ProcessThread] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var threads: [Int: ProcessThread] = [:]
        for task in tasks {
            guard let tid = Int(task),
                  let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8),
                  let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            else { continue }
            // `voluntary_ctxt_switches:\t12` and `nonvoluntary_ctxt_switches:\t3`.
            let switches = status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
                .compactMap { line in line.split(separator: "\t").last.flatMap { Int($0) } }.reduce(0, +)
            let call = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/syscall", encoding: .utf8))?.split(separator: " ").first.flatMap { Int($0) }
            threads[tid] = ProcessThread(name: name.trimmingCharacters(in: .newlines), switches: switches, systemCall: call)
        }
        return threads
    }
}
