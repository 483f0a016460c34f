import FlowCore
import FoundationEssentials
import Glibc
import Platform
import Rendering

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

    /// The name each of `widgets` gives its files, unique among them: its name as a file name, and
    /// where two come out alike (`a b` and `a_b`, `Küche` and `K_che`), `-2`, `-3` after the later
    /// ones in the order given (`FlowConfig.widgetNames`: the flow widgets, then the progress
    /// bars), so that no widget's picture is written over another's.
    static func fileNames(of widgets: [String]) -> [String: String] {
        var names: [String: String] = [:]
        var taken: Set<String> = []
        for widget in widgets where names[widget] == nil {
            let base = fileName(widget)
            var name = base
            var count = 1
            while taken.contains(name) {
                count += 1
                name = "\(base)-\(count)"
            }
            taken.insert(name)
            names[widget] = name
        }
        return names
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
    /// pushed (each widget's name as `PictureFolder.fileNames` gives it); `end` is when the replay
    /// stopped. Returns the files written.
    func write(widgets: [String], through end: Date?) throws(FileError) -> [String] {
        var written: [String] = []
        let files = PictureFolder.fileNames(of: widgets)
        for widget in widgets {
            guard let document = documents[widget], let file = files[widget] else { continue }
            written.append(try folder.write(WidgetPicture.svg(document.content, held: document.held, at: end), named: file))
            guard case .flow(let flow) = document.content, let history = histories[widget] else { continue }
            for chart in history.charts(title: flow.shared.label ?? widget, through: end) {
                written.append(try folder.write(chart.svg(), named: "\(file)-day-\(chart.day.date)"))
            }
        }
        return written
    }
}
