import Configuration
import FlowCore
import FoundationEssentials
import Persistence
import Platform
import Rendering

/// `flowbridge render`: the picture of each widget as the daemon's saved state shows it, computed at
/// the state's latest time (so a reading that was stale then is drawn stale). The state file is
/// only read: an unusable one is reported, never moved aside (that is the daemon's business).
struct RenderCommand: Command {
    static let name = "render"
    static let abstract = "Draws each widget as SVG as the daemon's saved state shows it, at the state's latest time (a meter silent then is drawn so); the state file is only read."

    static let out = Option<String>.required(
        "--out", alias: "-o", placeholder: "FILE.svg|DIR",
        help: "where the pictures go: a file ending in .svg for a config with one widget, else a folder that gets <widget>.svg for each")
    static var options: [any OptionDeclaration] { [SharedOptions.config, SharedOptions.state, out, SharedOptions.logLevel] }

    /// The config file (which a state file must never be), the state, the log.
    let shared: SharedOptions
    /// A file ending in `.svg` (a config with one widget), else a folder that gets `<widget>.svg`.
    let out: String

    init(parsing arguments: Arguments) throws(UsageError) {
        shared = try SharedOptions(parsing: arguments)
        out = try arguments.value(Self.out)
    }

    func run() -> ExitStatus {
        guard let config = DaemonConfig.loadReporting(shared.configPath) else { return .config }
        let statePath = ConfigContext.process(stateOverride: shared.stateOverride).statePath(configured: config.stateFile)
        let widgets = config.flow.widgetNames
        let toFile = out.hasSuffix(".svg")
        if toFile, widgets.count > 1 {
            return Self.usageFailure("--out \(out) is one file, but the config has \(widgets.count) widgets: give a folder")
        }
        let state: JSONValue
        switch StateStore(path: statePath).inspect(configPath: shared.configPath) {
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
            try engine.restore(state).forEach(shared.log.log)
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
            let files = PictureFolder.fileNames(of: widgets)
            for widget in widgets {
                guard let document = documents[widget] else {
                    shared.log.log(.warning, "widget '\(widget)' has nothing to show in \(statePath); no picture")
                    continue
                }
                let svg = WidgetPicture.svg(document.content, held: document.held, at: at)
                if let folder {
                    print(try folder.write(svg, named: files[widget] ?? widget))
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
