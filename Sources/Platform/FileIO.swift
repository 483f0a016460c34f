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
        let directory = open(folder(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
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

/// Reads lines from a file descriptor (a trace file or standard input), without the newline.
public struct LineReader: Sequence, IteratorProtocol {
    let fd: Int32
    var buffer: [UInt8] = []
    var start = 0
    var finished = false

    public init(fd: Int32) { self.fd = fd }

    public mutating func next() -> [UInt8]? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                return line
            }
            if finished {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                return line
            }
            buffer.removeFirst(start)
            start = 0
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 {
                finished = true
            } else {
                buffer.append(contentsOf: chunk[..<count])
            }
        }
    }
}
