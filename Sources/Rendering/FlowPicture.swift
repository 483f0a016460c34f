import FlowCore

/// Which way something flows between a node and the home, read from the signs
/// (`spec/flow-template.txt`): inputs always toward the home; the exchange toward it while
/// importing (+) and away while exporting (−); the storage away from the home while filling (+)
/// and toward it while draining (−). A rate of 0 is no flow, and no arrow.
public struct FlowArrow: Sendable, Equatable {
    public var from: NodePlace
    public var to: NodePlace
    /// The size of the flow (always ≥ 0; the direction is `from` → `to`).
    public var rate: Double
    /// The node it belongs to shows a held reading: drawn as such.
    public var isHeld: Bool

    public init(from: NodePlace, to: NodePlace, rate: Double, isHeld: Bool) {
        self.from = from
        self.to = to
        self.rate = rate
        self.isHeld = isHeld
    }

    /// The arrows of a document, inputs first, then the exchange and the storage; `held` are the
    /// places the engine marks held.
    public static func arrows(of flow: FlowContent, held: Set<NodePlace>) -> [FlowArrow] {
        var arrows: [FlowArrow] = []
        for (index, node) in (flow.inputs ?? []).enumerated() {
            if let rate = node.rate, rate > 0 {
                arrows.append(FlowArrow(from: .input(index), to: .output, rate: rate, isHeld: held.contains(.input(index))))
            }
        }
        // + means "toward the home" on the exchange and "away from it" on the storage.
        for (place, node, inward) in [(NodePlace.exchange, flow.exchange, 1.0), (.storage, flow.storage, -1.0)] {
            guard let node, let rate = node.rate, rate != 0 else { continue }
            let toHome = rate * inward > 0
            arrows.append(
                FlowArrow(from: toHome ? place : .output, to: toHome ? .output : place, rate: abs(rate), isHeld: held.contains(place)))
        }
        return arrows
    }
}

/// Where the nodes of a flow picture sit: the inputs in a row at the top, the home (the output,
/// or a junction where there is none) in the middle below them, the exchange to its left and the
/// storage to its right, the way energy-flow cards are usually drawn.
public struct FlowLayout: Sendable, Equatable {
    public static let width = 560.0
    public static let nodeRadius = 48.0
    /// The junction drawn for the home when the document has no output.
    public static let hubRadius = 7.0
    static let inputsY = 156.0

    public let inputCount: Int
    public let hasOutput: Bool

    public init(_ flow: FlowContent) {
        inputCount = flow.inputs?.count ?? 0
        hasOutput = flow.output != nil
    }

    /// The row of the home, the exchange and the storage: below the inputs, or at the top without them.
    var middleY: Double { inputCount > 0 ? 326 : 172 }
    public var height: Double { middleY + 118 }

    public func center(of place: NodePlace) -> Point {
        switch place {
        case .input(let index):
            Point(x: Self.width * Double(index + 1) / Double(inputCount + 1), y: Self.inputsY)
        case .output: Point(x: Self.width / 2, y: middleY)
        case .exchange: Point(x: 96, y: middleY)
        case .storage: Point(x: Self.width - 96, y: middleY)
        }
    }

    public func radius(of place: NodePlace) -> Double {
        place == .output && !hasOutput ? Self.hubRadius : Self.nodeRadius
    }
}

/// An SVG picture of a flow widget's document: a card with the label and subtitle, a circle per
/// node with its name, rate (with the content's unit), today's total and, on the storage, the level
/// as a fill bar, and an arrow per flow whose direction follows the signs. Node colors are the
/// document's; a node the engine marks held (its meter is silent; the widget is sent it gray) is
/// drawn dashed and pale, its arrow too. A node the user colors gray is only gray.
public struct FlowPicture: Sendable {
    public let flow: FlowContent
    /// The places the engine marks held (`HeldMark.nodes`).
    public let held: Set<NodePlace>
    public let layout: FlowLayout
    public let arrows: [FlowArrow]

    public init(_ flow: FlowContent, held: Set<NodePlace>) {
        self.flow = flow
        self.held = held
        layout = FlowLayout(flow)
        arrows = FlowArrow.arrows(of: flow, held: held)
    }

