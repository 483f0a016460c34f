import FlowCore
import FoundationEssentials
import Rendering
import TestSupport
import Testing

/// "Held" is what the engine marks, not a color: through the engine, a node (or bar) the user colors
/// gray while its meter is live is neither summarized "(held)" nor drawn dashed, and one that shows
/// a held reading of a silent meter is, whatever its color. The widget is still sent the gray.
@Suite struct HeldMarkTests {
    /// 14:00:00 UTC.
    static let t0 = 1_780_063_200.0

    struct NodeCase: Sendable, CustomTestStringConvertible {
        var testDescription: String
        /// The Solar node's configured color.
        var color: String?
        var silent: Bool
        var whenStale: StaleBehavior = .hold
        var staleMarker = true
        /// Solar is marked held: "(held)" in the summary, dashed in the picture.
        var held: Bool
        /// The color the widget is sent for Solar.
        var sent: String?
    }

    static let nodeCases: [NodeCase] = [
        NodeCase(testDescription: "colored gray, its meter live", color: "gray", silent: false, held: false, sent: "gray"),
        NodeCase(testDescription: "colored gray, its meter silent", color: "gray", silent: true, held: true, sent: "gray"),
        NodeCase(testDescription: "colored yellow, its meter silent", color: "yellow", silent: true, held: true, sent: "gray"),
        NodeCase(testDescription: "no color, its meter silent", color: nil, silent: true, held: true, sent: "gray"),
        NodeCase(testDescription: "colored yellow, its meter live", color: "yellow", silent: false, held: false, sent: "yellow"),
        NodeCase(
            testDescription: "colored gray, silent with when_stale zero: 0 W, nothing held", color: "gray", silent: true,
            whenStale: .zero, held: false, sent: "gray"),
        NodeCase(
            testDescription: "colored yellow, silent without the stale marker", color: "yellow", silent: true, staleMarker: false,
            held: false, sent: "yellow"),
    ]

    /// A Solar input and a Grid exchange whose meters go stale after 60 s; every change pushed.
    static func config(solar: NodeConfig, staleMarker: Bool) -> FlowConfig {
        var grid = node("grid", name: "Grid")
        grid.color = "cyan"
        return FlowConfig(
            sources: [source("solar", "solar", staleAfter: 60), source("grid", "grid", staleAfter: 60)],
            widgets: [FlowWidgetConfig(name: "power", inputs: [solar], exchange: grid, policy: eager, staleMarker: staleMarker)])
    }

    /// The node group of a picture's place (`inputs[0]`).
    static func nodeGroup(_ place: String, in svg: SVGTree) throws -> SVGTree {
        try #require(svg.all("g", class: "node").first { $0.attributes["data-place"] == place })
    }

    @Test(arguments: nodeCases)
    func aNodeIsHeldByTheMarkNotByItsColor(_ test: NodeCase) throws {
        var solar = node("solar", name: "Solar", whenStale: test.whenStale)
        solar.color = test.color
        var home = EngineHarness(Self.config(solar: solar, staleMarker: test.staleMarker))
        home.send("solar", "2000", at: Self.t0)
        home.send("grid", "-500", at: Self.t0)
        if !test.silent { home.send("solar", "2100", at: Self.t0 + 120) }
        home.send("grid", "-400", at: Self.t0 + 120)
        let (at, push) = try #require(home.pushes(of: "power").last)
        #expect(at == Date(timeIntervalSince1970: Self.t0 + 120))
        guard case .flow(let flow) = push.document else {
            Issue.record("not a flow: \(push.document)")
            return
        }
        #expect(flow.inputs?.first?.color == test.sent, "what the widget is sent")
        #expect(push.held == HeldMark(nodes: test.held ? [.input(0)] : []))

        let summary = PushSummary.line(widget: "power", document: push.document, held: push.held, at: at, zone: FixedOffsetZone())
        #expect(summary.contains("(held)") == test.held, "\(summary)")

        let picture = try SVGTree.parse(FlowPicture(flow, held: push.held.nodes).svg())
        let group = try Self.nodeGroup("inputs[0]", in: picture)
        #expect(group.attributes["data-stale"] == (test.held ? "true" : "false"))
        #expect((try #require(group.all("circle").first).attributes["stroke-dasharray"] != nil) == test.held)
        #expect(try Self.nodeGroup("exchange", in: picture).attributes["data-stale"] == "false")

        // `render` draws the engine's current documents: they carry the same mark.
        #expect(home.engine.currentDocuments(at: at)["power"]?.held == push.held)
    }

