import FlowCore
import Rendering
import Testing

@Suite struct FlowPictureTests {
    /// A node as the picture must show it: its name and its rate, written out by hand.
    struct ShownNode: Sendable {
        var place: String
        var name: String
        var rate: String
        var total: String?
    }

    struct DocumentCase: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var flow: FlowContent
        var shown: [ShownNode]
    }

    static let spec = FlowContent(
        shared: SharedContent(label: "Power", subtitle: "Solar · grid · home", accentColor: "mint"), unit: "W",
        inputs: [FlowNode(name: "Solar", rate: 3200, total: 12.4, icon: "sun.max.fill", color: "yellow")],
        output: FlowNode(name: "Home", rate: 1000, total: 9.8, icon: "house.fill"),
        storage: FlowNode(name: "Battery", rate: 800, level: 76, icon: "battery.75percent", color: "green"),
        exchange: FlowNode(name: "Grid", rate: -1400, total: 3.1, icon: "bolt.fill", color: "cyan"))

    static let documents: [DocumentCase] = [
        DocumentCase(
            testDescription: "the spec's example", flow: spec,
            shown: [
                ShownNode(place: "inputs[0]", name: "Solar", rate: "3200 W", total: "12.4 kWh"),
                ShownNode(place: "output", name: "Home", rate: "1000 W", total: "9.8 kWh"),
                ShownNode(place: "storage", name: "Battery", rate: "800 W"),
                ShownNode(place: "exchange", name: "Grid", rate: "1400 W", total: "3.1 kWh"),
            ]),
        DocumentCase(
            testDescription: "three inputs, no names: the slots' words", flow: FlowContent(
                unit: "W", inputs: [FlowNode(rate: 612.4), FlowNode(rate: 71), FlowNode(rate: 0, total: 0.22)],
                output: FlowNode(rate: 683)),
            shown: [
                ShownNode(place: "inputs[0]", name: "Input 1", rate: "612 W"),
                ShownNode(place: "inputs[1]", name: "Input 2", rate: "71 W"),
                ShownNode(place: "inputs[2]", name: "Input 3", rate: "0 W", total: "0.22 kWh"),
                ShownNode(place: "output", name: "Output", rate: "683 W"),
            ]),
        DocumentCase(
            testDescription: "kW with fractions, no output", flow: FlowContent(
                unit: "kW", inputs: [FlowNode(name: "Wind", rate: 2.35, total: 30)],
                exchange: FlowNode(name: "Mains", rate: -2.35, total: 0)),
            shown: [
                ShownNode(place: "inputs[0]", name: "Wind", rate: "2.4 kW", total: "30.0 kWh"),
                ShownNode(place: "exchange", name: "Mains", rate: "2.4 kW", total: "0.0 kWh"),
            ]),
        DocumentCase(
            testDescription: "a water flow in L/min", flow: FlowContent(
                unit: "L/min", output: FlowNode(name: "Tap", rate: 12, total: 140.5), storage: FlowNode(name: "Tank", rate: -12, level: 40)),
            shown: [
                ShownNode(place: "output", name: "Tap", rate: "12 L/min", total: "140.5 L"),
                ShownNode(place: "storage", name: "Tank", rate: "12 L/min"),
            ]),
    ]

    @Test(arguments: documents)
    func everyNodeAppearsWithItsNameAndRate(document: DocumentCase) throws {
        let svg = try SVGTree.parse(FlowPicture(document.flow, held: []).svg())
        let nodes = svg.all("g", class: "node")
        #expect(nodes.count == document.shown.count)
        for shown in document.shown {
            let node = try #require(nodes.first { $0.attributes["data-place"] == shown.place }, "\(shown.place) is drawn")
            #expect(node.all("text", class: "name").map(\.content) == [shown.name])
            #expect(node.all("text", class: "rate").map(\.content) == [shown.rate])
            #expect(node.all("text", class: "total").map(\.content) == (shown.total.map { [$0] } ?? []))
        }
    }

    struct SignCase: Sendable, CustomTestStringConvertible {
        var slot: FlowSlot
        var rate: Double
        /// nil: no arrow.
        var arrow: (from: String, to: String)?
        var caption: String?
        var testDescription: String { "\(slot.rawValue) \(rate)" }
    }

    static let signs: [SignCase] = [
        SignCase(slot: .exchange, rate: 1400, arrow: ("exchange", "output"), caption: "importing"),
        SignCase(slot: .exchange, rate: -1400, arrow: ("output", "exchange"), caption: "exporting"),
        SignCase(slot: .exchange, rate: 0, arrow: nil, caption: "idle"),
        SignCase(slot: .storage, rate: 800, arrow: ("output", "storage"), caption: "filling"),
        SignCase(slot: .storage, rate: -800, arrow: ("storage", "output"), caption: "draining"),
        SignCase(slot: .storage, rate: 0, arrow: nil, caption: "idle"),
        SignCase(slot: .inputs, rate: 3200, arrow: ("inputs[0]", "output"), caption: nil),
        SignCase(slot: .inputs, rate: 0, arrow: nil, caption: nil),
    ]

    /// The arrow's direction follows the sign, and the drawn arrowhead points at the right node.
    @Test(arguments: signs)
    func arrowDirectionFollowsTheSign(sign: SignCase) throws {
        var flow = FlowContent(unit: "W", output: FlowNode(name: "Home", rate: 500))
        let node = FlowNode(name: "Node", rate: sign.rate)
        switch sign.slot {
        case .inputs: flow.inputs = [node]
        case .exchange: flow.exchange = node
        case .storage: flow.storage = node
        case .output: Issue.record("not a case")
        }
        let picture = FlowPicture(flow, held: [])
        let svg = try SVGTree.parse(picture.svg())
        let arrows = svg.all("g", class: "arrow")
        guard let expected = sign.arrow else {
            #expect(arrows.isEmpty)
            #expect(picture.arrows.isEmpty)
            return
        }
        #expect(picture.arrows.map { "\($0.from)→\($0.to)" } == ["\(expected.from)→\(expected.to)"])
        let arrow = try #require(arrows.first)
        #expect(arrows.count == 1)
        #expect(arrow.attributes["data-from"] == expected.from)
        #expect(arrow.attributes["data-to"] == expected.to)
        // The head's tip is at the edge of the target: nearer to it than to the source.
        let from = try center(of: expected.from, in: picture.layout)
        let to = try center(of: expected.to, in: picture.layout)
        let head = try #require(arrow.all("polygon").first?.points())
        let tip = try #require(head.first)
        func distance(_ point: Point) -> Double { ((tip.x - point.x) * (tip.x - point.x) + (tip.y - point.y) * (tip.y - point.y)).squareRoot() }
        #expect(distance(to) < distance(from))
        #expect(abs(distance(to) - FlowLayout.nodeRadius) < 10)
        let caption = svg.all("g", class: "node").first { $0.attributes["data-place"] == placeName(sign.slot) }?
            .all("text", class: "direction").map(\.content)
        #expect(caption == (sign.caption.map { [$0] } ?? []))
    }

    func placeName(_ slot: FlowSlot) -> String { slot == .inputs ? "inputs[0]" : slot.rawValue }

    func center(of place: String, in layout: FlowLayout) throws -> Point {
        switch place {
        case "output": layout.center(of: .output)
        case "exchange": layout.center(of: .exchange)
        case "storage": layout.center(of: .storage)
        case "inputs[0]": layout.center(of: .input(0))
        default: throw SVGTree.Malformed(description: "no place \(place)")
        }
    }

    /// Without an output node the arrows still meet: at a junction where the home would be.
    @Test func arrowsMeetAtAJunctionWithoutAnOutput() throws {
        let flow = FlowContent(unit: "W", inputs: [FlowNode(rate: 900)], exchange: FlowNode(rate: -900))
        let svg = try SVGTree.parse(FlowPicture(flow, held: []).svg())
        #expect(svg.all("circle", class: "hub").count == 1)
        #expect(svg.all("g", class: "arrow").map { "\($0.attributes["data-from"] ?? "")→\($0.attributes["data-to"] ?? "")" } == [
            "inputs[0]→output", "output→exchange",
        ])
    }

    /// Names come from the user's config: markup characters stay text and the document stays valid.
    @Test(arguments: [
        #"<Solar & "Roof">"#, "Tom's </text><script>alert(1)</script>", "&amp; already escaped", "Süd-Dach ☀️",
        "bell\u{7}and\u{0}nul",
    ])
    func textIsEscaped(name: String) throws {
        let flow = FlowContent(
            shared: SharedContent(label: name, subtitle: name), unit: "W<&>",
            inputs: [FlowNode(name: name, rate: 100)], exchange: FlowNode(name: name, rate: -100, color: name))
        let text = FlowPicture(flow, held: []).svg()
        let svg = try SVGTree.parse(text)
        #expect(svg.all("script").isEmpty)
        let expected = String(String.UnicodeScalarView(name.unicodeScalars.map { $0.value < 0x20 ? "\u{FFFD}" : $0 }))
        #expect(svg.all("text", class: "name").map(\.content) == [expected, expected])
        #expect(svg.all("text", class: "label").map(\.content) == [expected])
        #expect(svg.all("title").map(\.content) == [expected])
        #expect(svg.all("text", class: "rate").map(\.content) == ["100 W<&>", "100 W<&>"])
    }

    @Test(arguments: [(0.0, "0%"), (12.5, "13%"), (76, "76%"), (100, "100%")])
    func batteryFillFollowsTheLevel(level: Double, text: String) throws {
        let flow = FlowContent(unit: "W", storage: FlowNode(name: "Battery", rate: 300, level: level, color: "green"))
        let svg = try SVGTree.parse(FlowPicture(flow, held: []).svg())
        let bar = try #require(svg.all("g", class: "level").first)
        let track = try #require(bar.all("rect", class: "level-track").first?.number("width"))
        let fill = try #require(bar.all("rect", class: "level-fill").first?.number("width"))
        #expect(abs(fill / track - level / 100) < 0.001)
        #expect(bar.texts == [text])
    }

    /// Only the storage draws a level (the spec ignores it elsewhere), and a storage without one has no bar.
    @Test func onlyTheStorageDrawsALevel() throws {
        let withoutLevel = FlowContent(unit: "W", output: FlowNode(rate: 1, level: 50), storage: FlowNode(rate: 1))
        #expect(try SVGTree.parse(FlowPicture(withoutLevel, held: []).svg()).all("g", class: "level").isEmpty)
    }

    /// A node the engine marks held (a held reading of a silent meter, sent gray) is drawn pale and
    /// dashed, captioned "held"; its arrow is gray and dashed too. Every slot, and only the held one.
    @Test(arguments: [FlowSlot.inputs, .output, .storage, .exchange])
    func aHeldNodeIsDrawnStale(slot: FlowSlot) throws {
        var flow = FlowContent(
            unit: "W", inputs: [FlowNode(name: "Solar", rate: 2000, color: "yellow")], output: FlowNode(name: "Home", rate: 600),
            storage: FlowNode(name: "Battery", rate: 900, level: 50, color: "green"), exchange: FlowNode(name: "Grid", rate: -500, color: "cyan"))
        switch slot {
        case .inputs: flow.inputs![0].color = "gray"
        case .output: flow.output!.color = "gray"
        case .storage: flow.storage!.color = "gray"
        case .exchange: flow.exchange!.color = "gray"
        }
        let place: NodePlace = switch slot {
        case .inputs: .input(0)
        case .output: .output
        case .storage: .storage
        case .exchange: .exchange
        }
        let svg = try SVGTree.parse(FlowPicture(flow, held: [place]).svg())
        for node in svg.all("g", class: "node") {
            let isStale = node.attributes["data-place"] == placeName(slot)
            #expect(node.attributes["data-stale"] == (isStale ? "true" : "false"))
            #expect(node.classes.contains("stale") == isStale)
            let circle = try #require(node.all("circle").first)
            #expect((circle.attributes["stroke-dasharray"] != nil) == isStale)
            #expect((circle.attributes["stroke"] == "#8e8e93") == isStale)
            #expect(node.all("text", class: "direction").map(\.content).contains("held") == isStale)
        }
        for arrow in svg.all("g", class: "arrow") {
            let isStale = [arrow.attributes["data-from"], arrow.attributes["data-to"]].contains(placeName(slot)) && slot != .output
            #expect(arrow.classes.contains("stale") == isStale)
            #expect((arrow.all("line").first?.attributes["stroke-dasharray"] != nil) == isStale)
        }
    }

    /// An arrow's thickness grows with its flow.
    @Test func thickerArrowsForLargerFlows() throws {
        let svg = try SVGTree.parse(FlowPicture(Self.spec, held: []).svg())
        let widths = svg.all("g", class: "arrow").map { $0.all("line").first?.number("stroke-width") ?? 0 }
        // Solar 3200 W, grid 1400 W, battery 800 W, in that order.
        #expect(svg.all("g", class: "arrow").map { $0.attributes["data-rate"] } == ["3200", "1400", "800"])
        #expect(widths == widths.sorted(by: >) && Set(widths).count == 3)
    }

    /// Self-contained: nothing is fetched (no links, images, scripts, external styles or fonts).
    @Test(arguments: documents)
    func thePictureIsSelfContained(document: DocumentCase) throws {
        let text = FlowPicture(document.flow, held: []).svg()
        let svg = try SVGTree.parse(text)
        for forbidden in ["image", "script", "style", "use", "foreignObject", "a", "link"] { #expect(svg.all(forbidden).isEmpty) }
        #expect(!text.contains("href"))
        #expect(!text.contains("url("))
        #expect(!text.contains("@import"))
        #expect(svg.number("width") == FlowLayout.width)
        #expect(svg.attributes["viewBox"] == "0 0 560 \(Int(FlowPicture(document.flow, held: []).layout.height))")
    }

    @Test func anEmptyFlowSaysSo() throws {
        let svg = try SVGTree.parse(FlowPicture(FlowContent(shared: SharedContent(label: "Power")), held: []).svg())
        #expect(svg.texts.contains("No readings yet"))
        #expect(svg.all("g", class: "node").isEmpty)
    }
}
