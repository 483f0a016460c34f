import FlowCore

/// The frame every widget picture shares: a rounded card in the content's background color (white
/// by default) with its label and subtitle at the top, and the colors the rest is drawn in. The
/// card is opaque, so the picture reads the same on a light and a dark page.
struct Card {
    var svg: SVGWriter
    let style: Style

    struct Style {
        let background: WidgetColor
        /// The content's text color, else whatever reads on the background.
        let text: WidgetColor
        /// Secondary text: the text color halfway to the background.
        let paleText: WidgetColor
        let accent: WidgetColor?
    }

    init(shared: SharedContent, width: Double, height: Double, fallbackTitle: String) {
        let background = WidgetColor(shared.backgroundColor) ?? .white
        let text = WidgetColor(shared.textColor) ?? background.readableText
        style = Style(background: background, text: text, paleText: text.mixed(with: background, amount: 0.45), accent: WidgetColor(shared.accentColor))
        let accent = style.accent
        let paleText = style.paleText
        svg = SVGWriter(width: width, height: height, title: shared.label ?? fallbackTitle)
        svg.element(
            "rect",
            [("x", "1"), ("y", "1"), ("width", SVGWriter.number(width - 2)), ("height", SVGWriter.number(height - 2)), ("rx", "22"),
             ("fill", background.hex), ("stroke", WidgetColor.hairline.hex), ("stroke-width", "1.5")])
        var left = 26.0
        if let accent, shared.label != nil {
            svg.element("circle", [("class", "accent"), ("cx", "32"), ("cy", "32"), ("r", "6"), ("fill", accent.onLight.hex)])
            left = 46
        }
        if let label = shared.label {
            svg.label(label, x: left, y: 39, size: 20, maxWidth: width - left - 26, anchor: "start", weight: "700", fill: text.hex, classes: "label")
        }
        if let subtitle = shared.subtitle {
            svg.label(subtitle, x: 26, y: 62, size: 13, maxWidth: width - 52, anchor: "start", fill: paleText.hex, classes: "subtitle")
        }
    }

    /// Where the content below the header may start: under the subtitle, else the label.
    static func top(below shared: SharedContent) -> Double {
        shared.subtitle != nil ? 74 : shared.label != nil ? 52 : 20
    }

    mutating func finish() -> String { svg.finish() }
}