    /// The mark names a node by its place in the document: with the first input cleared (its
    /// meter silent, `when_stale: clear`), the held second input is the document's first.
    @Test func aHeldInputIsMarkedAtItsPlaceInTheDocument() throws {
        let roof = node("roof", name: "Roof", whenStale: .clear)
        let balcony = node("balcony", name: "Balcony")
        var home = EngineHarness(FlowConfig(
            sources: [source("roof", "roof", staleAfter: 60), source("balcony", "balcony", staleAfter: 60), source("grid", "grid")],
            widgets: [FlowWidgetConfig(name: "power", inputs: [roof, balcony], exchange: node("grid", name: "Grid"), policy: eager)]))
        home.send("roof", "1500", at: Self.t0)
        home.send("balcony", "300", at: Self.t0)
        home.send("grid", "-200", at: Self.t0)
        home.send("grid", "-100", at: Self.t0 + 120)
        let (_, push) = try #require(home.pushes(of: "power").last)
        guard case .flow(let flow) = push.document else {
            Issue.record("not a flow: \(push.document)")
            return
        }
        #expect(flow.inputs?.map(\.name) == ["Balcony"])
        #expect(push.held == HeldMark(nodes: [.input(0)]))
        let picture = try SVGTree.parse(FlowPicture(flow, held: push.held.nodes).svg())
        #expect(try Self.nodeGroup("inputs[0]", in: picture).attributes["data-stale"] == "true")
    }

    struct BarCase: Sendable, CustomTestStringConvertible {
        var testDescription: String
        /// The bar's configured accent color.
        var accent: String
        var silent: Bool
        var held: Bool
    }

    /// A battery bar: the same for a progress widget's accent color.
    @Test(arguments: [
        BarCase(testDescription: "accent gray, the battery's meter live", accent: "gray", silent: false, held: false),
        BarCase(testDescription: "accent gray, the battery's meter silent", accent: "gray", silent: true, held: true),
        BarCase(testDescription: "accent green, the battery's meter silent", accent: "green", silent: true, held: true),
        BarCase(testDescription: "accent green, the battery's meter live", accent: "green", silent: false, held: false),
    ])
    func aBarIsHeldByTheMarkNotByItsColor(_ test: BarCase) throws {
        let bar = ProgressWidgetConfig(
            name: "battery", shared: SharedContent(label: "Battery", accentColor: test.accent),
            measure: .battery(BatteryGauge(rate: .sum([RateTerm(source: "battery")]), level: "soc")), policy: eager)
        var home = EngineHarness(FlowConfig(
            sources: [source("battery", "bat", staleAfter: 60), source("soc", "soc", unit: .percent)], widgets: [], progressWidgets: [bar]))
        home.send("soc", "70", at: Self.t0)
        home.send("bat", "800", at: Self.t0)
        if !test.silent { home.send("bat", "900", at: Self.t0 + 120) }
        home.send("soc", "71", at: Self.t0 + 120)
        let (at, push) = try #require(home.pushes(of: "battery").last)
        guard case .progress(let progress) = push.document else {
            Issue.record("not a bar: \(push.document)")
            return
        }
        #expect(progress.shared.accentColor == (test.silent ? "gray" : test.accent), "what the widget is sent")
        #expect(push.held == HeldMark(bar: test.held))
        let summary = PushSummary.line(widget: "battery", document: push.document, held: push.held, at: at, zone: FixedOffsetZone())
        #expect(summary.contains("(held)") == test.held, "\(summary)")
        #expect(home.engine.currentDocuments(at: at)["battery"]?.held == push.held)
    }
}
