import FlowCore
import FoundationEssentials
import Glibc
import Synchronization
import Threads

/// Pushes as NDJSON lines on standard output: `run --dry-run`, pipes, the demo.
///
/// A line is written where the push is offered only when the write would not wait
/// (`FileDescriptor.hasRoom`); otherwise by the outbox's thread, so a reader that stops reading (a
/// full pipe) stalls only this sink: its pushes coalesce, the daemon goes on. A reader that goes away for good
/// (EPIPE) is said once; the pushes are dropped from then on.
public final class StdoutSink: Sink {
    public let name = "stdout"
    private let outbox: Outbox
    /// Each flow widget's accounts as they last came (`run --summary` says them under the push);
    /// nil without a summary, their only reader.
    private let accounts: LatestAccounts?
    /// How the writes went, for the window.
    private let record: DeliveryRecord
    /// The most of its lines' buffer a delivery keeps for the next: a line is some hundred bytes.
    static let keptBufferBytes = 65_536

    /// - Parameters:
    ///   - fd: where the lines go (1).
    ///   - zone: the local time of each line's `t`.
    ///   - capacity: pushes that may wait for a slow reader before they coalesce.
    ///   - summary: a line a person reads, written under each push's line (`run --summary`),
    ///     followed by the day's accounts of a flow widget as the engine last handed them over.
    ///   - log: where the sink reports that it fell behind or lost its reader.
    public init(
        fd: Int32 = 1, zone: any LocalTimeZone, capacity: Int = 1024, summary: (@Sendable (OutgoingPush) -> String)? = nil,
        log: @escaping @Sendable (Diagnostic) -> Void
    ) throws(NamedThread.StartError) {
        let failed = OnceFlag()
        let accounts = summary == nil ? nil : LatestAccounts()
        self.accounts = accounts
        let record = DeliveryRecord()
        self.record = record
        // Kept from one delivery to the next (pushes are delivered one at a time, on either
        // thread: the lock is never waited for): the lines' times, the last second's text; and
        // the buffer the lines are written into, which each delivery made and freed.
        let kept = Mutex((stamps: LocalTimeStamps(zone: zone), bytes: [UInt8]()))
        let isReady: (@Sendable () -> Bool)? = switch FileDescriptor.kind(of: fd) {
        case .terminal: nil
        case .file: { @Sendable in true }
        case .other: { @Sendable in FileDescriptor.hasRoom(fd) }
        }
        outbox = try Outbox(
            label: "stdout", capacity: capacity,
            deliver: { pushes in
                let error = kept.withLock { kept in
                    kept.bytes.removeAll(keepingCapacity: true)
                    for push in pushes {
                        PushLine.write(widget: push.widget, at: push.at, patch: push.contentPatch, stamps: &kept.stamps, to: &kept.bytes)
                        kept.bytes.append(0x0A)
                        if let summary {
                            kept.bytes.append(contentsOf: summary(push).utf8)
                            if let known = accounts?.latest.withLock({ $0[push.widget] }) {
                                let balance = AccountBalance(accountsKWh: FlowEngine.summed(known.accountsKWh))
                                kept.bytes.append(contentsOf: "; day so far: \(balance.sides)".utf8)
                                if let money = known.money { kept.bytes.append(contentsOf: "; money so far: \(money.text)".utf8) }
                            }
                            kept.bytes.append(0x0A)
                        }
                    }
                    defer {
                        // A batch after a jam may have been large: its buffer is not kept.
                        if kept.bytes.capacity > Self.keptBufferBytes { kept.bytes = [] }
                    }
                    return FileDescriptor.writeAll(kept.bytes, to: fd)
                }
                for _ in pushes { record.record(error == nil ? .delivered : .failed, detail: error) }
                if let error, failed.setFirstTime() {
                    log(Diagnostic(.error, "standard output does not take the pushes any more (\(error)); they are dropped until a restart"))
                }
            },
            onCoalesce: {
                log(Diagnostic(.warning, "standard output is not keeping up: pushes are coalesced (each line then carries what changed since the last one written)"))
            },
            isReady: isReady)
    }

