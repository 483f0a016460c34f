@testable import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import ReplaySupport
import TestSupport
import Testing

/// `replay --svg` and `render`, through the real binary, on the bundled day
/// (`Tests/Fixtures/home-day.yaml` and `home-day.ndjson`, built from the payloads in devices.json).
@Suite struct PictureTests {
    static let config = Repository.fixtures.appendingPathComponent("home-day.yaml").path
    static let trace = Repository.fixtures.appendingPathComponent("home-day.ndjson").path

    func read(_ path: String) throws -> String { try String(decoding: Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self) }

    /// The node group of a picture, `<g class="node" data-place="storage" …>…</g>`.
    func nodeGroup(_ place: String, in svg: String) throws -> Substring {
        let start = try #require(svg.firstRange(of: "data-place=\"\(place)\""))
        let end = try #require(svg[start.upperBound...].firstRange(of: "</g>"))
        return svg[start.lowerBound..<end.lowerBound]
    }

    /// Besides the NDJSON, replay writes the final picture of the widget and its day chart; the
    /// picture shows the `--final` document: every node with its name, rate and total.
    @Test func replayWritesThePictureAndTheDayChart() throws {
        let folder = TemporaryFolder()
        let pictures = folder.url.appendingPathComponent("pictures/new").path
        let run = try runFlowbridge(["replay", "--config", Self.config, "--final", "--svg", pictures, Self.trace])
        #expect(run.status == 0, "\(run.err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: pictures).sorted() == ["power-day-2026-06-01.svg", "power.svg"])
        let plain = try runFlowbridge(["replay", "--config", Self.config, "--final", Self.trace])
        #expect(plain.out == run.out, "the NDJSON is the same with and without --svg")

        let final = try finalDocument(run.out)
        let flow = try #require(final["content"]?["flow"])
        let picture = try read("\(pictures)/power.svg")
        #expect(picture.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        var places: [(String, JSONValue)] = (flow["inputs"]?.arrayValue ?? []).enumerated().map { ("inputs[\($0.offset)]", $0.element) }
        for slot in ["output", "storage", "exchange"] { if let node = flow[slot] { places.append((slot, node)) } }
        #expect(places.count == 5)
        for (place, node) in places {
            let group = try nodeGroup(place, in: picture)
            let name = try #require(node["name"]?.stringValue)
            let rate = try #require(node["rate"]?.numberValue)
            #expect(group.contains(">\(name)</tspan>"), "\(place)")
            #expect(group.contains(">\(JSONValue.format(abs(rate))) W</text>"), "\(place): \(rate)")
            if let total = node["total"]?.numberValue { #expect(group.contains(">\(DisplayTotal.text(total)) kWh</text>"), "\(place)") }
        }

        let chart = try read("\(pictures)/power-day-2026-06-01.svg")
        for name in ["Roof", "Balcony", "Home", "Battery", "Grid"] { #expect(chart.contains("class=\"series\" data-place=") && chart.contains("data-name=\"\(name)\"")) }
        #expect(chart.components(separatedBy: "class=\"series\"").count - 1 == 5)
        #expect(chart.contains(">00:00</text>") && chart.contains(">24:00</text>"))
    }

    /// `render` draws the widget from the state the daemon keeps (here: the state a replay left),
    /// at the state's latest time; `--out` names a file for a config of one widget, or a folder.
    @Test func renderDrawsTheSavedState() throws {
        let folder = TemporaryFolder()
        let state = folder.url.appendingPathComponent("state.json").path
        let replay = try runFlowbridge(["replay", "--config", Self.config, "--state", state, "--final", Self.trace])
        #expect(replay.status == 0, "\(replay.err)")
        let toFolder = try runFlowbridge(["render", "--config", Self.config, "--state", state, "--out", "\(folder.url.path)/out"])
        #expect(toFolder.status == 0, "\(toFolder.err)")
        #expect(toFolder.out == "\(folder.url.path)/out/power.svg\n")
        let toFile = try runFlowbridge(["render", "--config", Self.config, "--state", state, "--out", "\(folder.url.path)/widget.svg"])
        #expect(toFile.status == 0, "\(toFile.err)")
        let picture = try read("\(folder.url.path)/widget.svg")
        #expect(picture == (try read("\(folder.url.path)/out/power.svg")))
        // The evening of the bundled day: the battery drains, the grid imports, the sun is down.
        #expect(try nodeGroup("storage", in: picture).contains(">draining</text>"))
        #expect(try nodeGroup("exchange", in: picture).contains(">importing</text>"))
        #expect(picture.contains(#"data-from="storage" data-to="output""#))
        #expect(picture.contains(#"data-from="exchange" data-to="output""#))
        #expect(!picture.contains(#"data-from="inputs["#))
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(folder.url.path)/widget.svg")
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o044 } == 0o044, "pictures are readable by all")
    }

