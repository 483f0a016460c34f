/// The usage's layout: prose wrapped to the terminal's usual width, and the option table with its
/// help in a column of its own.
enum TextColumns {
    static let width = 100
    /// The help column starts here, unless every label is shorter.
    static let maxLabelWidth = 24

    /// `text` in lines of at most `width` characters (a longer word stands alone), each after `indent`.
    static func wrap(_ text: String, width: Int = width, indent: String = "") -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, indent.count + line.count + 1 + word.count > width {
                lines.append(indent + line)
                line = ""
            }
            line += line.isEmpty ? word : " " + word
        }
        if !line.isEmpty { lines.append(indent + line) }
        return lines
    }

    /// `  label   help`, the help wrapped in its column; a label too long for the column has its
    /// help on the lines below.
    static func table(_ rows: [(label: String, help: String)]) -> [String] {
        let column = min(rows.map(\.label.count).max() ?? 0, maxLabelWidth) + 4
        let indent = String(repeating: " ", count: column)
        return rows.flatMap { row in
            let label = "  " + row.label
            var help = wrap(row.help, width: width, indent: indent)
            guard label.count + 2 <= column, let first = help.first else { return [label] + help }
            help[0] = label.padding(to: column) + first.dropFirst(column)
            return help
        }
    }
}
