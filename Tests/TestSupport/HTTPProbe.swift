import Foundation
import Glibc

/// A plain-socket HTTP/1.1 client for tests of a listener: a whole request and answer, or the
/// hostile ones a library client will not send (an idle connection, a byte a second, a body of
/// 100 MB). Blocking, with a receive timeout, on loopback.
public enum HTTPProbe {
    public struct Answer: Sendable {
        public var status: Int
        /// Header names lowercased.
        public var headers: [String: String]
        public var body: String
    }

    /// Connects to `host`:`port` (IPv4, loopback by default); nil when refused. `timeoutSeconds`
    /// bounds every receive.
    public static func connect(host: String = "127.0.0.1", port: Int, timeoutSeconds: Int = 10) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            return nil
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Sends all of `bytes`; false when the other side closed or the send timed out.
    @discardableResult
    public static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Reads until the other side closes (or the receive times out).
    public static func readAll(_ fd: Int32) -> [UInt8] {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            all.append(contentsOf: buffer[..<count])
        }
        return all
    }

    /// One request (`Connection: close`), its answer parsed; nil when there was none.
    public static func request(
        host: String = "127.0.0.1", port: Int, method: String = "GET", path: String = "/", headers: [String: String] = [:], timeoutSeconds: Int = 10
    ) -> Answer? {
        guard let fd = connect(host: host, port: port, timeoutSeconds: timeoutSeconds) else { return nil }
        defer { close(fd) }
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        guard send(fd, Array((text + "\r\n").utf8)) else { return nil }
        return parse(readAll(fd))
    }

    /// An answer's status line, headers and body.
    public static func parse(_ bytes: [UInt8]) -> Answer? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<split.lowerBound].split(separator: "\r\n")
        guard let statusLine = head.first, statusLine.hasPrefix("HTTP/1."), let status = Int(statusLine.split(separator: " ")[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...].drop { $0 == " " })
        }
        var body = String(text[split.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunked(body) }
        return Answer(status: status, headers: headers, body: body)
    }

    static func dechunked(_ text: String) -> String {
        var rest = Substring(text)
        var body = ""
        while let lineEnd = rest.range(of: "\r\n"), let size = Int(rest[..<lineEnd.lowerBound], radix: 16), size > 0 {
            let start = lineEnd.upperBound
            let utf8 = rest.utf8
            let end = utf8.index(start, offsetBy: size, limitedBy: utf8.endIndex) ?? utf8.endIndex
            body += String(rest[start..<end])
            rest = rest[end...].dropFirst(2)
        }
        return body
    }

    /// An IPv4 address of this machine other than loopback (a client from it is not loopback to
    /// a listener on 0.0.0.0); nil when it has none.
    public static func localNonLoopbackAddress() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let address = current.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            let ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard UInt32(bigEndian: ipv4.s_addr) >> 24 != 127 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var copy = ipv4
            guard inet_ntop(AF_INET, &copy, &text, socklen_t(text.count)) != nil else { continue }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return nil
    }

    /// A TCP port free now on every address (the window binds `0.0.0.0` too), for a daemon or a
    /// broker to listen on. From below the kernel's ephemeral range (`ip_local_port_range`): a port
    /// the kernel picks is also the next outgoing connection's, and with a thousand connections
    /// opened by a test running in parallel, one was taken before the daemon could bind it. At
    /// random, so parallel tests rarely meet on one; tried by binding it.
    public static func freePort() -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let below = max(range?.first ?? 32768, 12_000)
        while true {
            let port = Int.random(in: 10_000..<below)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = 0  // INADDR_ANY: free on loopback and beyond
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(fd)
            if bound { return port }
        }
    }
}