    struct RenderFailure: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var config: String
        var state: String?
        var out: String?
        var status: Int32
        var message: String
    }

    static let oneWidget = """
        timezone: UTC
        sources: {grid: {topic: grid/power}}
        widgets: {power: {template: flow, flow: {exchange: {name: Grid, rate: grid}}}}
        """

    static let failures: [RenderFailure] = [
        RenderFailure(testDescription: "no --out", config: oneWidget, state: "{}", out: nil, status: 64, message: "render needs --out"),
        RenderFailure(
            testDescription: "a file for two widgets",
            config: oneWidget.replacingOccurrences(of: "widgets: {power:", with: "widgets: {other: {template: flow, flow: {exchange: {rate: grid}}}, power:"),
            state: "{}", out: "x.svg", status: 64, message: "the config has 2 widgets: give a folder"),
        RenderFailure(testDescription: "no state file", config: oneWidget, state: nil, out: "out", status: 66, message: "cannot read the state"),
        RenderFailure(testDescription: "not JSON", config: oneWidget, state: "{trunc", out: "out", status: 65, message: "is not a flowbridge state"),
        RenderFailure(testDescription: "not a state", config: oneWidget, state: #"{"hello": 1}"#, out: "out", status: 65, message: "is not a flowbridge state"),
        RenderFailure(
            testDescription: "a torn state", config: oneWidget, state: #"{"format":"flowbridge-state","version":1,"readi"#, out: "out",
            status: 65, message: "cannot be used: not a JSON object"),
        RenderFailure(
            testDescription: "a state without readings", config: oneWidget, state: #"{"version": 1, "readings": {}, "totals": {}}"#, out: "out",
            status: 65, message: "holds no reading yet"),
    ]

    /// Each failure says what is wrong, with its exit status, and leaves the state file alone.
    @Test(arguments: failures)
    func renderFailuresAreClear(failure: RenderFailure) throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", failure.config)
        let state = folder.url.appendingPathComponent("state.json").path
        if let text = failure.state { _ = try folder.write("state.json", text) }
        let out = failure.out.map { ["--out", "\(folder.url.path)/\($0)"] } ?? []
        let run = try runFlowbridge(["render", "--config", config, "--state", state] + out)
        #expect(run.status == failure.status)
        #expect(run.err.contains(failure.message), "\(run.err)")
        if let text = failure.state { #expect(try read(state) == text) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted().allSatisfy { ["config.yaml", "state.json"].contains($0) })
    }

    /// Names from the config stay text in the picture, and a widget's name never places a file
    /// outside the folder.
    @Test func namesFromTheConfigAreEscapedAndConfined() throws {
        let folder = TemporaryFolder()
        let config = try folder.write("config.yaml", """
            timezone: UTC
            sources: {grid: {topic: grid/power}}
            widgets:
              "../up/<w>":
                template: flow
                label: 'Tom & Jerry''s <b>"grid"</b>'
                flow: {exchange: {name: '<Grid & "Co">', rate: grid}}
            """)
        let trace = try folder.write("trace.ndjson", traceLine("2026-06-01T12:00:00Z", "grid/power", "-250") + "\n")
        let pictures = folder.url.appendingPathComponent("pictures").path
        let run = try runFlowbridge(["replay", "--config", config, "--svg", pictures, trace])
        #expect(run.status == 0, "\(run.err)")
        let files = try FileManager.default.contentsOfDirectory(atPath: pictures).sorted()
        #expect(files == ["_._up__w_-day-2026-06-01.svg", "_._up__w_.svg"])
        #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("up").path))
        let picture = try read("\(pictures)/_._up__w_.svg")
        #expect(picture.contains(">&lt;Grid &amp; &quot;Co&quot;&gt;</tspan>"))
        #expect(picture.contains(">Tom &amp; Jerry&#39;s &lt;b&gt;&quot;grid&quot;&lt;/b&gt;</text>"))
        #expect(!picture.contains("<b>"))
    }
}

/// A total as the pictures print it (one decimal; the bundled day's totals are rounded to 0.1 kWh).
enum DisplayTotal {
    static func text(_ total: Double) -> String {
        let tenths = Int((total * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}

/// Widgets whose names come out alike as file names each get pictures of their own.
@Suite struct PictureFileNameTests {
    @Test(arguments: [
        (["a b", "a_b"], ["a_b", "a_b-2"]),
        (["a_b-2", "a_b", "a b"], ["a_b-2", "a_b", "a_b-3"]),
        (["Küche", "K_che", "K?che"], ["K_che", "K_che-2", "K_che-3"]),
        (["power", "../power"], ["power", "_._power"]),
    ])
    func widgetsWhoseNamesFoldAlikeGetFilesOfTheirOwn(widgets: [String], files: [String]) {
        let names = PictureFolder.fileNames(of: widgets)
        #expect(widgets.map { names[$0] } == files)
    }
}
