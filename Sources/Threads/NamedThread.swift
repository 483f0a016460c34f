#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starts a thread of its own, named for what it does (`top -H`, `gdb`, a crash's backtrace say
/// which one): the MQTT client's network loop, a widget's delivery, a test's own executor. The
/// one place that spawns threads, so none goes unnamed.
public enum NamedThread {
    /// Why a thread did not start: the error `pthread_create` returned.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        public var code: Int32
        public var description: String { String(cString: strerror(code)) }
    }

    /// Linux's limit for a thread's name: 15 bytes and the terminating NUL.
    public static let maxNameBytes = 15

    /// Runs `body` on a new thread named `name` (cut to `maxNameBytes`). Joinable: the caller
    /// joins the thread it gets (`pthread_join`), or lets it go with `detached: true`.
    @discardableResult
    public static func start(_ name: String, detached: Bool = false, _ body: @escaping @Sendable () -> Void) throws(StartError) -> pthread_t {
        final class Start {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        var thread = pthread_t()
        // The thread holds its start (and through the body what it captured) until it ends.
        let context = Unmanaged.passRetained(Start(name: String(decoding: name.utf8.prefix(maxNameBytes), as: UTF8.self), body: body)).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            NamedThread.name(start.name)
            start.body()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw StartError(code: rc)
        }
        if detached { pthread_detach(thread) }
        return thread
    }

    /// Names the calling thread, as `pthread_setname_np` does (which Swift's Glibc module does not
    /// show): its `comm` in `/proc/thread-self`.
    static func name(_ text: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
    }
}
