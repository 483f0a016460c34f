import Glibc

/// What a command says to the person at the terminal when it cannot go on (usage, a broken config,
/// a file it cannot write): on standard error, unbuffered, so it is never lost behind an exit.
public enum StandardError {
    public static func print(_ text: String) {
        let line = text.hasSuffix("\n") ? text : text + "\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    }
}
