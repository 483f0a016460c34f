import Glibc
import Platform

/// One owner per state: an exclusive `flock` on `state.json.lock` beside the state, holding the
/// owner's PID, for as long as the process runs (the kernel releases it when the process ends,
/// however it ends). Two daemons on one state would each write their own day over the other's.
public final class StateLock: Sendable {
    public let path: String
    private let fd: Int32

    /// Why the lock was not taken.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// Another process holds it: `pid` when it wrote its PID.
        case held(path: String, pid: Int32?)
        /// The lock file cannot be created or opened (a folder that is not writable); then the
        /// state cannot be written either.
        case unavailable(FileError)

        public var description: String {
            switch self {
            case .held(let path, let pid):
                "the state is in use by another flowbridge (\(pid.map { "pid \($0)" } ?? "its PID unknown"), lock \(path)); one daemon owns a state: stop it, or give this one --state FILE"
            case .unavailable(let error): "cannot take the state lock \(error)"
            }
        }
    }

    /// Takes the lock beside `statePath`, or says who holds it. Never waits.
    public init(statePath: String) throws(Failure) {
        path = "\(statePath).lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unavailable(FileError(path)) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            var holder = [UInt8](repeating: 0, count: 32)
            let count = holder.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
            close(fd)
            guard code == EWOULDBLOCK else { throw .unavailable(FileError(path, errno: code)) }
            let digits = holder.prefix(max(0, count)).prefix { (0x30...0x39).contains($0) }
            throw .held(path: path, pid: Int32(String(decoding: digits, as: UTF8.self)))
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 { _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } }
    }

    /// The lock goes with the file descriptor; the file stays (removing it would race a new owner).
    deinit { close(fd) }
}
