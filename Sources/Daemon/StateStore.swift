import FlowCore
import FoundationEssentials
import Glibc

/// Where the engine's state lives between runs. Writes are atomic; a file that cannot be read back
/// is moved aside (kept for a person to look at) and the day starts fresh, never a crash.
public struct StateStore: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// The default place: systemd's `StateDirectory=` when set, else /var/lib/flowbridge.
    public static func defaultPath() -> String {
        let directory = getenv("STATE_DIRECTORY").map { String(cString: $0) }?.split(separator: ":").first.map(String.init)
        return "\(directory ?? "/var/lib/flowbridge")/state.json"
    }

    public enum Loaded {
        case none
        case state(JSONValue)
        /// Unreadable; moved to `keptAt` (nil when even that failed).
        case corrupt(reason: String, keptAt: String?)
    }

    public func load() -> Loaded {
        guard FileIO.exists(path) else { return .none }
        let reason: String
        do {
            let bytes = try FileIO.read(path)
            do {
                return .state(try JSONValue(parsing: bytes))
            } catch {
                reason = "not JSON (\(error))"
            }
        } catch {
            reason = error.reason
        }
        return .corrupt(reason: reason, keptAt: keepAside())
    }

    /// Moves an unusable state file out of the way, under a name that says so.
    public func keepAside() -> String? {
        let aside = "\(path).corrupt-\(Int(Date().timeIntervalSince1970))"
        return rename(path, aside) == 0 ? aside : nil
    }

    /// Loads the saved day into a fresh engine, saying in the log what it did: continued the day,
    /// left damaged entries out, or kept an unusable file aside and started fresh. Never fails.
    /// Returns the saved document when it was used (it also holds what the sinks keep).
    @discardableResult
    public func restore(into engine: inout FlowEngine, log: Logger) -> JSONValue? {
        switch load() {
        case .none:
            log.log(.info, "no saved state at \(path): starting the day fresh")
        case .state(let saved):
            do {
                try engine.restore(saved).forEach(log.log)
                log.log(.info, "continuing the day \(engine.day?.description ?? "?") from \(path)")
                return saved
            } catch {
                log.log(.warning, "state \(path) cannot be used (\(error)); \(keepAside().map { "kept as \($0), " } ?? "")starting a fresh day")
            }
        case .corrupt(let reason, let keptAt):
            log.log(.warning, "state \(path) is unreadable (\(reason)); \(keptAt.map { "kept as \($0), " } ?? "")starting a fresh day")
        }
        return nil
    }

    public func save(_ state: JSONValue) throws(FileError) {
        var bytes = state.encoded()
        bytes.append(0x0A)
        try FileIO.writeAtomically(bytes, to: path)
    }
}
