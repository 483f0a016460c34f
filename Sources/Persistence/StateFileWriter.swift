import Glibc
import Platform
import Synchronization

/// Writes the state again and again (once a minute while an integrated energy moves) with one
/// sync a save, and as safely as a new file renamed over the old one: a power cut leaves the
/// newest whole save readable, or the one before it.
///
/// The state is kept in two copies, `state.json` and `state.json.alt`, and each save rewrites the
/// older of the two in place and fdatasyncs it; nothing is renamed, so the folder needs no fsync.
/// A save that a power cut tears leaves that copy torn and the other whole: each copy carries a
/// sequence number and a checksum (`StateSeal`), and the state is the newer whole copy
/// (`StateStore.inspect`). The copies are padded with spaces to whole blocks of the file system
/// (JSON allows the whitespace), so a copy keeps its size and its blocks while the state does not
/// grow past a block, and its fdatasync writes its data alone. Measured by `make sd-writes`
/// (bench/NOTES.md): one sync a save instead of two (the spare's fdatasync, the exchange of the two
/// names, the folder's fsync, as before).
///
/// Why a save is never lost to a torn write: the copy being written is never the newest whole one;
/// its bytes are on the disk (fdatasync) before the next save starts on the other copy; and a copy
/// made afresh (the first save into it) is fsynced with its folder, so its name is on the disk
/// before the other copy is rewritten. The stop's save (`last`) leaves the newest state alone at
/// the state's path (renaming the alternate copy over it, or removing the older alternate), so a
/// stopped daemon's state is one file, as a person and the tools expect.
///
/// One writer per state: the daemon and `replay --state` hold `StateLock`. An alternate copy that
/// is not a plain file of its own (a folder, a link) is left as it is: the save is then a new file
/// renamed over the state (`FileIO.writeAtomically`, two syncs).
final class StateFileWriter: Sendable {
    let path: String
    /// `state.json.alt`: the state's other copy.
    let alternatePath: String
    /// Where releases before the two copies kept the previous state (`state.json.spare`): an older
    /// state than the one at `path`, removed by the first save of a run.
    let legacySparePath: String

    /// The copy the next save rewrites, and its sequence; nil when it is to be found on the disk
    /// (the first save of a run, a save after a failed one, after the stop's save).
    private let next = Mutex<Due?>(nil)

    struct Due {
        var file: String
        var sequence: UInt64
        /// The state at `path` has no seal (a release before the two copies wrote it): it is
        /// replaced whole, as that release did, since it is read before any alternate copy.
        var replacingUnsealed = false
    }

    init(path: String) {
        self.path = path
        alternatePath = "\(path).alt"
        legacySparePath = "\(path).spare"
    }

    /// The copy to write after the newest whole one (`newest`: its file, the highest sequence, and
    /// whether it is sealed; nil when there is none, and then the state's own path is written first).
    func due(after newest: (file: String, sequence: UInt64, sealed: Bool)?) -> Due {
        guard let newest else { return Due(file: path, sequence: 1) }
        guard newest.sealed else { return Due(file: path, sequence: newest.sequence + 1, replacingUnsealed: true) }
        return Due(file: newest.file == path ? alternatePath : path, sequence: newest.sequence + 1)
    }

    /// Writes the state `body` (an encoded JSON object) sealed into the copy that is due. `newest`
    /// finds the newest whole copy on the disk when this writer does not know it. `last`: no save
    /// follows in this run (the stop, a replay's save), so the state is left alone at its path.
    func write(_ body: [UInt8], last: Bool, newest: () -> (file: String, sequence: UInt64, sealed: Bool)?) throws(FileError) {
        try next.withLock { next throws(FileError) in
            let due: Due
            if let known = next {
                due = known
            } else {
                due = self.due(after: newest())
                // The state before the state of a release before the two copies: older than either.
                unlink(legacySparePath)
            }
            next = nil  // known again only once this save is on the disk
            let bytes = StateSeal.sealed(body, sequence: due.sequence)
            if due.replacingUnsealed {
                // An alternate copy beside it is older (a later release ran before the earlier one):
                // gone before the state is replaced, so that it is never read as the newer.
                if Self.isPlainFile(alternatePath) { unlink(alternatePath) }
                try FileIO.writeAtomically(bytes, to: path)
                if !last { next = Due(file: alternatePath, sequence: due.sequence + 1) }
                return
            }
            guard try rewrite(due.file, with: bytes) else {
                // Not a plain file of its own: left alone, and the state renamed whole.
                try FileIO.writeAtomically(bytes, to: path)
                return
            }
            if last {
                if due.file == alternatePath {
                    guard rename(alternatePath, path) == 0 else { throw FileError(path) }
                } else {
                    unlink(alternatePath)
                }
                // No fsync of the folder: a power cut that undoes the rename (or the removal)
                // leaves the newer copy beside the older one, and the newer is read.
            } else {
                next = Due(file: due.file == path ? alternatePath : path, sequence: due.sequence + 1)
            }
        }
    }

    /// Writes `bytes`, padded, over the copy `file` from its start, cuts what is beyond them and
    /// syncs it. False (nothing written) when `file` is not a plain file of its own.
    private func rewrite(_ file: String, with bytes: [UInt8]) throws(FileError) -> Bool {
        var info = stat()
        let made = lstat(file, &info) != 0 && errno == ENOENT
        guard made || Self.isPlainFile(file) else { return false }
        let fd = open(file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | (made ? O_CREAT | O_EXCL : 0), 0o600)
        guard fd >= 0 else { throw FileError(file) }
        defer { close(fd) }
        guard fstat(fd, &info) == 0 else { throw FileError(file) }
        let padded = Self.padded(bytes, blockSize: Int(info.st_blksize))
        var written = 0
        while written < padded.count {
            let count = padded[written...].withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(written)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError(file)
            }
            written += count
        }
        if Int(info.st_size) > padded.count, ftruncate(fd, off_t(padded.count)) != 0 { throw FileError(file) }
        guard fdatasync(fd) == 0 else { throw FileError(file) }
        // A copy made now is a new name in the folder: on the disk before the other copy is rewritten.
        if made { try FileIO.syncFolder(of: file) }
        return true
    }

    /// Whether `file` is a plain file of its own: not a folder, a link, or a second name of another file.
    static func isPlainFile(_ file: String) -> Bool {
        var info = stat()
        return lstat(file, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_nlink == 1
    }

    /// `bytes`, then spaces and a newline up to a whole number of blocks (512 bytes to 64 KiB, the
    /// file system's block size), so the file's size changes only when the state grows or shrinks
    /// past a block.
    static func padded(_ bytes: [UInt8], blockSize: Int) -> [UInt8] {
        let block = min(max(blockSize, 512), 65_536)
        let size = (bytes.count + block - 1) / block * block
        guard size > bytes.count else { return bytes }
        return bytes + [UInt8](repeating: UInt8(ascii: " "), count: size - bytes.count - 1) + [0x0A]
    }
}
