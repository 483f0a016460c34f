import Glibc
import Platform
import Synchronization

/// Writes the state file again and again (once a minute while an integrated energy moves) at
/// some 40 % of what `FileIO.writeAtomically` costs an SD card, and as atomically: a power cut
/// leaves the old state or the new one at the state's path, never a torn one.
///
/// A new file for every save costs ext4 two journal commits: the new file's inode, its block and
/// its name in the folder when its fsync writes it, then the rename and the old file's freed inode
/// and block. (Without the folder's fsync the second commit only comes 5 s later, the journal's
/// period: as many blocks, and the rename not yet durable.) So the previous state's file is kept
/// beside the state as a spare (`state.json.spare`), and each save rewrites the spare in place,
/// fdatasyncs it and exchanges the two names (`renameat2`, `RENAME_EXCHANGE`), then fsyncs the
/// folder. The spare keeps its blocks and its size, so its fdatasync writes the data alone; the
/// exchange touches only the folder's entries and the two inodes' times: one commit a save.
/// Measured with the daemon on ext4 with its journal and 4 KiB blocks, as on a Raspberry Pi's SD
/// card (bench/NOTES.md): 36 KB reach the device a save, against 94 KB for a new file. Both are
/// two syncs a save.
///
/// Why it is atomic: the bytes go into the spare, never into the file at the state's path; they
/// are on the disk (fdatasync) before the exchange makes them the state; and the exchange is
/// durable (the folder's fsync) before the next save rewrites what is then the spare. A spare
/// left by an earlier run may still be the state on the disk (a run killed between its exchange
/// and the folder's fsync), so the first save of a run, and the save after a failed one, fsync
/// the folder before touching the spare. The spare is padded with spaces to whole blocks of the
/// file system (JSON allows the whitespace), so its size stays the same while the state does not
/// grow past a block.
///
/// One writer per state: the daemon and `replay --state` hold `StateLock`. A spare that is not a
/// plain file of its own (a folder, a link) is not used: the save is then a new file, renamed.
final class StateFileWriter: Sendable {
    let path: String
    /// `state.json.spare`: the previous state, rewritten into the next one.
    let sparePath: String
    /// Whether the last exchange is known to be on the disk, so the spare is not the state there.
    private let exchangeDurable = Mutex(false)

    init(path: String) {
        self.path = path
        sparePath = "\(path).spare"
    }

    /// Writes `bytes` (JSON) as the file at `path`. `keepingSpare`: another save follows in this
    /// run, so the previous state is kept as the spare; false for the last one (the stop, a
    /// replay's save), which leaves the state's file alone in its folder.
    func write(_ bytes: [UInt8], keepingSpare: Bool) throws(FileError) {
        try exchangeDurable.withLock { durable throws(FileError) in
            if !durable, FileIO.exists(sparePath) { try FileIO.syncFolder(of: path) }
            durable = false
            guard let spare = openSpare() else {
                try FileIO.writeAtomically(bytes, to: path)
                durable = true
                return
            }
            try rewrite(spare.fd, with: bytes, blockSize: spare.blockSize, size: spare.size)
            if FileIO.exchange(sparePath, path) {
                if !keepingSpare { unlink(sparePath) }
            } else if rename(sparePath, path) != 0 {
                // No state yet (ENOENT), or no exchange on this file system: a plain rename of the
                // spare, whose bytes are already on the disk.
                throw FileError(path)
            }
            try FileIO.syncFolder(of: path)
            durable = true
        }
    }

    /// The spare, opened for writing (created when missing); nil when what is there is not a plain
    /// file of its own.
    private func openSpare() -> (fd: Int32, blockSize: Int, size: Int)? {
        let fd = open(sparePath, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1 else {
            close(fd)
            return nil
        }
        return (fd, Int(info.st_blksize), Int(info.st_size))
    }

    /// Writes the padded bytes over the spare from its start, cuts what is beyond them, and
    /// fdatasyncs it; closes `fd` in any case.
    private func rewrite(_ fd: Int32, with bytes: [UInt8], blockSize: Int, size: Int) throws(FileError) {
        defer { close(fd) }
        let padded = Self.padded(bytes, blockSize: blockSize)
        var written = 0
        while written < padded.count {
            let count = padded[written...].withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(written)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError(sparePath)
            }
            written += count
        }
        if size > padded.count, ftruncate(fd, off_t(padded.count)) != 0 { throw FileError(sparePath) }
        guard fdatasync(fd) == 0 else { throw FileError(sparePath) }
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
