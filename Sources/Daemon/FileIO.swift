import Glibc

/// Why a file could not be read or written, with the path and the system's reason.
public struct FileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }

    init(_ path: String, errno code: Int32 = errno) {
        self.path = path
        reason = String(cString: strerror(code))
    }
}

/// Small, synchronous file access on file descriptors: all the daemon needs (config, state, traces).
public enum FileIO {
    /// The whole file.
    public static func read(_ path: String) throws(FileError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(path) }
        defer { close(fd) }
        return try readAll(fd, path: path)
    }

    static func readAll(_ fd: Int32, path: String) throws(FileError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError(path)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
        }
    }

    /// Replaces a file atomically: a temporary file beside it, fsync, rename, fsync of the folder.
    /// A crash at any point leaves either the old file or the new one, never a torn one.
    /// `permissions`: private by default (the state); pictures are for everyone to read.
    public static func writeAtomically(_ bytes: [UInt8], to path: String, permissions: mode_t = 0o600) throws(FileError) {
        let temporary = "\(path).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, permissions)
        guard fd >= 0 else { throw FileError(temporary) }
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
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let directory = open(folder.isEmpty ? "/" : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }
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
