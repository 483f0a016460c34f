import FlowCore
import FoundationEssentials
import Glibc
import Synchronization

/// Local time from the system's zone rules (glibc reading tzdata), per DESIGN §3.
///
/// glibc keeps the zone in process-wide state (`TZ`, `tzset`), so every lookup holds one lock and
/// switches the zone only when it differs from the last one used. The daemon uses one zone, set
/// once; tests that use several zones stay correct, just serialized.
public struct SystemTimeZone: LocalTimeZone {
    public let identifier: String
    /// The `TZ` value that selects this zone; nil: the `TZ` the process started with.
    let tzValue: String?

    /// The TZ the process started with, and the one glibc is set to now (nil: not set yet).
    private static let state = Mutex<(original: String?, current: String??)>((getenv("TZ").map { String(cString: $0) }, nil))

    /// A zone by IANA name (`Europe/Berlin`); nil when the system has no such zone.
    public init?(identifier: String) {
        let directory = getenv("TZDIR").map { String(cString: $0) } ?? "/usr/share/zoneinfo"
        guard !identifier.isEmpty, !identifier.hasPrefix("/"), !identifier.split(separator: "/").contains(".."),
            access("\(directory)/\(identifier)", R_OK) == 0
        else {
            if identifier == "UTC" {  // always known to glibc, even without tzdata
                self.identifier = identifier
                tzValue = "UTC0"
                return
            }
            return nil
        }
        self.identifier = identifier
        tzValue = ":" + identifier
    }

    /// The zone the system is set to (`TZ`, else `/etc/localtime`).
    public static var system: SystemTimeZone {
        let original = state.withLock { $0.original }
        var name = original.map { $0.hasPrefix(":") ? String($0.dropFirst()) : $0 }
        if name == nil {
            var buffer = [CChar](repeating: 0, count: 512)
            let count = readlink("/etc/localtime", &buffer, buffer.count - 1)
            if count > 0 {
                let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if let range = target.firstRange(of: "zoneinfo/") { name = String(target[range.upperBound...]) }
            }
        }
        return SystemTimeZone(systemNamed: name ?? "localtime")
    }

    private init(systemNamed name: String) {
        identifier = name
        tzValue = nil
    }

    public func utcOffsetSeconds(at instant: Date) -> Int {
        var seconds = time_t(instant.timeIntervalSince1970.rounded(.down))
        return Self.state.withLock { state in
            let wanted = tzValue ?? state.original
            // tzset() reads the zone file: only when the zone changes, never per lookup.
            if state.current != .some(wanted) {
                if let wanted { setenv("TZ", wanted, 1) } else { unsetenv("TZ") }
                tzset()
                state.current = .some(wanted)
            }
            var parts = tm()
            localtime_r(&seconds, &parts)
            return parts.tm_gmtoff
        }
    }
}
