/// Text that came from outside (a payload, a topic, a JSON string, a name on the broker) as it may
/// be printed: into the log, onto a terminal, into a comment of a config. Every character that
/// would act instead of show is written as an escape: control characters (NUL, after which the
/// journal starts a new entry, so a `<0>` behind it would be an emergency in flowbridge's name;
/// ESC, which starts a terminal's control sequences; BEL; CR and LF, which end a line), line and
/// paragraph separators, format characters (a BOM, bidirectional overrides) and code points
/// Unicode has not assigned. One escaping for every place: the log, `check --listen`, and what
/// `discover` writes.
public enum PrintableText {
    /// `text` with each character that must not stand raw as `\u001B` (`\U000E0001` beyond the
    /// BMP: YAML's escapes, JSON's within the BMP), and each of `backslashed` (a quoted scalar's
    /// `"` and `\`) after a backslash.
    public static func escaped(_ text: String, backslashed: Set<Unicode.Scalar> = []) -> String {
        guard text.unicodeScalars.contains(where: { mustEscape($0) || backslashed.contains($0) }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if backslashed.contains(scalar) {
                out += "\\" + String(scalar)
            } else if mustEscape(scalar) {
                out += scalar.value <= 0xFFFF ? "\\u" + hex(scalar.value, digits: 4) : "\\U" + hex(scalar.value, digits: 8)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Control characters (C0, DEL, C1 with NEL, tab and line feed among them), line and paragraph
    /// separators, format characters (BOM, zero-width and bidirectional marks) and code points
    /// Unicode has not assigned (U+FFFE and U+FFFF among them, which libyaml refuses).
    public static func mustEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .unassigned: true
        default: false
        }
    }

    static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
