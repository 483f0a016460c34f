/// A strict reader for the SVG the pictures write: elements, attributes and text, with the five XML
/// entities decoded. It throws on what a browser would refuse (an unclosed or mismatched tag, an
/// unquoted or repeated attribute, a bare `&`, a control character), so a test that reads a
/// picture also proves it well-formed.
final class SVGTree {
    let name: String
    let attributes: [String: String]
    var children: [SVGTree] = []
    var text = ""

    init(name: String, attributes: [String: String]) {
        self.name = name
        self.attributes = attributes
    }

    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ document: String) throws -> SVGTree {
        let root = SVGTree(name: "#document", attributes: [:])
        var stack = [root]
        var characters = Substring(document)
        while let next = characters.first {
            if next != "<" {
                let end = characters.firstIndex(of: "<") ?? characters.endIndex
                stack[stack.count - 1].text += try decode(characters[..<end])
                characters = characters[end...]
                continue
            }
            guard let close = characters.firstIndex(of: ">") else { throw Malformed(description: "unclosed tag") }
            var tag = characters[characters.index(after: characters.startIndex)..<close]
            characters = characters[characters.index(after: close)...]
            if tag.first == "/" {
                let name = String(tag.dropFirst())
                guard stack.count > 1, stack.last!.name == name else { throw Malformed(description: "unexpected </\(name)>") }
                stack.removeLast()
                continue
            }
            let selfClosing = tag.last == "/"
            if selfClosing { tag = tag.dropLast() }
            let element = try element(from: tag)
            stack[stack.count - 1].children.append(element)
            if !selfClosing { stack.append(element) }
        }
        guard stack.count == 1, let svg = root.children.first, root.children.count == 1, svg.name == "svg" else {
            throw Malformed(description: "not one <svg> element")
        }
        return svg
    }

    private static func element(from tag: Substring) throws -> SVGTree {
        var rest = tag
        let name = String(rest.prefix { !$0.isWhitespace })
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
            throw Malformed(description: "bad tag <\(tag)>")
        }
        rest = rest.dropFirst(name.count)
        var attributes: [String: String] = [:]
        while true {
            rest = rest.drop { $0.isWhitespace }
            if rest.isEmpty { break }
            guard let equals = rest.firstIndex(of: "=") else { throw Malformed(description: "bad attribute in <\(tag)>") }
            let key = String(rest[..<equals])
            rest = rest[rest.index(after: equals)...]
            guard rest.first == "\"", let end = rest.dropFirst().firstIndex(of: "\"") else {
                throw Malformed(description: "unquoted attribute \(key) in <\(name)>")
            }
            guard attributes[key] == nil else { throw Malformed(description: "attribute \(key) twice in <\(name)>") }
            attributes[key] = try decode(rest[rest.index(after: rest.startIndex)..<end])
            rest = rest[rest.index(after: end)...]
        }
        return SVGTree(name: name, attributes: attributes)
    }

    private static func decode(_ raw: Substring) throws -> String {
        var out = ""
        var rest = raw
        while let first = rest.first {
            if first == "&" {
                guard let semicolon = rest.firstIndex(of: ";") else { throw Malformed(description: "bare & in \(raw)") }
                let entity = rest[rest.index(after: rest.startIndex)..<semicolon]
                switch entity {
                case "lt": out += "<"
                case "gt": out += ">"
                case "amp": out += "&"
                case "quot": out += "\""
                case "#39": out += "'"
                default: throw Malformed(description: "unknown entity &\(entity);")
                }
                rest = rest[rest.index(after: semicolon)...]
            } else {
                for scalar in first.unicodeScalars where scalar.value < 0x20 && ![9, 10, 13].contains(scalar.value) {
                    throw Malformed(description: "control character U+\(String(scalar.value, radix: 16)) in \(raw)")
                }
                out.append(first)
                rest = rest.dropFirst()
            }
        }
        return out
    }

    /// Every element below this one, depth first, in document order.
    var descendants: [SVGTree] { children.flatMap { [$0] + $0.descendants } }

    /// The elements below with this name whose `class` holds `className`.
    func all(_ name: String, class className: String? = nil) -> [SVGTree] {
        descendants.filter { $0.name == name && (className == nil || $0.classes.contains(className!)) }
    }

    var classes: [String] { (attributes["class"] ?? "").split(separator: " ").map(String.init) }

    /// What a `<text>` says: its text, or its lines (`<tspan>`s) joined by spaces.
    var content: String {
        let lines = children.filter { $0.name == "tspan" }.map(\.text)
        return lines.isEmpty ? text : lines.joined(separator: " ")
    }

    /// All the text below, element by element.
    var texts: [String] { all("text").map(\.content) }

    func number(_ attribute: String) -> Double? { attributes[attribute].flatMap(Double.init) }

    /// A `points` attribute as (x, y) pairs.
    func points(_ attribute: String = "points") -> [(x: Double, y: Double)] {
        (attributes[attribute] ?? "").split(separator: " ").compactMap { pair in
            let parts = pair.split(separator: ",").compactMap { Double($0) }
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }
    }
}
