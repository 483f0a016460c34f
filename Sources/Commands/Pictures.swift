import Configuration
import FlowCore
import FoundationEssentials
import Glibc
import Persistence
import Platform
import Rendering
import Runtime

/// A folder that receives SVG pictures (`render`, `replay --svg`), created when missing. Files are
/// named after their widget, with anything but letters, digits, `.`, `_` and `-` replaced, so a
/// widget name from the config can never point outside the folder.
struct PictureFolder {
    let path: String

    init(path: String) throws(FileError) {
        self.path = path
        try FileIO.makeFolders(path, permissions: 0o755)
        var info = stat()
        guard stat(path, &info) == 0 else { throw FileError(path) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw FileError(path, errno: ENOTDIR) }
    }

    /// Writes `svg` as `<name>.svg` (atomically, readable by all: pictures are meant to be shown).
    /// Returns the file's path.
    @discardableResult
    func write(_ svg: String, named name: String) throws(FileError) -> String {
        let file = "\(path.hasSuffix("/") ? String(path.dropLast()) : path)/\(Self.fileName(name)).svg"
        try FileIO.writeAtomically(Array(svg.utf8), to: file, permissions: 0o644)
        return file
    }

    static func fileName(_ name: String) -> String {
        let safe = String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" })
        return safe.isEmpty ? "widget" : safe.first == "." ? "_" + safe.dropFirst() : safe
    }
}

/// What `replay --svg` draws: the last document of every widget (flow or progress), and for each
/// flow widget a chart of its nodes' power for every local day of the trace, from the documents it
/// was pushed.
struct ReplayPictures {
    let folder: PictureFolder
    let zone: any LocalTimeZone
    var documents: [String: ShownDocument] = [:]
    var histories: [String: PowerHistory] = [:]

    init(folder: PictureFolder, zone: any LocalTimeZone) {
        self.folder = folder
        self.zone = zone
    }

    mutating func take(_ outputs: [FlowEngine.Output]) {
        for case .push(let widget, let at, let push) in outputs {
            record(ShownDocument(content: push.document, held: push.held), of: widget, at: at)
        }
    }

    mutating func record(_ document: ShownDocument, of widget: String, at: Date) {
        documents[widget] = document
        guard case .flow(let flow) = document.content else { return }
        let zone = zone
        histories[widget, default: PowerHistory(zone: zone)].record(flow, held: document.held.nodes, at: at)
    }

    /// Writes `<widget>.svg` and `<widget>-day-<date>.svg` for the `widgets` (config order) that were
    /// pushed; `end` is when the replay stopped. Returns the files written.
    func write(widgets: [String], through end: Date?) throws(FileError) -> [String] {
        var written: [String] = []
        for widget in widgets {
            guard let document = documents[widget] else { continue }
            written.append(try folder.write(WidgetPicture.svg(document.content, held: document.held, at: end), named: widget))
            guard case .flow(let flow) = document.content, let history = histories[widget] else { continue }
            for chart in history.charts(title: flow.shared.label ?? widget, through: end) {
                written.append(try folder.write(chart.svg(), named: "\(widget)-day-\(chart.day.date)"))
            }
        }
        return written
    }
}

/// `flowbridge render`: the picture of each widget as the daemon's saved state shows it, computed at
/// the state's latest time (so a reading that was stale then is drawn stale). The state file is
/// only read: an unusable one is reported, never moved aside (that is the daemon's business).
struct RenderCommand {
    let config: DaemonConfig
    /// The config file, which a state file must never be.
    let configPath: String
    let statePath: String
    /// A file ending in `.svg` (a config with one widget), else a folder that gets `<widget>.svg`.
    let out: String
    let log: Logger

    func run() -> ExitStatus {
        let widgets = config.flow.widgetNames
        let toFile = out.hasSuffix(".svg")
        if toFile, widgets.count > 1 {
            return Commands.usageFailure("--out \(out) is one file, but the config has \(widgets.count) widgets: give a folder")
        }
        let state: JSONValue
        switch StateStore(path: statePath).inspect(configPath: configPath) {
        case .state(let saved):
            state = saved
        case .none:
            StandardError.print("flowbridge: cannot read the state: there is no state file at \(statePath)")
            return .noInput
        case .damaged(let reason):
            StandardError.print("flowbridge: state file \(statePath) cannot be used: \(reason)")
            return .dataError
        case .unusable(let problem):
            StandardError.print("flowbridge: \(problem)")
            return .dataError
        }
        var engine = FlowEngine(config: config.flow, zone: config.zone)
        do {
            try engine.restore(state).forEach(log.log)
        } catch {
            StandardError.print("flowbridge: \(statePath) cannot be used: \(error)")
            return .dataError
        }
        guard let at = engine.latestKnownTime else {
            StandardError.print("flowbridge: \(statePath) holds no reading yet: nothing to draw")
            return .dataError
        }
        let documents = engine.currentDocuments(at: at)
        var drawn = 0
        do {
            let folder = toFile ? nil : try PictureFolder(path: out)
            for widget in widgets {
                guard let document = documents[widget] else {
                    log.log(.warning, "widget '\(widget)' has nothing to show in \(statePath); no picture")
                    continue
                }
                let svg = WidgetPicture.svg(document.content, held: document.held, at: at)
                if let folder {
                    print(try folder.write(svg, named: widget))
                } else {
                    try FileIO.writeAtomically(Array(svg.utf8), to: out, permissions: 0o644)
                    print(out)
                }
                drawn += 1
            }
        } catch {
            StandardError.print("flowbridge: cannot write the picture: \(error)")
            return .cannotCreate
        }
        return drawn > 0 ? .success : .dataError
    }
}