    var nodes: [(place: NodePlace, node: FlowNode)] { flow.nodes }

    public func svg() -> String {
        var card = Card(shared: flow.shared, width: FlowLayout.width, height: layout.height, fallbackTitle: "Flow")
        let style = card.style
        let nodes = self.nodes
        if nodes.isEmpty {
            card.svg.label("No readings yet", x: FlowLayout.width / 2, y: layout.height / 2, size: 15, fill: style.paleText.hex)
            return card.finish()
        }
        if !layout.hasOutput {
            let hub = layout.center(of: .output)
            card.svg.element(
                "circle",
                [("class", "hub"), ("cx", SVGWriter.number(hub.x)), ("cy", SVGWriter.number(hub.y)),
                 ("r", SVGWriter.number(FlowLayout.hubRadius)), ("fill", style.paleText.hex)])
        }
        let largest = arrows.map(\.rate).max() ?? 0
        for arrow in arrows { draw(arrow, largest: largest, on: &card) }
        for (place, node) in nodes { draw(node, at: place, on: &card) }
        return card.finish()
    }

    /// The color a node is drawn in: its own, else its slot's.
    func color(of place: NodePlace) -> WidgetColor {
        let node = nodes.first { $0.place == place }?.node
        return WidgetColor(node?.color) ?? WidgetColor.slotDefault(place)
    }

    private func draw(_ arrow: FlowArrow, largest: Double, on card: inout Card) {
        let from = layout.center(of: arrow.from)
        let to = layout.center(of: arrow.to)
        let length = from.distance(to: to)
        let unit = Point(x: (to.x - from.x) / length, y: (to.y - from.y) / length)
        func along(_ start: Point, _ distance: Double) -> Point {
            Point(x: start.x + unit.x * distance, y: start.y + unit.y * distance)
        }
        // Thickness grows with the flow (by area, so a tenth of the largest flow is still visible).
        let width = 2.5 + 5 * (largest > 0 ? (arrow.rate / largest).squareRoot() : 0)
        let head = 8 + width * 1.6
        let start = along(from, layout.radius(of: arrow.from) + 6)
        let tip = along(to, -(layout.radius(of: arrow.to) + 6))
        let base = along(tip, -head)
        let side = Point(x: -unit.y * head * 0.6, y: unit.x * head * 0.6)
        // The color of the node at the far end from the home.
        let colored = (arrow.from == .output ? arrow.to : arrow.from)
        let paint = arrow.isHeld ? WidgetColor.gray.hex : color(of: colored).onLight.hex
        card.svg.group(
            [("class", arrow.isHeld ? "arrow stale" : "arrow"), ("data-from", arrow.from.description),
             ("data-to", arrow.to.description), ("data-rate", SVGWriter.number(arrow.rate))]
        ) { svg in
            var line: [(String, String)] = [
                ("x1", SVGWriter.number(start.x)), ("y1", SVGWriter.number(start.y)),
                ("x2", SVGWriter.number(base.x + unit.x)), ("y2", SVGWriter.number(base.y + unit.y)),
                ("stroke", paint), ("stroke-width", SVGWriter.number(width)),
            ]
            // Dashes with square ends: round caps would join them into a solid line.
            line += arrow.isHeld
                ? [("stroke-dasharray", "\(SVGWriter.number(width * 1.6 + 3)) \(SVGWriter.number(width + 4))")]
                : [("stroke-linecap", "round")]
            svg.element("line", line)
            let head = [tip, Point(x: base.x + side.x, y: base.y + side.y), Point(x: base.x - side.x, y: base.y - side.y)]
            svg.element("polygon", [("points", SVGWriter.points(head)), ("fill", paint)])
        }
    }

