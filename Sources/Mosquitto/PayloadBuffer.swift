/// The payloads of the messages, copied out of libmosquitto's memory into one array used again
/// and again.
///
/// libmosquitto frees a message's payload when its callback returns, so each one is copied; made
/// into a new array, that was an allocation at every message and its release once the engine had
/// read the reading (a few dozen bytes, read at once and kept by nobody): the one allocation of
/// flowbridge's own in a reading that pushes nothing. Here the array handed out last is written
/// over when the next message comes, if nobody kept it (its storage is then this buffer's alone);
/// a message that was kept (an event buffered for a task, `discover`'s latest payload of each
/// topic) keeps its bytes, and the next one goes into a new array, as copy on write makes it.
///
/// Whoever keeps a payload keeps the array's room with it, so an array is handed out with room
/// for at most twice its bytes (or `leastRoom`), as an array grown by appending has: one with more
/// room, left by a larger payload, is let go for a new one. The same bound lets go of an array
/// grown by a large message at the next smaller one, and none beyond `maxKeptBytes` is kept.
/// The network thread's own: not thread-safe.
struct PayloadBuffer {
    /// Room any payload may be handed out with: a reading's few bytes in an array of its own
    /// have nearly as much.
    static let leastRoom = 64
    static let maxKeptBytes = 4096

    private var bytes: [UInt8] = []

    /// The `count` bytes at `start`, as an array.
    mutating func payload(_ start: UnsafeRawPointer, count: Int) -> [UInt8] {
        if bytes.capacity > min(Self.maxKeptBytes, max(2 * count, Self.leastRoom)) { bytes = [] }
        // In place when the last payload was let go; a new array when it is still held.
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: start, count: count))
        return bytes
    }
}
