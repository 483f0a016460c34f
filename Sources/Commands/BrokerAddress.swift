import Configuration
import Persistence
import Platform
import Runtime

/// `HOST`, `HOST:PORT`, `[::1]:PORT` (port 1883 unless given): the broker of `--broker`, where
/// `discover` listens and `simulate` publishes.
struct BrokerAddress: Equatable {
    var host: String
    var port: Int

    init?(_ text: String) {
        var host = Substring(text)
        var port = 1883
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = Int(rest.dropFirst()) else { return nil }
                port = number
            }
        } else if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
            guard let number = Int(host[host.index(after: colon)...]) else { return nil }
            port = number
            host = host[..<colon]
        }
        guard !host.isEmpty, !host.contains(where: \.isWhitespace), (1...65_535).contains(port) else { return nil }
        self.host = String(host)
        self.port = port
    }
}
