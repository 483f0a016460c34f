import Glibc

/// Why a file could not be read or written, with the path and the system's reason.
public struct FileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }

    /// The error number, when the system gave one (`EACCES` is not `ENOENT`).
    public var code: Int32?

    package init(_ path: String, errno code: Int32 = errno) {
        self.path = path
        self.code = code
        reason = String(cString: strerror(code))
    }

    init(_ path: String, reason: String) {
        self.path = path
        self.reason = reason
    }
}

/// Small, synchronous file access on file descriptors: all the daemon needs (config, state, traces).
public enum FileIO {
    /// The whole file, when it holds at most `limit` bytes; a larger one is an error that says so
    /// (`--config /dev/zero` must not eat the memory).
    public static func read(_ path: String, limit: Int) throws(FileError) -> [UInt8] {
        let bytes = try read(path, atMost: limit + 1)
        guard bytes.count <= limit else {
            throw FileError(path, reason: "larger than \(describe(bytes: limit)), more than such a file can be")
        }
        return bytes
    }

    /// The file's first `atMost` bytes (all of it when shorter).
    public static func read(_ path: String, atMost: Int) throws(FileError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(path) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count < atMost {
            let wanted = min(chunk.count, atMost - bytes.count)
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, wanted) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError(path)
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
        }
        return bytes
    }

    /// `1 MiB`, `64 KiB`, `300 bytes`.
    package static func describe(bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// Replaces a file atomically: a temporary file beside it, fsync, rename, fsync of the folder.
    /// A crash at any point leaves either the old file or the new one, never a torn one. The
    /// temporary file has a name of its own (`state.json.tmp-a8Xk2q`), created exclusively, so two
    /// writers never write into one temporary file. `permissions`: private by default (the state);
    /// pictures are for everyone to read.
    public static func writeAtomically(_ bytes: [UInt8], to path: String, permissions: mode_t = 0o600) throws(FileError) {
        var template = Array("\(path).tmp-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw FileError("\(path).tmp-XXXXXX") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        if permissions != 0o600 { _ = fchmod(fd, permissions) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(fd)
                unlink(temporary)
                throw FileError(temporary, errno: code)
            }
            written += count
        }
        guard fsync(fd) == 0 else {
            let code = errno
            close(fd)
            unlink(temporary)
            throw FileError(temporary, errno: code)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw FileError(path, errno: code)
        }
        try? syncFolder(of: path)
    }

    /// fsync of the folder `path` is in: what makes a rename (or an exchange) in it durable.
    package static func syncFolder(of path: String) throws(FileError) {
        let name = folder(of: path)
        let directory = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw FileError(name) }
        defer { close(directory) }
        guard fsync(directory) == 0 else { throw FileError(name) }
    }

    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// True when `path` is the file `info` describes (the same device and inode).
    package static func isSameFile(_ path: String, _ info: stat) -> Bool {
        var other = stat()
        return stat(path, &other) == 0 && other.st_dev == info.st_dev && other.st_ino == info.st_ino
    }

    /// The folder a path is in (`.` for a bare name).
    public static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Creates a folder and the folders above it that are missing (`mkdir -p`), by default for the
    /// owner only (the state's); pictures are for everyone to read.
    public static func makeFolders(_ path: String, permissions: mode_t = 0o700) throws(FileError) {
        var info = stat()
        if stat(path, &info) == 0 { return }
        let parent = folder(of: path)
        if parent != path, parent != "." { try makeFolders(parent, permissions: permissions) }
        if mkdir(path, permissions) != 0, errno != EEXIST { throw FileError(path) }
    }
}

/// Reads lines from a file descriptor (a trace file or standard input), without the newline, in
/// time linear in the bytes read: each byte is searched for the newline once, and the bytes of
/// the lines already returned are dropped once per read, not once per line.
///
/// A line longer than `maxLineBytes` is skipped as it streams by and said as `.tooLong` with its
/// length: the reader holds at most the cap and one read, whatever the file holds.
public struct LineReader: Sequence, IteratorProtocol {
    /// One line of the file.
    public enum Read: Sendable, Equatable, CustomStringConvertible {
        /// The line's bytes, without the newline.
        case line([UInt8])
        /// A line longer than the cap, skipped unread: its length in bytes, without the newline.
        case tooLong(bytes: Int)

