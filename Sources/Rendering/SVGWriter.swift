/// Writes SVG text. Every text and attribute value goes through `escape`, because names, labels and
/// units come from the user's config: a node named `<Solar & "Roof">` must stay text, never markup.
///
/// The pictures are self-contained: no external fonts, images, styles or scripts, so a browser, an
/// `<img>` on GitHub and a file viewer all show the same thing.
struct SVGWriter {
    private(set) var text = ""

    /// Starts a document of `width` × `height` px, with a `<title>` for screen readers and tab names.
    init(width: Double, height: Double, title: String) {
        let size = "\(Self.number(width)) \(Self.number(height))"
        text = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Self.number(width))" height="\(Self.number(height))" \
            viewBox="0 0 \(size)" role="img" font-family="\(Self.fontFamily)">
            <title>\(Self.escape(title))</title>

            """
    }

    /// System fonts only: nothing is fetched, and every platform has one of these.
    static let fontFamily = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica Neue, DejaVu Sans, Arial, sans-serif"

    /// The finished document.
    mutating func finish() -> String {
        text += "</svg>\n"
        return text
    }

    /// An element without content: `<circle cx="1" …/>`.
    mutating func element(_ name: String, _ attributes: [(String, String)]) {
        text += "<\(name)\(Self.attributeText(attributes))/>\n"
    }

    /// An element whose content is text, escaped.
    mutating func element(_ name: String, _ attributes: [(String, String)], text content: String) {
        text += "<\(name)\(Self.attributeText(attributes))>\(Self.escape(content))</\(name)>\n"
    }

    /// A group around what `body` writes.
    mutating func group(_ attributes: [(String, String)], _ body: (inout SVGWriter) -> Void) {
        text += "<g\(Self.attributeText(attributes))>\n"
        body(&self)
        text += "</g>\n"
    }

    /// A line of text at (`x`, `y`). When the text would be wider than `maxWidth` (an estimate: the
    /// picture cannot measure glyphs), it is squeezed to fit instead of running into its neighbours.
    mutating func label(
        _ content: String, x: Double, y: Double, size: Double, maxWidth: Double? = nil, anchor: String = "middle",
        weight: String? = nil, fill: String, classes: String? = nil
    ) {
        var attributes: [(String, String)] = []
        if let classes { attributes.append(("class", classes)) }
        attributes += [("x", Self.number(x)), ("y", Self.number(y)), ("font-size", Self.number(size)), ("fill", fill)]
        if anchor != "start" { attributes.append(("text-anchor", anchor)) }
        if let weight { attributes.append(("font-weight", weight)) }
        if let maxWidth, Self.estimatedWidth(content, size: size, bold: weight != nil) > maxWidth {
            attributes += [("textLength", Self.number(maxWidth)), ("lengthAdjust", "spacingAndGlyphs")]
        }
        element("text", attributes, text: content)
    }

    /// Text on up to two lines: a text too wide for one is broken at the space nearest its middle
    /// (a name of 32 characters under a node), each line squeezed to `maxWidth` if still too wide.
    /// The lines are `<tspan>`s of one `<text>`. The first line sits on `baseline`, or, when the
    /// text `growsUp` (a label above what it names), the last. Returns the last line's baseline.
    @discardableResult
    mutating func wrappedLabel(
        _ content: String, x: Double, baseline: Double, growsUp: Bool = false, size: Double, maxWidth: Double, weight: String? = nil,
        fill: String, classes: String
    ) -> Double {
        let bold = weight != nil
        var lines = [content]
        var size = size
        if Self.estimatedWidth(content, size: size, bold: bold) > maxWidth {
            size = (size * 0.86).rounded()
            let words = content.split(separator: " ", omittingEmptySubsequences: false)
            if words.count > 1 {
                let split = (1..<words.count).min { a, b in
                    max(words[..<a].joined(separator: " ").count, words[a...].joined(separator: " ").count)
                        < max(words[..<b].joined(separator: " ").count, words[b...].joined(separator: " ").count)
                }!
                lines = [words[..<split].joined(separator: " "), words[split...].joined(separator: " ")]
            }
        }
        let lineHeight = (size * 1.2).rounded()
        let extra = lineHeight * Double(lines.count - 1)
        let first = growsUp ? baseline - extra : baseline
        var attributes: [(String, String)] = [
            ("class", classes), ("x", Self.number(x)), ("y", Self.number(first)),
            ("font-size", Self.number(size)), ("fill", fill), ("text-anchor", "middle"),
        ]
        if let weight { attributes.append(("font-weight", weight)) }
        text += "<text\(Self.attributeText(attributes))>"
        for (index, line) in lines.enumerated() {
            var span: [(String, String)] = [("x", Self.number(x)), ("dy", index == 0 ? "0" : Self.number(lineHeight))]
            if Self.estimatedWidth(line, size: size, bold: bold) > maxWidth {
                span += [("textLength", Self.number(maxWidth)), ("lengthAdjust", "spacingAndGlyphs")]
            }
            text += "<tspan\(Self.attributeText(span))>\(Self.escape(line))</tspan>"
        }
        text += "</text>\n"
        return first + extra
    }

    /// A generous estimate of a line's width in a sans-serif font: wide enough that a squeezed text
    /// is never cut, narrow enough that short texts keep their natural spacing.
    static func estimatedWidth(_ text: String, size: Double, bold: Bool) -> Double {
        Double(text.count) * size * (bold ? 0.64 : 0.58)
    }

    static func attributeText(_ attributes: [(String, String)]) -> String {
        attributes.map { " \($0.0)=\"\(escape($0.1))\"" }.joined()
    }

    static func escape(_ text: String) -> String { Markup.escape(text) }

    /// A coordinate or length: at most two decimals, no trailing zeros (`12`, `12.5`, `0.25`).
    static func number(_ value: Double) -> String {
        let text = DisplayNumber.fixed(value, decimals: 2, minus: "-")
        guard text.contains(".") else { return text }
        var trimmed = Substring(text)
        while trimmed.last == "0" { trimmed.removeLast() }
        if trimmed.last == "." { trimmed.removeLast() }
        return String(trimmed)
    }

    /// `x1,y1 x2,y2 …` for `points` and `polygon`.
    static func points(_ points: [Point]) -> String {
        points.map { "\(number($0.x)),\(number($0.y))" }.joined(separator: " ")
    }
}

/// A point of a picture, in px from the top left.
public struct Point: Sendable, Equatable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    func distance(to other: Point) -> Double { ((x - other.x) * (x - other.x) + (y - other.y) * (y - other.y)).squareRoot() }
}
