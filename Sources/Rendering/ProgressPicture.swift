import FlowCore
import FoundationEssentials

/// An SVG picture of a progress widget's document (`spec/progress-template.txt`): the label and
/// subtitle, the value as a percentage above a bar filled to it, and under the bar the first three
/// stat rows, or the trend badge when there are none (as the large widget family draws them).
public struct ProgressPicture: Sendable {
    public static let width = 400.0
    /// The spec draws the first 3 stat rows; the wire carries up to 6.
    public static let drawnRows = 3

    public let progress: ProgressContent
    /// The fraction drawn, 0…1.
    public let fraction: Double

    /// `at` places a self-advancing window (`start_date` … `end_date`) the way current widget builds
    /// do: the bar follows the clock, and reads 100% once the window has ended. Without `at`, or
    /// without both dates, the picture shows `value`.
    public init(_ progress: ProgressContent, at now: Date? = nil) {
        self.progress = progress
        fraction = Self.fraction(of: progress, at: now)
    }

    static func fraction(of progress: ProgressContent, at now: Date?) -> Double {
        if let now, let start = progress.startDate.flatMap(RFC3339.parse), let end = progress.endDate.flatMap(RFC3339.parse),
            start < end
        {
            return min(1, max(0, now.timeIntervalSince(start) / end.timeIntervalSince(start)))
        }
        guard let value = progress.value, value.isFinite else { return 0 }
        return min(1, max(0, value))
    }

    var rows: ArraySlice<StatRow> { (progress.statRows ?? []).prefix(Self.drawnRows) }
    var trend: ProgressContent.Trend? { rows.isEmpty ? progress.trend : nil }

    public func svg() -> String {
        let barY = Card.top(below: progress.shared) + 58
        let below = barY + 16
        let height = below + (rows.isEmpty ? (trend == nil ? 26 : 68) : 22 + Double(rows.count) * 30)
        var card = Card(shared: progress.shared, width: Self.width, height: height, fallbackTitle: "Progress")
        let style = card.style
        let accent = style.accent ?? WidgetColor.slotDefault(.output)
        let inner = Self.width - 52
        card.svg.group([("class", "progress"), ("data-fraction", SVGWriter.number(fraction))]) { svg in
            svg.label(
                DisplayNumber.percent(fraction), x: 26, y: barY - 14, size: 36, anchor: "start", weight: "700", fill: style.text.hex,
                classes: "percent")
            svg.element(
                "rect",
                [("class", "bar-track"), ("x", "26"), ("y", SVGWriter.number(barY)), ("width", SVGWriter.number(inner)), ("height", "16"),
                 ("rx", "8"), ("fill", style.text.mixed(with: style.background, amount: 0.88).hex)])
            svg.element(
                "rect",
                [("class", "bar-fill"), ("x", "26"), ("y", SVGWriter.number(barY)), ("width", SVGWriter.number(inner * fraction)),
                 ("height", "16"), ("rx", "8"), ("fill", accent.onLight.hex)])
        }
        for (index, row) in rows.enumerated() {
            let y = below + 38 + Double(index) * 30
            card.svg.group([("class", "stat-row")]) { svg in
                if index > 0 {
                    svg.element(
                        "line",
                        [("x1", "26"), ("y1", SVGWriter.number(y - 20)), ("x2", SVGWriter.number(26 + inner)), ("y2", SVGWriter.number(y - 20)),
                         ("stroke", WidgetColor.hairline.hex)])
                }
                svg.label(row.label, x: 26, y: y, size: 14, maxWidth: inner * 0.5, anchor: "start", fill: style.paleText.hex, classes: "stat-label")
                let value = row.unit.map { $0.isEmpty ? row.value : "\(row.value) \($0)" } ?? row.value
                svg.label(value, x: 26 + inner, y: y, size: 14, maxWidth: inner * 0.46, anchor: "end", weight: "600", fill: style.text.hex, classes: "stat-value")
            }
        }
        if let trend { drawTrend(trend, at: Point(x: 26, y: below + 18), on: &card) }
        return card.finish()
    }

    /// A pill with a triangle (drawn, so no font needs the arrow glyphs) and the word.
    private func drawTrend(_ trend: ProgressContent.Trend, at corner: Point, on card: inout Card) {
        let style = card.style
        let x = corner.x
        let y = corner.y
        let glyph: [Point] =
            switch trend {
            case .up: [Point(x: x + 12, y: y + 19), Point(x: x + 24, y: y + 19), Point(x: x + 18, y: y + 9)]
            case .down: [Point(x: x + 12, y: y + 9), Point(x: x + 24, y: y + 9), Point(x: x + 18, y: y + 19)]
            case .flat: [Point(x: x + 13, y: y + 8), Point(x: x + 13, y: y + 20), Point(x: x + 24, y: y + 14)]
            }
        card.svg.group([("class", "trend"), ("data-trend", trend.rawValue)]) { svg in
            svg.element(
                "rect",
                [("x", SVGWriter.number(x)), ("y", SVGWriter.number(y)), ("width", "84"), ("height", "28"), ("rx", "14"),
                 ("fill", style.text.mixed(with: style.background, amount: 0.9).hex)])
            svg.element("polygon", [("points", SVGWriter.points(glyph)), ("fill", style.text.hex)])
            svg.label(trend.rawValue, x: x + 32, y: y + 19, size: 14, anchor: "start", weight: "600", fill: style.text.hex)
        }
    }
}

/// The picture of any widget document.
public enum WidgetPicture {
    /// The SVG text of `content`, `held` what of it the engine marks held. `at` is the moment
    /// shown (it places a progress window).
    public static func svg(_ content: WidgetContent, held: HeldMark, at now: Date? = nil) -> String {
        switch content {
        case .flow(let flow): FlowPicture(flow, held: held.nodes).svg()
        case .progress(let progress): ProgressPicture(progress, at: now).svg()
        }
    }
}
