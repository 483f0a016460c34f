/// How one widget reaches the widget HTTP API (`push:` of a widget in the config). The token is
/// not part of it: the sink gets it separately, so these settings can be compared, printed and
/// logged without it.
public struct WidgetAPISettings: Sendable, Equatable {
    /// An extra request header.
    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var url: String
    public var replaceMethod = HTTPMethod.put
    public var patchMethod = HTTPMethod.patch
    public var headers: [Header] = []
    /// The body is `{"<bodyKey>": …}`; empty: the document or patch itself.
    public var bodyKey = "content"
    public var connectTimeoutSeconds: Double = 10
    /// The whole request, connection included.
    public var timeoutSeconds: Double = 30
    /// nil: the system's certificate store.
    public var caFile: String?
    /// Certificate verification is on unless the user says `insecure: true`.
    public var insecure = false
    public var retry = WidgetDelivery.Retry()

    public init(url: String) { self.url = url }

    /// The URL for log lines and `flowbridge check`: without user info and query, either of which
    /// may carry a secret.
    public var displayURL: String {
        var text = Substring(url)
        if let query = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<query] + "?…" }
        if let schemeEnd = text.firstRange(of: "://") {
            let authorityEnd = text[schemeEnd.upperBound...].firstIndex(of: "/") ?? text.endIndex
            if let at = text[schemeEnd.upperBound..<authorityEnd].lastIndex(of: "@") {
                text = text[..<schemeEnd.upperBound] + "…@" + text[text.index(after: at)...]
            }
        }
        return String(text)
    }

    /// A short fingerprint of the whole URL for the state file: a saved delivery counts only for
    /// the widget it was made for, and the URL itself (which may hold a secret) is not written.
    var urlFingerprint: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in url.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