        /// `longer than 16 MiB (17000000 bytes)`: what the warning that skips it says.
        public var description: String {
            switch self {
            case .line(let bytes): "a line of \(bytes.count) bytes"
            case .tooLong(let bytes): "longer than \(FileIO.describe(bytes: LineReader.maxLineBytes)) (\(bytes) bytes)"
            }
        }
    }

    /// The longest trace line read: 16 MiB. A trace line is one message, its payload JSON-escaped
    /// (`"payload"`) or in base64 (`"payload_b64"`, 4/3 of the bytes), so 16 MiB holds a payload of
    /// 12 MiB in base64 and one of 2.6 MiB even if every byte were escaped as `\u00XX`: 40 times
    /// a source's default `max_payload` (64 KiB), and thousands of times what a meter publishes.
    /// A source whose `max_payload` is set higher (it may go up to 2 GiB) reads such messages live,
    /// but a trace line that large is a recording gone wrong (a camera's image on a subscribed
    /// topic) more than a meter: replay says it and goes on, holding at most 16 MiB for it instead
    /// of the whole line, and then its JSON, at once.
    public static let maxLineBytes = 16 << 20

    let fd: Int32
    let maxLineBytes: Int
    /// Bytes read and not yet returned start at `start`; the line being read is `buffer[start...]`.
    var buffer: [UInt8] = []
    var start = 0
    /// How many bytes of the line being read are known to hold no newline: a later search goes on
    /// from there, so a long line is searched once, not once per read.
    var searched = 0
    /// The length so far of a line beyond the cap, whose bytes are dropped as they come; nil while
    /// the line being read is within the cap.
    var skipped: Int?
    var finished = false
    /// What one read takes: 64 KiB.
    var chunk = [UInt8](repeating: 0, count: 65_536)

    /// `maxLineBytes`: the cap, `LineReader.maxLineBytes` unless a test needs a small one.
    public init(fd: Int32, maxLineBytes: Int = LineReader.maxLineBytes) {
        self.fd = fd
        self.maxLineBytes = maxLineBytes
    }

    public mutating func next() -> Read? {
        while true {
            if let newline = firstNewline() { return take(upTo: newline, resumingAt: newline + 1) }
            if finished {
                guard start < buffer.count || skipped != nil else { return nil }
                return take(upTo: buffer.count, resumingAt: buffer.count)
            }
            let pending = buffer.count - start
            if skipped != nil || pending > maxLineBytes {
                // Beyond the cap: count the line's bytes so far and let them go.
                skipped = (skipped ?? 0) + pending
                buffer.removeAll(keepingCapacity: true)
            } else {
                buffer.removeSubrange(..<start)
            }
            start = 0
            searched = buffer.count
            fill()
        }
    }

    /// The line that ends at `end` (its bytes from `start`, and those already let go), the next
    /// one starting at `resumingAt`.
    mutating func take(upTo end: Int, resumingAt next: Int) -> Read {
        let length = (skipped ?? 0) + end - start
        let read: Read = skipped != nil || length > maxLineBytes ? .tooLong(bytes: length) : .line(Array(buffer[start..<end]))
        start = next
        searched = 0
        skipped = nil
        return read
    }

    /// The index of the first newline after the part of the line already searched, or nil.
    func firstNewline() -> Int? {
        let from = start + searched
        guard from < buffer.count else { return nil }
        return buffer.withUnsafeBufferPointer { bytes in
            memchr(bytes.baseAddress! + from, 0x0A, bytes.count - from).map { bytes.baseAddress!.distance(to: $0.assumingMemoryBound(to: UInt8.self)) }
        }
    }

    /// Appends the next read's bytes to the buffer; at the end of the file (or a read that fails),
    /// marks the reader finished.
    mutating func fill() {
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { finished = true } else { buffer.append(contentsOf: chunk[..<count]) }
            return
        }
    }
}
