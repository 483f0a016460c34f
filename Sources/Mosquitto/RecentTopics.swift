#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The topics of the latest messages, kept as Swift strings to be handed out again.
///
/// A home's meters publish on the same few topics over and over, and a topic of more than 15
/// bytes made into a `String` is an allocation, a copy and a check of its UTF-8 at every message,
/// then a release. Handed the string kept for the same bytes, a message costs a comparison and a
/// retain.
///
/// Bounded: at most `capacity` topics (the oldest replaced first), so a wildcard over thousands
/// of topics costs a scan of `capacity` lengths and the usual string; none longer than
/// `maxKeptBytes` is kept (MQTT allows 65,535 bytes: 64 such topics would hold 4 MB). Bytes that
/// are not UTF-8 become the same repaired string as `String(cString:)` makes, and are never
/// matched again (the string's bytes are not theirs): they are made anew each time, as before.
/// The network thread's own: not thread-safe.
struct RecentTopics {
    static let capacity = 64
    static let maxKeptBytes = 256

    private var topics: [String] = []
    /// Where the next new topic goes once `capacity` are kept.
    private var next = 0

    /// The topic of `cString` (NUL-terminated), equal to `String(cString: cString)`.
    mutating func topic(_ cString: UnsafePointer<CChar>) -> String {
        let count = strlen(cString)
        guard count <= Self.maxKeptBytes else { return String(cString: cString) }
        for topic in topics where topic.utf8.count == count {
            let same = topic.utf8.withContiguousStorageIfAvailable { bytes in
                bytes.baseAddress.map { memcmp($0, cString, count) == 0 } ?? (count == 0)
            }
            if same == true { return topic }
        }
        let topic = String(cString: cString)
        if topics.count < Self.capacity {
            topics.append(topic)
        } else {
            topics[next] = topic
            next = (next + 1) % Self.capacity
        }
        return topic
    }
}
