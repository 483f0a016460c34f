import FlowCore
import FoundationEssentials
import Glibc
import Platform

/// Where the engine's state lives between runs. Writes are atomic and carry a format marker, so
/// the file says what it is; only a file that is recognizably a flowbridge state, or one that
/// holds nothing at all (empty, or zeroed by a power cut), is ever moved aside when it cannot be
/// used. Anything else at the state path (a directory, the config file, another program's file, a
/// state that cannot be read) is an error, never a fresh day.
public struct StateStore: Sendable {
    public let path: String
    /// How the saves are written (the spare beside the state, see `StateFileWriter`).
    let writer: StateFileWriter

    public init(path: String) {
        self.path = path
        writer = StateFileWriter(path: path)
    }

    /// The marker at the top level of every state flowbridge writes: `"format": "flowbridge-state"`.
    public static let formatKey = "format"
    public static let format = "flowbridge-state"
    /// How every state file flowbridge writes begins, so even a torn one is recognizably a state.
    static let header = Array(#"{"format":"flowbridge-state""#.utf8)
    /// EF BB BF: the UTF-8 byte order mark.
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
    /// No state is larger: a few kB per source. A larger file is not one flowbridge wrote.
    static let sizeLimit = 16 << 20

    /// The default place: systemd's `StateDirectory=` (`$STATE_DIRECTORY`), else
    /// `/var/lib/flowbridge` when this user may write there, else `$XDG_STATE_HOME/flowbridge`
    /// (`~/.local/state/flowbridge`), so a normal user's `run` works too.
    public static func defaultPath(environment: [String: String]) -> String {
        if let directory = environment["STATE_DIRECTORY"]?.split(separator: ":").first {
            return "\(directory)/state.json"
        }
        let system = "/var/lib/flowbridge"
        if access(system, W_OK) == 0 || (!FileIO.exists(system) && access("/var/lib", W_OK) == 0) {
            return "\(system)/state.json"
        }
        let base = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? "\(environment["HOME"] ?? "/")/.local/state"
        return "\(base)/flowbridge/state.json"
    }

    /// What is at the state path, found without changing anything.
    public enum Inspection {
        /// Nothing: the day starts fresh.
        case none
        /// A flowbridge state, its shape checked (the engine checks its entries).
        case state(JSONValue)
        /// A flowbridge state that cannot be used (torn, emptied or zeroed by a power cut, or its
        /// totals are gone): set aside.
        case damaged(reason: String)
        /// Not something to read or to move: the daemon must not start on it.
        case unusable(StateFileProblem)
    }

    /// Looks at the state file. `configPath` is the config file, which a state must never be.
    public func inspect(configPath: String? = nil) -> Inspection {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return errno == ENOENT ? .none : .unusable(StateFileProblem(path, "cannot be read (\(FileError(path).reason))"))
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            return .unusable(StateFileProblem(path, "is a directory; state_file names the file to keep the day in"))
        }
        if let configPath, FileIO.isSameFile(configPath, info) {
            return .unusable(StateFileProblem(path, "is the config file; the state needs a file of its own"))
        }
        var bytes: [UInt8]
        do { bytes = try FileIO.read(path, atMost: Self.sizeLimit + 1) } catch {
            return .unusable(StateFileProblem(path, "cannot be read (\(error.reason))"))
        }
        // An editor that saved the state may have put a UTF-8 byte order mark first: not JSON,
        // but nothing of the state either.
        if bytes.starts(with: Self.byteOrderMark) { bytes.removeFirst(Self.byteOrderMark.count) }
        // A power cut can leave a file empty, or its blocks zeroed (SD cards): nobody's file, so
        // nothing is lost by moving it aside, and refusing it would keep the service down.
        if bytes.allSatisfy({ $0 == 0 || $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }) {
            return .damaged(reason: bytes.isEmpty ? "it is empty" : "it holds only NUL bytes or spaces (a power cut?)")
        }
        // A torn write cut short within the marker is still recognizably a state.
        let marked = bytes.starts(with: Self.header) || Self.header.starts(with: bytes)
        guard bytes.count <= Self.sizeLimit else {
            return marked ? .damaged(reason: "larger than \(FileIO.describe(bytes: Self.sizeLimit))") : .unusable(.foreign(path))
        }
        guard let json = try? JSONValue(parsing: bytes), case .object(let members) = json else {
            return marked ? .damaged(reason: "not a JSON object (a torn write?)") : .unusable(.foreign(path))
        }
        switch members[Self.formatKey] {
        case .string(Self.format)?:
            break
        case nil where Self.isPreviousLayout(json):
            return .state(json)  // written by a release before the marker
        default:
            return .unusable(.foreign(path))
        }
        // The engine leaves out a damaged entry and keeps the rest; a state without its readings
        // or totals would silently zero the day, so it is damaged as a whole.
        for key in ["readings", "totals"] where json[key]?.objectValue == nil {
            return .damaged(reason: json[key] == nil ? "its \(key) are missing" : "its \(key) are not an object")
        }
        guard json["version"]?.numberValue != nil else { return .damaged(reason: "it has no version") }
        return .state(json)
    }