    private func draw(_ node: FlowNode, at place: NodePlace, on card: inout Card) {
        let center = layout.center(of: place)
        let radius = FlowLayout.nodeRadius
        let isHeld = held.contains(place)
        let own = color(of: place)
        let style = card.style
        let ink = isHeld ? style.paleText : style.text
        card.svg.group(
            [("class", isHeld ? "node stale" : "node"), ("data-place", place.description), ("data-stale", isHeld ? "true" : "false")]
        ) { svg in
            var circle: [(String, String)] = [
                ("cx", SVGWriter.number(center.x)), ("cy", SVGWriter.number(center.y)), ("r", SVGWriter.number(radius)),
                ("fill", (isHeld ? WidgetColor.gray : own).mixed(with: style.background, amount: isHeld ? 0.88 : 0.82).hex),
                ("stroke", isHeld ? WidgetColor.gray.hex : own.onLight.hex), ("stroke-width", "3"),
            ]
            if isHeld { circle.append(("stroke-dasharray", "7 5")) }
            svg.element("circle", circle)

            let inner = radius * 1.6
            if let caption = isHeld ? "held" : direction(of: node, at: place) {
                svg.label(caption, x: center.x, y: center.y - 17, size: 11, maxWidth: inner * 0.8, fill: style.paleText.hex, classes: "direction")
            }
            let rateText = node.rate.map { DisplayNumber.rate($0, unit: flow.unit) } ?? "–"
            svg.label(rateText, x: center.x, y: center.y + 6, size: 18, maxWidth: inner, weight: "700", fill: ink.hex, classes: "rate")
            if let total = node.total {
                let text = DisplayNumber.total(total, unit: DisplayNumber.totalUnit(forRateUnit: flow.unit))
                svg.label(text, x: center.x, y: center.y + 24, size: 11, maxWidth: inner * 0.85, fill: style.paleText.hex, classes: "total")
            }
            // Input names sit above their circle (the arrows leave below), the others below.
            let name = node.name ?? Self.defaultName(of: place, inputCount: layout.inputCount)
            let nameWidth = place.slot == .inputs ? FlowLayout.width / Double(layout.inputCount + 1) - 12 : 176
            let above = place.slot == .inputs
            let nameBottom = svg.wrappedLabel(
                name, x: center.x, baseline: above ? center.y - radius - 12 : center.y + radius + 21, growsUp: above, size: 14,
                maxWidth: nameWidth, weight: "600", fill: ink.hex, classes: "name")
            if place == .storage, let level = node.level {
                drawLevel(min(100, max(0, level)), below: Point(x: center.x, y: nameBottom + 9), color: isHeld ? .gray : own, on: &svg, style: style)
            }
        }
    }

    /// The storage's level: a bar filled to the level, and the percentage beside it.
    private func drawLevel(_ level: Double, below top: Point, color: WidgetColor, on svg: inout SVGWriter, style: Card.Style) {
        let width = 84.0
        let height = 12.0
        let left = top.x - width / 2
        svg.group([("class", "level"), ("data-level", SVGWriter.number(level))]) { svg in
            svg.element(
                "rect",
                [("class", "level-track"), ("x", SVGWriter.number(left)), ("y", SVGWriter.number(top.y)), ("width", SVGWriter.number(width)),
                 ("height", SVGWriter.number(height)), ("rx", "4"), ("fill", style.background.hex), ("stroke", WidgetColor.gray.hex),
                 ("stroke-width", "1.5")])
            svg.element(
                "rect",
                [("class", "level-fill"), ("x", SVGWriter.number(left)), ("y", SVGWriter.number(top.y)),
                 ("width", SVGWriter.number(width * level / 100)), ("height", SVGWriter.number(height)), ("rx", "4"),
                 ("fill", color.onLight.hex)])
            svg.label(
                DisplayNumber.fixed(level, decimals: 0) + "%", x: left + width + 6, y: top.y + height - 1.5, size: 12,
                anchor: "start", weight: "600", fill: style.text.hex)
        }
    }

    /// What the sign of a two-way node means, in the spec's words; nil for one-way nodes.
    func direction(of node: FlowNode, at place: NodePlace) -> String? {
        guard let rate = node.rate else { return nil }
        switch place {
        case .exchange: return rate > 0 ? "importing" : rate < 0 ? "exporting" : "idle"
        case .storage: return rate > 0 ? "filling" : rate < 0 ? "draining" : "idle"
        case .input, .output: return nil
        }
    }

    /// A node's name when the document gives none: its slot.
    static func defaultName(of place: NodePlace, inputCount: Int) -> String {
        switch place {
        case .input(let index): inputCount > 1 ? "Input \(index + 1)" : "Input"
        case .output: "Output"
        case .storage: "Storage"
        case .exchange: "Exchange"
        }
    }
}
