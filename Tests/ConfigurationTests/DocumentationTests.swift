import Configuration
import Foundation
import TestSupport
import Testing

/// The README and the pages in `docs/` say nothing the code does not do: every config they show
/// is one flowbridge takes, and every link leads somewhere.
///
/// A ```` ```yaml ```` block is one of two things:
/// - **a whole config**: its text passes `DaemonConfig.parse(_:file:)`, the check of the text
///   that `flowbridge check` makes first (what the text refers to outside itself, such as a
///   `token_file` or a `password_env`, belongs to the machine it runs on and is not looked at);
/// - **a fragment of a named config**: the line just before the opening fence is
///   `<!-- fragment of PATH -->` or `<!-- fragment of PATH at KEY.KEY -->`, PATH a config in the
///   repository and `KEY.KEY` the mapping in it the fragment belongs in (the top level when left
///   out; it must exist). The fragment is a YAML mapping, indented as it would be there. Its keys
///   are merged into that mapping: where both hold a mapping under a key, the two are merged the
///   same way; otherwise the fragment's value is the key's value. The config that results passes
///   `DaemonConfig.parse` as above.
///
/// Anything else, a block that does not parse and is not marked or a marker that does not read as
/// above, fails, naming the file and the line of the block's opening fence.
@Suite struct DocumentationTests {
    /// `README.md` and every page under `docs/`, relative to the repository's root.
    static let pages: [String] = {
        let docs = Repository.root.appendingPathComponent("docs")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: docs.path)) ?? []
        return ["README.md"] + names.filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
    }()

    static func text(of page: String) -> String {
        (try? String(contentsOf: Repository.root.appendingPathComponent(page), encoding: .utf8)) ?? ""
    }

    static let snippets: [Snippet] = pages.flatMap { Snippet.all(in: text(of: $0), page: $0) }
    static let links: [Link] = pages.flatMap { Link.all(in: text(of: $0), page: $0) }

    // MARK: - Config snippets

    /// A ```` ```yaml ```` block of a page, and the marker before it if there is one.
    struct Snippet: Sendable, CustomTestStringConvertible {
        var page: String
        /// The line of the opening fence, 1-based.
        var line: Int
        var text: String
        /// The line before the fence, when it is an HTML comment.
        var marker: String?

        var testDescription: String { "\(page):\(line)" }

        static func all(in markdown: String, page: String) -> [Snippet] {
            let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            var snippets: [Snippet] = []
            var index = 0
            while index < lines.count {
                defer { index += 1 }
                guard lines[index].trimmingCharacters(in: .whitespaces) == "```yaml" else { continue }
                let before = index > 0 ? lines[index - 1].trimmingCharacters(in: .whitespaces) : ""
                let body = lines[(index + 1)...].prefix { $0.trimmingCharacters(in: .whitespaces) != "```" }
                snippets.append(Snippet(
                    page: page, line: index + 1, text: body.joined(separator: "\n") + "\n",
                    marker: before.hasPrefix("<!--") ? before : nil))
                index += body.count + 1
            }
            return snippets
        }

        /// What is wrong with the block, each problem naming the page and the line; none: it passes.
        func problems() -> [String] {
            let place = "\(page), the block at line \(line)"
            guard let marker else {
                do {
                    _ = try DaemonConfig.parse(text, file: place)
                    return []
                } catch {
                    return ["\(error)", "\(place): not a whole config, and not marked as a fragment (<!-- fragment of PATH [at KEY.KEY] --> on the line before)"]
                }
            }
            guard let fragment = Fragment(marker: marker) else {
                return ["\(place): '\(marker)' is not a marker: <!-- fragment of PATH --> or <!-- fragment of PATH at KEY.KEY -->"]
            }
            return fragment.problems(merging: text, place: place)
        }
    }

    /// A marker's config and the mapping in it a fragment belongs in.
    struct Fragment {
        var config: String
        var keys: [String]

        init?(marker: String) {
            guard marker.hasPrefix("<!-- fragment of "), marker.hasSuffix(" -->") else { return nil }
            let words = marker.dropFirst("<!-- fragment of ".count).dropLast(" -->".count).split(separator: " ").map(String.init)
            switch words.count {
            case 1: (config, keys) = (words[0], [])
            case 3 where words[1] == "at": (config, keys) = (words[0], words[2].split(separator: ".").map(String.init))
            default: return nil
            }
        }

        func problems(merging text: String, place: String) -> [String] {
            let at = keys.isEmpty ? "the top level" : keys.joined(separator: ".")
            let named: YAMLNode
            let piece: YAMLNode
            do {
                named = try YAMLDocument.parse(String(contentsOf: Repository.root.appendingPathComponent(config), encoding: .utf8))
                piece = try YAMLDocument.parse(text)
            } catch {
                return ["\(place): fragment of \(config): \(error)"]
            }
            guard piece.pairs != nil else { return ["\(place): a fragment is a mapping, found \(piece.describedKind)"] }
            guard let merged = Self.merge(piece, into: named, at: keys[...]) else {
                return ["\(place): \(config) has no mapping at \(at)"]
            }
            do {
                _ = try DaemonConfig.parse(YAMLText.block(merged), file: "\(place), merged into \(config) at \(at)")
                return []
            } catch {
                return ["\(error)"]
            }
        }

        /// `piece` merged into the mapping at `keys` of `node`; nil when there is no mapping there.
        static func merge(_ piece: YAMLNode, into node: YAMLNode, at keys: ArraySlice<String>) -> YAMLNode? {
            guard case .mapping(var pairs, let mark) = node else { return nil }
            guard let key = keys.first else { return merge(piece, into: node) }
            guard let index = pairs.firstIndex(where: { $0.key.scalarValue == key }),
                  let value = merge(piece, into: pairs[index].value, at: keys.dropFirst())
            else { return nil }
            pairs[index].value = value
            return .mapping(pairs, mark: mark)
        }

        /// Two mappings merged key by key; anything else: the piece.
        static func merge(_ piece: YAMLNode, into node: YAMLNode) -> YAMLNode {
            guard case .mapping(var pairs, let mark) = node, let additions = piece.pairs else { return piece }
            for (key, value) in additions {
                if let index = pairs.firstIndex(where: { $0.key.scalarValue == key.scalarValue }) {
                    pairs[index].value = merge(value, into: pairs[index].value)
                } else {
                    pairs.append((key, value))
                }
            }
            return .mapping(pairs, mark: mark)
        }
    }

    /// A merged fragment is checked as the text `YAMLText` writes: that text must read as the same
    /// config as the tree it was written from, for every config the repository ships.
    @Test(arguments: Repository.shippedConfigs)
    func aConfigWrittenBackReadsTheSame(_ file: String) throws {
        let text = try String(contentsOf: Repository.root.appendingPathComponent(file), encoding: .utf8)
        let written = YAMLText.block(try YAMLDocument.parse(text))
        #expect(try DaemonConfig.parse(written, file: file) == DaemonConfig.parse(text, file: file), "\(written)")
    }

    @Test(arguments: snippets)
    func everyConfigSnippetIsOneFlowbridgeTakes(_ snippet: Snippet) {
        let problems = snippet.problems()
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    /// The README shows a whole config and a fragment, and so do the pages behind it: the rule
    /// above is exercised both ways wherever a reader starts.
    @Test func theReadmeAndTheDocsShowBothKindsOfSnippet() {
        for pages in [["README.md"], Self.pages.filter { $0 != "README.md" }] {
            let shown = Self.snippets.filter { pages.contains($0.page) }
            #expect(shown.contains { $0.marker == nil }, "\(pages): no whole config")
            #expect(shown.contains { $0.marker != nil }, "\(pages): no fragment")
        }
    }

    /// The rule itself, on made-up pages: what passes, and what fails naming page and line.
    @Test(arguments: [
        // A whole config.
        ("```yaml\nsources: {a: {topic: a}}\nwidgets: {w: {template: flow, flow: {inputs: [{rate: a}]}}}\n```\n", nil),
        // Not a config, not marked.
        ("text\n\n```yaml\nsources: {a: {topic: a}}\n```\n", "page.md, the block at line 3: not a whole config"),
        // A fragment at the top level and one inside a widget.
        ("<!-- fragment of Config/demo.yaml -->\n```yaml\noutput: {stdout: true}\n```\n", nil),
        ("<!-- fragment of Config/demo.yaml at widgets.power -->\n```yaml\n    policy: {min_interval: 30s}\n```\n", nil),
        // Merged key by key: the power widget keeps its flow.
        ("<!-- fragment of Config/demo.yaml at widgets -->\n```yaml\n  power: {label: Home}\n```\n", nil),
        // A fragment whose keys the config does not take.
        ("<!-- fragment of Config/demo.yaml at widgets.power -->\n```yaml\n    polcy: {min_interval: 30s}\n```\n", "page.md, the block at line 2, merged into Config/demo.yaml at widgets.power"),
        // A place the config does not have.
        ("<!-- fragment of Config/demo.yaml at widgets.pwr -->\n```yaml\n    policy: {}\n```\n", "page.md, the block at line 2: Config/demo.yaml has no mapping at widgets.pwr"),
        // A config that is not there.
        ("<!-- fragment of Config/nothing.yaml -->\n```yaml\noutput: {stdout: true}\n```\n", "page.md, the block at line 2: fragment of Config/nothing.yaml"),
        // A list is not a fragment.
        ("<!-- fragment of Config/demo.yaml -->\n```yaml\n- a\n```\n", "page.md, the block at line 2: a fragment is a mapping"),
        // A marker that does not read as one.
        ("<!-- fragment Config/demo.yaml -->\n```yaml\noutput: {stdout: true}\n```\n", "page.md, the block at line 2: '<!-- fragment Config/demo.yaml -->' is not a marker"),
    ] as [(String, String?)])
    func theSnippetRuleOnMadeUpPages(_ markdown: String, _ expected: String?) throws {
        let snippet = try #require(Snippet.all(in: markdown, page: "page.md").first)
        let problems = snippet.problems()
        if let expected {
            #expect(problems.contains { $0.hasPrefix(expected) }, "\(problems)")
        } else {
            #expect(problems.isEmpty, "\(problems)")
        }
    }

    // MARK: - Links

    /// A relative link of a page: `[text](target)` or `![alt](target)`, outside code.
    struct Link: Sendable, CustomTestStringConvertible {
        var page: String
        var line: Int
        var target: String

        var testDescription: String { "\(page):\(line) → \(target)" }

        static func all(in markdown: String, page: String) -> [Link] {
            Markdown.prose(markdown).flatMap { line, text in
                text.matches(of: #/\]\(([^()\s]+)(?:\s+"[^"]*")?\)/#).compactMap { match -> Link? in
                    let target = String(match.output.1)
                    if ["http://", "https://", "mailto:"].contains(where: target.hasPrefix) { return nil }
                    return Link(page: page, line: line, target: target)
                }
            }
        }

        /// The file the link leads to, relative to the root, and the heading it names if any; nil
        /// when it leaves the repository.
        var resolved: (file: String, anchor: String?)? {
            let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let anchor = parts.count > 1 ? parts[1] : nil
            guard !parts[0].isEmpty else { return (page, anchor) }
            var components = page.split(separator: "/").dropLast().map(String.init)
            for component in parts[0].split(separator: "/") {
                switch component {
                case ".": continue
                case "..":
                    guard !components.isEmpty else { return nil }
                    components.removeLast()
                default: components.append(String(component))
                }
            }
            return (components.joined(separator: "/"), anchor)
        }
    }

    @Test(arguments: links)
    func everyRelativeLinkLeadsToAFileOfTheRepository(_ link: Link) throws {
        let resolved = try #require(link.resolved, "\(link.testDescription) leaves the repository")
        let path = Repository.root.appendingPathComponent(resolved.file).path
        guard FileManager.default.fileExists(atPath: path) else {
            Issue.record("\(link.testDescription): no \(resolved.file)")
            return
        }
        if let anchor = resolved.anchor {
            let headings = Markdown.anchors(Self.text(of: resolved.file))
            #expect(headings.contains(anchor), "\(link.testDescription): \(resolved.file) has no heading #\(anchor) (\(headings.sorted()))")
        }
    }

    /// Every page behind the README can be found from it.
    @Test func theReadmeLinksEveryPage() throws {
        let linked = Set(Self.links.filter { $0.page == "README.md" }.compactMap { $0.resolved?.file })
        let pages = Self.pages.filter { $0 != "README.md" }
        #expect(!pages.isEmpty)
        for page in pages { #expect(linked.contains(page), "README.md does not link \(page)") }
    }

    @Test func linksAreFoundOutsideCodeOnly() {
        let markdown = "[a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n![d](p.svg \"title\") [e](https://example.com)\n"
        #expect(Link.all(in: markdown, page: "docs/page.md").map(\.target) == ["x.md", "p.svg"])
        #expect(Link(page: "docs/page.md", line: 1, target: "../README.md#try-it").resolved! == ("README.md", "try-it"))
        #expect(Link(page: "README.md", line: 1, target: "../outside.md").resolved == nil)
    }
}

extension DocumentationTests {
    /// What a test reads in Markdown: the lines outside fenced code, and the anchors GitHub gives headings.
    enum Markdown {
        /// (1-based line, text) of every line outside fenced code.
        static func outsideFences(_ markdown: String) -> [(Int, Substring)] {
            var inFence = false
            var lines: [(Int, Substring)] = []
            for (index, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                    inFence.toggle()
                } else if !inFence {
                    lines.append((index + 1, line))
                }
            }
            return lines
        }

        /// The lines outside fenced code with their code spans taken out: what a link can be in.
        static func prose(_ markdown: String) -> [(Int, String)] {
            outsideFences(markdown).map { ($0, String($1.replacing(#/`[^`]*`/#, with: ""))) }
        }

        /// GitHub's anchor of each heading: lowercased, spaces as hyphens, other punctuation left out
        /// (`## \`check --listen\`` is `#check---listen`).
        static func anchors(_ markdown: String) -> Set<String> {
            Set(outsideFences(markdown).compactMap { _, line in
                guard line.hasPrefix("#") else { return nil }
                let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
                return String(title.filter { $0.isLetter || $0.isNumber || $0 == " " || $0 == "-" || $0 == "_" }.map { $0 == " " ? "-" : $0 })
            })
        }
    }

    /// A YAML tree written back as block YAML text that reads as the same tree: plain scalars as they
    /// were (so numbers, booleans and null stay what they were), every other scalar double-quoted.
    enum YAMLText {
        static func block(_ node: YAMLNode) -> String {
            lines(node, indent: "").joined(separator: "\n") + "\n"
        }

        static func lines(_ node: YAMLNode, indent: String) -> [String] {
            switch node {
            case .scalar: return [indent + scalar(node)]
            case .sequence(let items, _): return items.flatMap { entry(indent + "-", $0, indent: indent) }
            case .mapping(let pairs, _): return pairs.flatMap { entry(indent + scalar($0.key) + ":", $0.value, indent: indent) }
            }
        }

        /// `- value` or `key: value`: a scalar or an empty collection on the same line, anything else below.
        static func entry(_ head: String, _ value: YAMLNode, indent: String) -> [String] {
            switch value {
            case .scalar: return [head + " " + scalar(value)]
            case .sequence([], _): return [head + " []"]
            case .mapping(let pairs, _) where pairs.isEmpty: return [head + " {}"]
            default: return [head] + lines(value, indent: indent + "  ")
            }
        }

        static func scalar(_ node: YAMLNode) -> String {
            guard case .scalar(let text, let style, _) = node else { return "" }
            if style == .plain { return text }
            let escaped = text.unicodeScalars.map { character -> String in
                switch character {
                case "\\": return "\\\\"
                case "\"": return "\\\""
                case "\n": return "\\n"
                case "\t": return "\\t"
                case _ where character.value < 0x20: return String(format: "\\u%04X", character.value)
                default: return String(character)
                }
            }
            return "\"" + escaped.joined() + "\""
        }
    }
}