    public func take(_ push: WidgetPush) { outbox.offer(push) }

    public var health: DeliveryHealth? { record.current }

    /// Kept for the summary; the NDJSON lines carry the widget's document only.
    public func take(accounts: WidgetAccounts) { self.accounts?.latest.withLock { $0[accounts.widget] = accounts } }

    public var takesAccounts: Bool { accounts != nil }

    @discardableResult
    public func stop(timeout: Duration) -> Bool { outbox.stop(timeout: timeout) }
}

/// The NDJSON line of one push: `{"patch":{"content":…},"t":"…","widget":"power"}`, the time in the
/// configured zone. One writer for `replay` and the stdout sink, so both print the same bytes.
public enum PushLine {
    /// Appends the line (without its newline) to `out`; the same bytes as printing the JSON object.
    public static func write(widget: String, at: Date, patch: ContentPatch, zone: any LocalTimeZone, to out: inout [UInt8]) {
        var stamps = LocalTimeStamps(zone: zone)
        write(widget: widget, at: at, patch: patch, stamps: &stamps, to: &out)
    }

    /// The same, the time written by `stamps`, which keeps the text of the last line's second.
    public static func write(widget: String, at: Date, patch: ContentPatch, stamps: inout LocalTimeStamps, to out: inout [UInt8]) {
        append(#"{"patch":{"content":"#, to: &out)
        patch.write(to: &out)
        append(#"},"t":""#, to: &out)
        stamps.write(at, to: &out)
        append(#"","widget":"#, to: &out)
        JSONValue.string(widget).write(to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// The line's fixed texts, copied from where the program keeps them (a `String`'s UTF-8
    /// view is appended through generic code, byte by byte).
    private static func append(_ text: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}

/// The accounts of each flow widget as the engine last handed them over, by widget.
final class LatestAccounts: Sendable {
    let latest = Mutex<[String: WidgetAccounts]>([:])
}

/// True the first time it is asked, false after: for things said once.
public final class OnceFlag: Sendable {
    private let done = Mutex(false)
    public init() {}

    public func setFirstTime() -> Bool {
        done.withLock { done in
            defer { done = true }
            return !done
        }
    }
}

/// Writing whole buffers to a descriptor.
public enum FileDescriptor {
    /// True when a write of a line (up to `PIPE_BUF`, 4 kB, what a push's line is) to `fd` would not
    /// wait now: poll says there is room. A pipe then has a free page, which such a write fits in
    /// whole; a file always has room; a socket (journald's stream) has room for more than a line
    /// once poll says so. False on a reader gone (poll's error), which the blocking write reports.
    public static func hasRoom(_ fd: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&descriptor, 1, 0) == 1 && descriptor.revents == Int16(POLLOUT)
    }

    /// What a descriptor's writes may wait for, looked at once.
    public enum Kind: Equatable, Sendable {
        /// A terminal may hold its output back at any moment (Ctrl-S) with room left: poll is no
        /// promise there, so its lines are always written by the sink's own thread.
        case terminal
        /// A regular file (`run --dry-run > file`) has no reader to wait for: a line always has
        /// room, and asking `poll` at every push is a system call for a known answer.
        case file
        /// A pipe, a socket (journald's stream), a device: `hasRoom` asks at each write.
        case other
    }

    public static func kind(of fd: Int32) -> Kind {
        if isatty(fd) == 1 { return .terminal }
        var status = stat()
        return fstat(fd, &status) == 0 && status.st_mode & S_IFMT == S_IFREG ? .file : .other
    }

    /// Writes every byte, retrying after signals; the system's reason when it fails.
    public static func writeAll(_ bytes: [UInt8], to fd: Int32) -> String? {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            offset += count
        }
        return nil
    }
}
