import Configuration
import DayBook
import Delivery
import FlowCore
import FoundationEssentials
import Glibc
import Persistence
import Platform

/// `flowbridge replay`: recorded messages through the engine with their own times as the clock
/// (`Replay`), every push printed as the stdout sink prints it.
struct ReplayCommand: Command {
    static let name = "replay"
    static let abstract = "Feeds recorded messages through the engine with the messages' own times as the clock, so the same trace always gives the same bytes, and prints one NDJSON line per push; a malformed trace line is reported with its number and skipped."

    static let final = Flag("--final", help: "after the pushes, one {\"content\": …, \"widget\": …} line per widget: the document it would show; then one {\"accounts\": …, \"widget\": …} line per flow widget: every account in kWh; with a tariff, one {\"money\": …, \"widget\": …} line per priced flow widget")
    static let state = SharedOptions.state.help(
        "read the day from this state file before the first message, and save it there after the last, taking its lock (not while the daemon runs on it), with the closed slots and days the day book still waits for (unless --book takes them); without it, no state is read or written")
    static let svg = Option<String?>("--svg", placeholder: "DIR", help: "also draw each widget and its day chart into DIR")
    static let book = Option<String?>(
        "--book", placeholder: "FILE",
        help: "also write the trace's closed slots and days into this day book (made when there is none), the rows a live run writes; a slot or day already there is replaced")
    static let operand: Operand? = Operand(
        synopsis: "TRACE", help: "the recorded messages, a file with one {\"t\", \"topic\", \"payload\"} object a line, or - for standard input")
    static var options: [any OptionDeclaration] { [SharedOptions.config, final, state, svg, book, SharedOptions.logLevel] }

    /// The config, the log, and `--state`: the state to continue and save; nil: none.
    let shared: SharedOptions
    let final: Bool
    /// The folder for pictures; nil: none drawn.
    let svg: String?
    /// The day book to write; nil: none.
    let bookPath: String?
    /// A file, or `-` for standard input.
    let trace: String

    init(parsing arguments: Arguments) throws(UsageError) {
        guard arguments.operands.count == 1 else { throw UsageError("replay needs one TRACE (a file, or - for standard input)") }
        trace = arguments.operands[0]
        shared = try SharedOptions(parsing: arguments, state: Self.state)
        final = arguments.isSet(Self.final)
        svg = try arguments.value(Self.svg)
        bookPath = try arguments.value(Self.book)
    }

    func run() -> ExitStatus {
        guard let config = DaemonConfig.loadReporting(shared.configPath) else { return .config }
        let zone = config.zone
        var replay = Replay(config: config.flow, zone: zone)
        var pictures: ReplayPictures?
        if let svg {
            do { pictures = ReplayPictures(folder: try PictureFolder(path: svg), zone: zone) } catch {
                StandardError.print("flowbridge: cannot create the picture folder: \(error)")
                return .cannotCreate
            }
        }
        let store = shared.stateOverride.map(StateStore.init(path:))
        // The state has one owner at a time: a replay into the daemon's state waits for no one.
        var lock: StateLock?
        var waiting = BookQueue()
        if let store {
            do {
                lock = try StateLock(statePath: store.path)
                waiting = try replay.restore(from: store, configPath: shared.configPath, log: shared.log)
            } catch let error as StateLock.Failure {
                StandardError.print("flowbridge: \(error)")
                if case .held = error { return .stateInUse }
                return .cannotCreate  // the state could not be written either
            } catch {
                StandardError.print("flowbridge: \(error)")
                return .config
            }
        }
        defer { withExtendedLifetime(lock) {} }
        var book: ReplayBook
        do { book = try ReplayBook(path: bookPath, zone: zone, waiting: waiting) } catch {
            StandardError.print("flowbridge: \(error)")
            return .cannotCreate
        }
        let fd: Int32 = trace == "-" ? 0 : open(trace, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            StandardError.print("flowbridge: \(FileError(trace))")
            return .noInput
        }
        defer { if fd != 0 { close(fd) } }
        var output = OutputBuffer(zone: zone)
        func emit(_ items: [FlowEngine.Output]) {
            output.write(items, log: shared.log)
            pictures?.take(items)
            book.take(items)
        }
        var number = 0
        for read in LineReader(fd: fd) {
            number += 1
            guard case .line(let line) = read else {
                shared.log.log(.warning, "\(trace == "-" ? "stdin" : trace) line \(number): \(read); skipped")
                continue
            }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            do {
                let outputs = replay.feed(try TraceMessage(line: line))
                emit(outputs)
            } catch {
                shared.log.log(.warning, "\(trace == "-" ? "stdin" : trace) line \(number): \(error.reason); skipped")
            }
        }
        emit(replay.finish())
        if final { (replay.finalLines() + replay.accountLines() + replay.moneyLines()).forEach { output.line($0) } }
        output.flush()
        do { try book.flush() } catch {
            StandardError.print("flowbridge: \(error)")
            return .cannotCreate
        }
        if let store {
            do { try store.save(book.waiting.saved(in: replay.engine.snapshot())) } catch {
                StandardError.print("flowbridge: cannot write the state: \(error)")
                return .cannotCreate
            }
        }
        do { _ = try pictures?.write(widgets: config.flow.widgetNames, through: replay.engine.clock) } catch {
            StandardError.print("flowbridge: cannot write the pictures: \(error)")
            return .cannotCreate
        }
        return .success
    }
}
