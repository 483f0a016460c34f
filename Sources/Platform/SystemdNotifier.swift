import Glibc

/// systemd's readiness protocol (`Type=notify`): datagrams such as `READY=1` to `$NOTIFY_SOCKET`,
/// spoken directly so flowbridge needs no libsystemd. Does nothing outside systemd.
public struct SystemdNotifier: Sendable {
    let socketPath: String?
    /// Half of `WatchdogSec` when systemd asks for pings, in seconds.
    public let watchdogInterval: Double?

    public init() {
        socketPath = getenv("NOTIFY_SOCKET").map { String(cString: $0) }
        watchdogInterval = getenv("WATCHDOG_USEC").flatMap { Double(String(cString: $0)) }.map { $0 / 2_000_000 }
    }

    public func notify(_ state: String) {
        guard let socketPath, !socketPath.isEmpty else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // An abstract socket is written with a leading '@' and sent with a leading NUL.
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.enumerated() { buffer[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                // Never waits: a reader that is behind (a full datagram queue: ten by default) would
                // otherwise block the tick, the reload or the stop that notifies. A lost watchdog
                // ping or status line is followed by the next one.
                Array(state.utf8).withUnsafeBytes {
                    sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), socketAddress, length)
                }
            }
        }
    }
}
