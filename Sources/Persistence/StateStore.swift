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
    /// How the saves are written (two copies in turn, see `StateFileWriter`).
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

    /// The state's other copy, `state.json.alt` (see `StateFileWriter`).
    public var alternatePath: String { writer.alternatePath }

    /// What is at the state path, found without changing anything: the newer whole one of the two
    /// copies (see `choose`).
    public enum Inspection {
        /// Nothing: the day starts fresh.
        case none
        /// A flowbridge state, its shape checked (the engine checks its entries), its seal taken off.
        case state(JSONValue)
        /// A flowbridge state that cannot be used (torn, emptied or zeroed by a power cut, or its
        /// totals are gone): set aside.
        case damaged(reason: String)
        /// Not something to read or to move: the daemon must not start on it.
        case unusable(StateFileProblem)
    }

    /// Looks at the state's copies. `configPath` is the config file, which a state must never be.
    public func inspect(configPath: String? = nil) -> Inspection { choose(configPath: configPath).inspection }

    /// Which copy is the state, and what the others are.
    struct Choice {
        var inspection: Inspection
        /// The copies with a usable state, the newest whole one first: the state, then the one to
        /// try when the engine cannot restore it.
        var states: [(file: String, state: JSONValue, seal: StateSeal.Reading)] = []
        /// The copies that cannot be used, and why: set aside only when no copy can be used.
        var damaged: [(file: String, reason: String)] = []
    }

    /// The state is the newest whole copy: of two sealed copies the one with the higher sequence
    /// whose checksum matches (the other may be a save a power cut tore). A copy whose checksum
    /// does not match is used only when no whole copy is left (then it was edited by hand, not
    /// torn: a torn save always leaves the other copy whole). A state without a seal at the state's
    /// path was written by a release before the two copies, which never writes the alternate: it
    /// is the state, whatever the alternate holds (an upgrade, or a run of an older release in
    /// between). Anything unusable at either name stops the start, naming it.
    func choose(configPath: String?) -> Choice {
        let copies = [(path, examine(path, configPath: configPath)), (alternatePath, examine(alternatePath, configPath: configPath))]
        var choice = Choice(inspection: .none)
        for (file, copy) in copies {
            switch copy {
            case .none: break
            case .unusable(let problem): return Choice(inspection: .unusable(problem))
            case .damaged(let reason): choice.damaged.append((file, reason))
            case .state(let state, let seal): choice.states.append((file, state, seal))
            }
        }
        if let main = choice.states.first, main.file == path, main.seal == .unsealed {
            choice.states = [main]
        }
        // Whole copies first, then the newer; the state's path first among equals (a stable sort).
        choice.states = choice.states.enumerated().sorted { first, second in
            let (a, b) = (first.element.seal, second.element.seal)
            if a.isIntact != b.isIntact { return a.isIntact }
            return a.sequence != b.sequence ? a.sequence > b.sequence : first.offset < second.offset
        }.map(\.element)
        if let newest = choice.states.first {
            choice.inspection = .state(newest.state)
        } else if let damaged = choice.damaged.first {
            choice.inspection = .damaged(reason: damaged.reason)
        }
        return choice
    }

    /// The newest whole copy's file and whether it is sealed, for the writer, and the highest
    /// sequence of any copy (a torn one's too, so that a sequence never repeats).
    func newest() -> (file: String, sequence: UInt64, sealed: Bool)? {
        let states = choose(configPath: nil).states
        return states.first.map { ($0.file, states.map(\.seal.sequence).max() ?? 0, $0.seal != .unsealed) }
    }

    /// What one copy holds.
    enum Copy {
        case none
        case state(JSONValue, StateSeal.Reading)
        case damaged(reason: String)
        case unusable(StateFileProblem)
    }

    /// Looks at one copy. The alternate is only ever a plain file of its own: anything else there
    /// (a folder, a link, a second name of another file) is not read, and not written either.
    func examine(_ file: String, configPath: String?) -> Copy {
        if file == alternatePath, !StateFileWriter.isPlainFile(file) { return .none }
        var info = stat()
        guard stat(file, &info) == 0 else {
            return errno == ENOENT ? .none : .unusable(StateFileProblem(file, "cannot be read (\(FileError(file).reason))"))
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            return .unusable(StateFileProblem(file, "is a directory; state_file names the file to keep the day in"))
        }
        if let configPath, FileIO.isSameFile(configPath, info) {
            return .unusable(StateFileProblem(file, "is the config file; the state needs a file of its own"))
        }
        var bytes: [UInt8]
        do { bytes = try FileIO.read(file, atMost: Self.sizeLimit + 1) } catch {
            return .unusable(StateFileProblem(file, "cannot be read (\(error.reason))"))
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
            return marked ? .damaged(reason: "larger than \(FileIO.describe(bytes: Self.sizeLimit))") : .unusable(.foreign(file))
        }
        guard let json = try? JSONValue(parsing: bytes), case .object(let members) = json else {
            return marked ? .damaged(reason: "not a JSON object (a torn write?)") : .unusable(.foreign(file))
        }
        switch members[Self.formatKey] {
        case .string(Self.format)?:
            break
        case nil where Self.isPreviousLayout(json):
            return .state(json, .unsealed)  // written by a release before the marker
        default:
            return .unusable(.foreign(file))
        }
        let seal = StateSeal.read(bytes, members: members)
        let state = JSONValue.object(StateSeal.unsealed(members))
        // The engine leaves out a damaged entry and keeps the rest; a state without its readings
        // or totals would silently zero the day, so it is damaged as a whole.
        for key in ["readings", "totals"] where json[key]?.objectValue == nil {
            return .damaged(reason: json[key] == nil ? "its \(key) are missing" : "its \(key) are not an object")
        }
        guard json["version"]?.numberValue != nil else { return .damaged(reason: "it has no version") }
        return .state(state, seal)
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

    /// Loads the saved day into a fresh engine, saying in the log what it did: continued the day
    /// (naming the copy it came from, and why the other was passed over), left damaged entries
    /// out, or set a damaged state aside and started fresh. Returns the saved document when it was
    /// used (it also holds what the sinks keep). Throws when a file is not one to read or move (see
    /// `Inspection.unusable`).
    @discardableResult
    public func restore(into engine: inout FlowEngine, access: Access = .owner, configPath: String? = nil, log: Logger)
        throws(StateFileProblem) -> JSONValue?
    {
        let choice = choose(configPath: configPath)
        switch choice.inspection {
        case .none:
            log.log(.info, "no saved state at \(path): starting the day fresh")
            return nil
        case .unusable(let problem):
            throw problem
        case .damaged, .state:
            break
        }
        var passed = choice.damaged
        for (position, copy) in choice.states.enumerated() {
            var attempt = engine
            do throws(StateError) {
                let diagnostics = try attempt.restore(copy.state)
                engine = attempt
                for (file, reason) in passed {
                    // A copy the engine cannot restore is moved aside, so that no save takes it for
                    // the newest; a torn one is what the next save rewrites.
                    let torn = choice.damaged.contains { $0.file == file } || access == .readOnly
                    let kept = torn ? "" : keepAside(file).map { "; kept as \($0)" } ?? ""
                    log.log(.warning, "state \(file) cannot be used (\(reason))\(kept); continuing from \(copy.file)")
                }
                for other in choice.states[(position + 1)...] where !other.seal.isIntact {
                    log.log(.warning, "state \(other.file) is torn (its checksum does not match: a save cut short?); continuing from \(copy.file)")
                }
                if !copy.seal.isIntact {
                    log.log(.warning, "state \(copy.file): its checksum does not match (edited by hand?) and no other copy is whole; used as it is")
                }
                diagnostics.forEach(log.log)
                log.log(.info, "continuing the day \(engine.day?.description ?? "?") from \(copy.file)")
                return copy.state
            } catch {
                passed.append((copy.file, error.description))
            }
        }
        for (index, (file, reason)) in passed.enumerated() {
            let kept: String = switch access {
            case .owner: keepAside(file).map { "kept as \($0)" } ?? "it could not be moved aside"
            case .readOnly: "a dry run leaves it as it is"
            }
            log.log(.warning, "state \(file) cannot be used (\(reason)); \(kept)\(index == passed.count - 1 ? "; starting a fresh day" : "")")
        }
        return nil
    }

    /// Moves an unusable copy of the state out of the way, under a name that says so.
    func keepAside(_ file: String) -> String? {
        let aside = "\(file).corrupt-\(Int(Date().timeIntervalSince1970))"
        return rename(file, aside) == 0 ? aside : nil
    }

    /// Writes the state, marker first: `{"format":"flowbridge-state","sequence":…,"crc32":"…"}`,
    /// in compact JSON, padded with spaces to whole blocks, into the older of its two copies (see
    /// `StateFileWriter`). `last`: no save follows in this run (the stop, a replay's), so the
    /// state is left alone at its path; the daemon's saves while it runs pass false.
    public func save(_ state: JSONValue, last: Bool = true) throws(FileError) {
        var members = StateSeal.unsealed(state.objectValue ?? [:])
        members[Self.formatKey] = nil
        try writer.write(JSONValue.object(members).encoded(), last: last, newest: newest)  // `{…}`, keys sorted
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
