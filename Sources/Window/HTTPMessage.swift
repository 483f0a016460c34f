import Glibc

/// What the window reads of a request: no body (none is read), the few headers it looks at.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The path as libmicrohttpd hands it: percent-decoded, without the query.
    public var path: String
    public var authorization: String?
    /// `?format=` (csv or json), where a view has more than one.
    public var format: String?
    public var peer: PeerAddress?

    public init(method: String, path: String, authorization: String? = nil, format: String? = nil, peer: PeerAddress?) {
        self.method = method
        self.path = path
        self.authorization = authorization
        self.format = format
        self.peer = peer
    }
}

/// An answer: status, headers, body (libmicrohttpd leaves the body out for HEAD).
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, contentType: String, text: String) {
        self.init(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }

    public static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.headers.map { [$0.0, $0.1] } == rhs.headers.map { [$0.0, $0.1] }
    }

    /// The value of header `name` (case-insensitive), the first one.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// A client's address, IPv4 or IPv6 (an IPv4-mapped IPv6 address is taken as the IPv4 one).
public struct PeerAddress: Sendable, Equatable, CustomStringConvertible {
    /// 4 or 16 bytes.
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        let mapped: [UInt8] = Array(repeating: 0, count: 10) + [0xff, 0xff]
        self.bytes = bytes.count == 16 && Array(bytes.prefix(12)) == mapped ? Array(bytes.suffix(4)) : bytes
    }

    /// Reads a `sockaddr_in` or `sockaddr_in6`.
    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let raw = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
            self.init(bytes: withUnsafeBytes(of: raw) { Array($0) })
        case AF_INET6:
            let raw = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            self.init(bytes: withUnsafeBytes(of: raw) { Array($0) })
        default: return nil
        }
    }

    /// Parses a numeric address (`127.0.0.1`, `::1`).
    public init?(text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(bytes: withUnsafeBytes(of: v4) { Array($0) })
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(bytes: withUnsafeBytes(of: v6) { Array($0) })
        } else {
            return nil
        }
    }

    /// 127.0.0.0/8 or ::1: this machine.
    public var isLoopback: Bool {
        bytes.count == 4 ? bytes[0] == 127 : bytes == Array(repeating: 0, count: 15) + [1]
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return bytes.withUnsafeBytes { raw in
            inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, raw.baseAddress, &text, socklen_t(text.count)) == nil
                ? "?" : String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}

/// Where the window listens: `127.0.0.1:8787`, `[::1]:8787`, `0.0.0.0:8787` (port 0: one the
/// system picks).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public let host: PeerAddress
    public let port: UInt16

    public init(host: PeerAddress, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` with a numeric host (brackets around an IPv6 one); nil and why otherwise.
    public static func parse(_ text: String) -> Result<ListenAddress, ListenAddressProblem> {
        guard let colon = text.lastIndex(of: ":") else { return .failure(.init("'\(text)' has no port: write HOST:PORT, e.g. 127.0.0.1:8787")) }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard let port = UInt16(text[text.index(after: colon)...]) else {
            return .failure(.init("'\(text[text.index(after: colon)...])' is not a port (0 to 65535)"))
        }
        guard let address = PeerAddress(text: host) else {
            return .failure(.init("'\(host)' is not a numeric IPv4 or IPv6 address (127.0.0.1, 0.0.0.0, ::1, ::)"))
        }
        return .success(ListenAddress(host: address, port: port))
    }

    /// Only this machine can connect.
    public var isLoopbackOnly: Bool { host.isLoopback }

    public var description: String { host.bytes.count == 16 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Calls `body` with this address as a `sockaddr`.
    func withSocketAddress<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        if host.bytes.count == 4 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: host.bytes) }
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: host.bytes) }
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
    }
}

/// Why a `listen:` address is not one.
public struct ListenAddressProblem: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