    /// The layout of the release before the marker: version 1 with readings and totals objects.
    static func isPreviousLayout(_ json: JSONValue) -> Bool {
        json["version"]?.numberValue == 1 && json["readings"]?.objectValue != nil && json["totals"]?.objectValue != nil
    }

    /// How a run treats a state it cannot use.
    public enum Access {
        /// The owner (it holds the lock): a damaged state is moved aside, kept for a person to look at.
        case owner
        /// A dry run: reads, never renames, never writes.
        case readOnly
    }

    /// Loads the saved day into a fresh engine, saying in the log what it did: continued the day,
    /// left damaged entries out, or set a damaged state aside and started fresh. Returns the saved
    /// document when it was used (it also holds what the sinks keep). Throws when the file is not
    /// one to read or move (see `Inspection.unusable`).
    @discardableResult
    public func restore(into engine: inout FlowEngine, access: Access = .owner, configPath: String? = nil, log: Logger)
        throws(StateFileProblem) -> JSONValue?
    {
        let reason: String
        switch inspect(configPath: configPath) {
        case .none:
            log.log(.info, "no saved state at \(path): starting the day fresh")
            return nil
        case .unusable(let problem):
            throw problem
        case .damaged(let why):
            reason = why
        case .state(let saved):
            do {
                try engine.restore(saved).forEach(log.log)
                log.log(.info, "continuing the day \(engine.day?.description ?? "?") from \(path)")
                return saved
            } catch {
                reason = error.description
            }
        }
        let kept: String = switch access {
        case .owner: keepAside().map { "kept as \($0)" } ?? "it could not be moved aside"
        case .readOnly: "a dry run leaves it as it is"
        }
        log.log(.warning, "state \(path) cannot be used (\(reason)); \(kept); starting a fresh day")
        return nil
    }

    /// Moves an unusable state file out of the way, under a name that says so.
    func keepAside() -> String? {
        let aside = "\(path).corrupt-\(Int(Date().timeIntervalSince1970))"
        return rename(path, aside) == 0 ? aside : nil
    }

    /// Writes the state atomically, marker first: `{"format":"flowbridge-state",…}`, in compact
    /// JSON, padded with spaces to whole blocks (see `StateFileWriter`). `last`: no save follows in
    /// this run (the stop, a replay's), so no spare is kept beside the state; the daemon's saves
    /// while it runs pass false and rewrite the spare in place.
    public func save(_ state: JSONValue, last: Bool = true) throws(FileError) {
        var members = state.objectValue ?? [:]
        members[Self.formatKey] = nil
        let body = JSONValue.object(members).encoded()  // `{…}`, keys sorted
        var bytes = Self.header
        bytes.append(contentsOf: body.count > 2 ? [UInt8(ascii: ",")] + body.dropFirst() : [UInt8(ascii: "}")])
        bytes.append(0x0A)
        try writer.write(bytes, keepingSpare: !last)
    }

    /// Creates the state's folder when missing; a folder that cannot be written is a warning now
    /// rather than an error at the first save, minutes later.
    public func prepareFolder(log: Logger) {
        let folder = FileIO.folder(of: path)
        do { try FileIO.makeFolders(folder) } catch {
            log.log(.warning, "cannot create the state folder \(folder) (\(error.reason)): the day will not survive a restart")
            return
        }
        if access(folder, W_OK) != 0 {
            log.log(.warning, "the state folder \(folder) is not writable (\(FileError(folder).reason)): the day will not survive a restart")
        }
    }
}

/// A state path the daemon must not start on, with what is wrong; nothing has been changed.
public struct StateFileProblem: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    init(_ path: String, _ reason: String) {
        self.path = path
        self.reason = reason
    }

    static func foreign(_ path: String) -> StateFileProblem {
        StateFileProblem(path, "is not a flowbridge state (no \"format\": \"flowbridge-state\"); it was left as it is: point state_file at a file of its own")
    }

    public var description: String { "state file \(path) \(reason)" }
}
