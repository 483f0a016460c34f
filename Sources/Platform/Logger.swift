import FlowCore
import FoundationEssentials
import Glibc
import Synchronization

/// One line per message on standard error. Under systemd (stderr is the journal) each line starts
/// with its syslog priority (`<4>`), so `journalctl -p warning` works, and the journal adds the
/// time; elsewhere (a terminal, `docker logs`) with the time in UTC and the level word.
/// Secrets never reach it: nothing logs a password or token. What a message quotes from the broker
/// is anyone's text: it is written escaped (`PrintableText`), so no NUL starts a journal entry of
/// its own and no ESC plays on the admin's terminal.
public final class Logger: Sendable {
    public typealias Level = Diagnostic.Level

    public let threshold: Level
    let journal: Bool
    let lock = Mutex(())

    public init(threshold: Level = .info) {
        self.threshold = threshold
        journal = Self.stderrIsJournal()
    }

    public func log(_ level: Level, _ message: String) {
        guard level >= threshold else { return }
        let priority: Int = switch level {
        case .debug: 7
        case .info: 6
        case .warning: 4
        case .error: 3
        }
        // A message never spans lines: a broken payload could otherwise forge log lines.
        let text = PrintableText.escaped(message)
        let line = journal
            ? "<\(priority)>\(text)\n"
            : "\(RFC3339.format(Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)))) flowbridge: \(level.rawValue): \(text)\n"
        lock.withLock { _ in
            _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        }
    }

    public func log(_ diagnostic: Diagnostic) { log(diagnostic.level, diagnostic.message) }

    /// systemd sets JOURNAL_STREAM to the device and inode of the journal stream it connected.
    static func stderrIsJournal() -> Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        let parts = value.split(separator: ":")
        var info = stat()
        guard parts.count == 2, fstat(2, &info) == 0 else { return false }
        return UInt64(parts[0]) == UInt64(info.st_dev) && UInt64(parts[1]) == UInt64(info.st_ino)
    }
}

extension Diagnostic.Level {
    /// `--log-level` words.
    public init?(word: String) {
        switch word.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "warning", "warn": self = .warning
        case "error": self = .error
        default: return nil
        }
    }
}
