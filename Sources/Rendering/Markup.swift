/// Text inside markup, SVG or HTML: the one escape both use, so that a name from the config or a
/// payload from the broker stays text wherever it is shown.
public enum Markup {
    /// XML text: `<`, `>`, `&`, quotes as entities; control characters, which XML 1.0 does not allow
    /// at all (a document holding one does not display), as U+FFFD.
    public static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "&": escaped += "&amp;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            case "\t", "\n", "\r": escaped.unicodeScalars.append(scalar)
            case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}": escaped += "\u{FFFD}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
