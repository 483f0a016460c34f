import FoundationEssentials

/// Who may look: a pure decision on a request's peer and `Authorization` header.
///
/// - Loopback: always (whoever can run commands on this machine can read the state file too).
/// - Under ingress: Home Assistant's ingress proxy only (it has checked the user), besides loopback.
/// - Anything else: the credential, as an HTTP Basic password (a browser's login; any user name)
///   or a bearer token (a scraper's); without one configured, nobody.
public enum WindowAccess: Equatable, Sendable {
    case allowed
    /// 401 with a `WWW-Authenticate` challenge: credentials missing or wrong.
    case unauthorized
    /// 403: this address may not look at all.
    case forbidden

    public static func decide(peer: PeerAddress?, authorization: String?, settings: WindowSettings) -> WindowAccess {
        guard let peer else { return .forbidden }
        if peer.isLoopback { return .allowed }
        if settings.ingress { return peer == WindowSettings.ingressProxy ? .allowed : .forbidden }
        guard let credential = settings.credential else { return .forbidden }
        guard let given = presented(authorization) else { return .unauthorized }
        return credential.matches(given) ? .allowed : .unauthorized
    }

    /// The password of `Basic base64(user:password)` or the token of `Bearer token`.
    static func presented(_ authorization: String?) -> [UInt8]? {
        guard let authorization, let space = authorization.firstIndex(of: " ") else { return nil }
        let scheme = authorization[..<space].lowercased()
        let value = String(authorization[authorization.index(after: space)...].drop { $0 == " " })
        switch scheme {
        case "bearer": return Array(value.utf8)
        case "basic":
            guard let decoded = Data(base64Encoded: value), let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            return Array(decoded[decoded.index(after: colon)...])
        default: return nil
        }
    }
}
