/// `http:`: where the window listens and who may look.
public struct WindowSettings: Sendable, Equatable {
    public var listen: ListenAddress
    /// The password (HTTP Basic, any user name) or bearer token that a client other than this
    /// machine must give; nil: only loopback clients are answered.
    public var credential: WindowCredential?
    /// Under Home Assistant's ingress (the add-on): only its ingress proxy (and this machine) is
    /// let in, and the page may be framed by Home Assistant's own origin.
    public var ingress = false
    /// Seconds between the page's reloads.
    public var refreshSeconds = 30
    public var limits = HTTPListener.Limits()

    public init(listen: ListenAddress) { self.listen = listen }

    /// Home Assistant's ingress proxy: the one address its add-ons see ingress requests from.
    public static let ingressProxy = PeerAddress(text: "172.30.32.2")!

    /// Who may reach the window, in words (`check` says it).
    public var whoMayLook: String {
        if ingress { return "Home Assistant's ingress (\(Self.ingressProxy)) and this machine" }
        if listen.isLoopbackOnly { return "this machine only (loopback), without credentials" }
        return credential == nil
            ? "this machine only: other clients are refused (no token_file)"
            : "this machine without credentials; any other client with the token (HTTP Basic password or Bearer)"
    }
}

/// The window's password or token: compared in constant time, never printed.
public struct WindowCredential: Sendable, Equatable, CustomStringConvertible {
    let bytes: [UInt8]
    public init(_ text: String) { bytes = Array(text.utf8) }
    public var description: String { "<redacted>" }

    /// Whether `given` is this credential, in a time that depends only on `given`'s length (the
    /// attempt's, which the client knows), never on where the first difference is.
    public func matches<S: Sequence<UInt8>>(_ given: S) -> Bool {
        var difference = 0
        var count = 0
        for byte in given {
            difference |= Int(byte ^ (count < bytes.count ? bytes[count] : 0))
            count += 1
        }
        return difference == 0 && count == bytes.count
    }
}
