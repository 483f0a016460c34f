import Delivery
import Glibc
import Platform

/// Where `record` writes its trace lines: a new file, one it adds to (`--append`), or standard
/// output (`-`).
///
/// Each line is handed to the system in one `write` as the message arrives, with nothing held in
/// the process: a `kill` or a Ctrl-C loses at most the line being written, and a reader (`tail -f`,
/// a `replay` of the file so far) sees every message at once. A file is synced to the disk once,
/// at the end; between, the system writes it back as it does any file (a power cut may take its
/// last seconds).
///
/// A file is never overwritten: a recorded day is not made again, and a second `record` given the
/// same name by mistake must not erase it. `--append` adds to it instead.
struct TraceOutput {
    /// As given: `-` is standard output.
    let path: String
    let fd: Int32
    /// Made by this recording (not added to, not standard output): removed again when nothing
    /// could be recorded, so a broker that was never reached leaves no empty file behind.
    let created: Bool

    /// Why the trace cannot be written to `path`.
    enum Failure: Error, CustomStringConvertible {
        /// The file is there and `--append` was not given.
        case exists(path: String)
        /// The system's reason.
        case cannotWrite(path: String, reason: String)

        var description: String {
            switch self {
            case .exists(let path): "\(path) exists; record writes a new file (give --append to add to it, or another --out)"
            case .cannotWrite(let path, let reason): "cannot write the trace to \(path): \(reason)"
            }
        }
    }

    /// Opens `path` for the recording: created (refused when it exists, unless `appending`), or
    /// standard output for `-`.
    ///
    /// A file added to whose last line was cut short (a disk that filled, a power cut) gets a
    /// newline first: replay reports that line alone with its number and skips it (see
    /// `LineReader`), where the first new line would otherwise be glued to it and lost with it.
    init(path: String, appending: Bool) throws(Failure) {
        self.path = path
        guard path != "-" else {
            fd = 1
            created = false
            return
        }
        created = !(appending && FileIO.exists(path))
        // Read and write: the last byte of a file added to is looked at.
        let flags = appending ? O_RDWR | O_CREAT | O_APPEND : O_WRONLY | O_CREAT | O_EXCL
        let opened = open(path, flags | O_CLOEXEC, 0o644)
        guard opened >= 0 else {
            if errno == EEXIST { throw .exists(path: path) }
            throw .cannotWrite(path: path, reason: FileError(path).reason)
        }
        fd = opened
        var info = stat()
        let size = fstat(opened, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int(info.st_size) : 0
        guard appending, size > 0 else { return }
        var last: UInt8 = 0
        if pread(opened, &last, 1, off_t(size - 1)) == 1, last != 0x0A, let reason = FileDescriptor.writeAll([0x0A], to: opened) {
            close(opened)
            throw .cannotWrite(path: path, reason: reason)
        }
    }

    /// What the summary calls it.
    var name: String { path == "-" ? "standard output" : path }

    /// Writes one message's trace line; returns the bytes written. Throws when the write failed
    /// (a full disk, a reader of standard output gone), with the system's reason.
    func write(_ message: TraceMessage) throws(Failure) -> Int {
        var bytes = Array(message.line.utf8)
        bytes.append(0x0A)
        if let reason = FileDescriptor.writeAll(bytes, to: fd) { throw .cannotWrite(path: name, reason: reason) }
        return bytes.count
    }

    /// The end of a recording: a file is synced and closed; `removing` (the broker was never
    /// reached, so nothing was written) removes it again when this recording made it.
    func finish(removing: Bool) {
        guard fd != 1 else { return }
        if created, removing {
            unlink(path)
        } else {
            fsync(fd)
        }
        close(fd)
    }
}
