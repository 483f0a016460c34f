import Commands
import Configuration
import Persistence
import Platform
import Runtime
import TestSupport
import Testing

// MARK: - Helpers

/// A compact rendering of a node tree: `{key: value, ...}`, `[item, ...]`; plain scalars bare
/// (an empty plain scalar is `∅`), `'single'`, `"double"`, `|literal`, `>folded`, with newlines
/// and tabs shown as `\n` and `\t`. With `styles: false` every scalar is rendered bare.
private func shape(_ node: YAMLNode, styles: Bool = true) -> String {
    switch node {
    case .scalar(let text, let style, _):
        let escaped = text.replacing("\n", with: "\\n").replacing("\t", with: "\\t")
        guard styles else { return escaped.isEmpty ? "∅" : escaped }
        switch style {
        case .plain: return escaped.isEmpty ? "∅" : escaped
        case .singleQuoted: return "'\(escaped)'"
        case .doubleQuoted: return "\"\(escaped)\""
        case .literal: return "|\(escaped)"
        case .folded: return ">\(escaped)"
        }
    case .sequence(let items, _):
        return "[" + items.map { shape($0, styles: styles) }.joined(separator: ", ") + "]"
    case .mapping(let pairs, _):
        let inner = pairs.map { "\(shape($0.key, styles: styles)): \(shape($0.value, styles: styles))" }
        return "{" + inner.joined(separator: ", ") + "}"
    }
}

private func parseError(_ text: String) -> YAMLError? {
    parseError(bytes: Array(text.utf8))
}

private func parseError(bytes: [UInt8]) -> YAMLError? {
    do {
        _ = try YAMLDocument.parse(bytes: bytes)
        return nil
    } catch {
        return error
    }
}

/// Counts every node of a tree (to check that nothing was lost).
private func nodeCount(_ node: YAMLNode) -> Int {
    switch node {
    case .scalar: 1
    case .sequence(let items, _): 1 + items.reduce(0) { $0 + nodeCount($1) }
    case .mapping(let pairs, _): 1 + pairs.reduce(0) { $0 + nodeCount($1.key) + nodeCount($1.value) }
    }
}

/// Deterministic random numbers for the fuzz tests (SplitMix64).
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

// MARK: - Trees

struct ShapeCase: Sendable, CustomTestStringConvertible {
    var name: String
    var yaml: String
    var shape: String
    var testDescription: String { name }
}

@Suite struct YAMLDocumentTests {
    static let shapeCases: [ShapeCase] = [
        ShapeCase(name: "block mapping", yaml: "a: 1\nb: two\n", shape: "{a: 1, b: two}"),
        ShapeCase(
            name: "nested block mappings keep source order",
            yaml: """
                sources:
                  solar:
                    topic: solar/ac/power
                    scale: 0.001
                  grid:
                    topic: grid/power
                """,
            shape: "{sources: {solar: {topic: solar/ac/power, scale: 0.001}, grid: {topic: grid/power}}}"),
        ShapeCase(name: "block sequence", yaml: "- a\n- b\n-\n  - c\n  - d\n", shape: "[a, b, [c, d]]"),
        ShapeCase(
            name: "sequence of mappings", yaml: "- name: x\n  id: 1\n- name: y\n",
            shape: "[{name: x, id: 1}, {name: y}]"),
        ShapeCase(name: "indentless sequence", yaml: "list:\n- a\n- b\nn: 1\n", shape: "{list: [a, b], n: 1}"),
        ShapeCase(
            name: "flow style", yaml: "{a: [1, 2, {b: c}], d: [], e: {}}",
            shape: "{a: [1, 2, {b: c}], d: [], e: {}}"),
        ShapeCase(
            name: "flow inside block", yaml: "meters:\n  - {topic: a/b, qos: 1}\n  - [x, 'y']\n",
            shape: "{meters: [{topic: a/b, qos: 1}, [x, 'y']]}"),
        ShapeCase(name: "empty and null values", yaml: "a:\nb: ~\nc: null\n", shape: "{a: ∅, b: ~, c: null}"),
        ShapeCase(
            name: "comments",
            yaml: "# heading\na: 1 # trailing\n# between\nb: 'x # not a comment'\nc: x#y\n  # indented\n",
            shape: "{a: 1, b: 'x # not a comment', c: x#y}"),
        ShapeCase(
            name: "quoted scalars",
            yaml: #"a: "x\ty"\#nb: 'it''s'\#nc: "null"\#nd: ''\#ne: "\u00e9\n""#,
            shape: #"{a: "x\ty", b: 'it's', c: "null", d: '', e: "é\n"}"#),
        ShapeCase(
            name: "literal block scalar", yaml: "text: |\n  line one\n    indented\n  line three\nnext: 1\n",
            shape: "{text: |line one\\n  indented\\nline three\\n, next: 1}"),
        ShapeCase(name: "literal strip", yaml: "text: |-\n  a\n  b\n\n", shape: "{text: |a\\nb}"),
        ShapeCase(
            name: "folded block scalar", yaml: "text: >\n  one\n  two\n\n  three\n",
            shape: "{text: >one two\\nthree\\n}"),
        ShapeCase(name: "multi-line plain scalar", yaml: "a: one\n  two\nb: 2\n", shape: "{a: one two, b: 2}"),
        ShapeCase(
            name: "anchors and aliases",
            yaml: "base: &b {x: 1, y: [2]}\nother: *b\nlist: [&s hi, *s]\n",
            shape: "{base: {x: 1, y: [2]}, other: {x: 1, y: [2]}, list: [hi, hi]}"),
        ShapeCase(
            name: "alias as a key", yaml: "k: &k name\n*k : v\n", shape: "{k: name, name: v}"),
        ShapeCase(
            name: "anchor redefined: alias takes the latest",
            yaml: "a: &x 1\nb: &x 2\nc: *x\n", shape: "{a: 1, b: 2, c: 2}"),
        ShapeCase(
            name: "merge key stays a plain key",
            yaml: "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",
            shape: "{base: {x: 1}, derived: {<<: {x: 1}, y: 2}}"),
        ShapeCase(name: "explicit document markers", yaml: "---\na: 1\n...\n", shape: "{a: 1}"),
        ShapeCase(name: "directive", yaml: "%YAML 1.1\n---\na: 1\n", shape: "{a: 1}"),
        ShapeCase(name: "scalar document", yaml: "hello world", shape: "hello world"),
        ShapeCase(name: "document with only ---", yaml: "---\n", shape: "∅"),
        ShapeCase(name: "CRLF line ends", yaml: "a: 1\r\nb:\r\n  - x\r\n", shape: "{a: 1, b: [x]}"),
        ShapeCase(name: "complex key", yaml: "? [a, b]\n: v\n", shape: "{[a, b]: v}"),
        ShapeCase(name: "tags are ignored", yaml: "a: !!str 123\nb: !custom [1]\n", shape: "{a: 123, b: [1]}"),
        ShapeCase(name: "unicode", yaml: "name: Küche ☀️\n'ключ': 値\n", shape: "{name: Küche ☀️, 'ключ': 値}"),
        ShapeCase(name: "byte order mark", yaml: "\u{FEFF}a: 1\n", shape: "{a: 1}"),
        ShapeCase(
            name: "same key text in other mappings and other case is fine",
            yaml: "x: {a: 1}\ny: {a: 2}\nA: 3\na: 4\n", shape: "{x: {a: 1}, y: {a: 2}, A: 3, a: 4}"),
        ShapeCase(
            name: "JSON indented with tabs", yaml: "{\n\t\"a\": {\n\t\t\"b\": [1,\ttrue]\n\t}\n}\n",
            shape: #"{"a": {"b": [1, true]}}"#),
        ShapeCase(
            name: "compact JSON with escapes", yaml: #"{"a":"x\/y\u00e9","b":[],"c":{},"d":null,"e":-0.5e+2}"#,
            shape: #"{"a": "x/yé", "b": [], "c": {}, "d": null, "e": -0.5e+2}"#),
        ShapeCase(
            name: "escaped NUL inside a double-quoted scalar", yaml: #"a: "x\0y""#, shape: "{a: \"x\u{0}y\"}"),
    ]

    @Test(arguments: shapeCases)
    func parsesIntoTree(_ testCase: ShapeCase) throws {
        let node = try YAMLDocument.parse(testCase.yaml)
        #expect(shape(node) == testCase.shape)
    }

    @Test func nestedKeysRememberLineAndColumn() throws {
        let yaml = """
            sources:
              solar:
                topic: solar/ac/power
              grid:
                topic: "grid/power"
                scale: [1, 2]
            """
        let root = try YAMLDocument.parse(yaml)
        #expect(root.mark == YAMLMark(line: 1, column: 1))
        let sources = try #require(root["sources"])
        #expect(sources.mark == YAMLMark(line: 2, column: 3))  // a block mapping starts at its first key
        let grid = try #require(sources.pairs?[1])
        #expect(grid.key.mark == YAMLMark(line: 4, column: 3))
        let topic = try #require(grid.value.pairs?[0])
        #expect(topic.key.mark == YAMLMark(line: 5, column: 5))
        #expect(topic.value == .scalar("grid/power", style: .doubleQuoted, mark: YAMLMark(line: 5, column: 12)))
        let scale = try #require(grid.value["scale"])
        #expect(scale.mark == YAMLMark(line: 6, column: 12))
        #expect(scale.items?[1].mark == YAMLMark(line: 6, column: 16))
        #expect(root["sources"]?["solar"]?["topic"]?.mark == YAMLMark(line: 3, column: 12))
    }

    @Test func marksOfBlockSequencesAndLiteralScalars() throws {
        let root = try YAMLDocument.parse("# comment\nitems:\n  - one\n  - |\n    two\n    lines\n  - x: 1\n")
        let items = try #require(root["items"]?.items)
        #expect(root["items"]?.mark == YAMLMark(line: 3, column: 3))
        #expect(items.map(\.mark) == [
            YAMLMark(line: 3, column: 5), YAMLMark(line: 4, column: 5), YAMLMark(line: 7, column: 5),
        ])
        #expect(items[1].scalarValue == "two\nlines\n")
        #expect(items[1].scalarStyle == .literal)
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let root = try YAMLDocument.parse("äöü: 'é'\n")
        #expect(root["äöü"]?.mark == YAMLMark(line: 1, column: 6))
        #expect(parseError("ä: ö: 1")?.mark == YAMLMark(line: 1, column: 5))
    }

    /// libyaml places what it finds at the end of a text without a final line break on the line
    /// after it; flowbridge places it where the text ends.
    @Test func aNodeAtTheEndOfTheTextIsOnItsLastLine() throws {
        #expect(try YAMLDocument.parse("--- ").mark == YAMLMark(line: 1, column: 5))
        #expect(try YAMLDocument.parse("---\n").mark == YAMLMark(line: 2, column: 1))
        #expect(try YAMLDocument.parse("a:").pairs?.first?.value.mark == YAMLMark(line: 1, column: 3))
    }

    @Test func aliasCopyIsPlacedAtTheAlias() throws {
        let root = try YAMLDocument.parse("a: &x {k: 1}\nb: *x\n")
        let copy = try #require(root["b"])
        #expect(copy.mark == YAMLMark(line: 2, column: 4))
        #expect(copy.pairs?[0].key.mark == YAMLMark(line: 1, column: 8))  // inside: the original's marks
        #expect(shape(copy) == shape(try #require(root["a"])))
    }

    // MARK: JSON

    @Test func jsonParsesLikeEquivalentBlockYAML() throws {
        let json = #"{"sources": {"solar": {"topic": "solar/ac/power"}}, "n": [1, 2.5]}"#
        let yaml = """
            sources:
              solar:
                topic: solar/ac/power
            n:
              - 1
              - 2.5
            """
        let fromJSON = try YAMLDocument.parse(json)
        let fromYAML = try YAMLDocument.parse(yaml)
        #expect(shape(fromJSON, styles: false) == shape(fromYAML, styles: false))
        #expect(shape(fromJSON) == #"{"sources": {"solar": {"topic": "solar/ac/power"}}, "n": [1, 2.5]}"#)
        // JSON strings are quoted (always text); numbers, true/false/null stay plain.
        #expect(fromJSON["n"]?.items?.map(\.scalarStyle) == [.plain, .plain])
        #expect(fromJSON.pairs?.first?.key.scalarStyle == .doubleQuoted)
    }

    @Test func prettyPrintedJSONHasLines() throws {
        let json = """
            {
              "broker": {"host": "localhost", "port": 1883},
              "enabled": true,
              "password": null,
              "meters": [
                {"topic": "a", "scale": -1e-3}
              ]
            }
            """
        let root = try YAMLDocument.parse(json)
        #expect(shape(root) == #"{"broker": {"host": "localhost", "port": 1883}, "enabled": true, "password": null, "meters": [{"topic": "a", "scale": -1e-3}]}"#)
        #expect(root["meters"]?.items?.first?["scale"]?.mark == YAMLMark(line: 6, column: 29))
        #expect(root["password"]?.isNull == true)
        #expect(root["enabled"]?.describedKind == "a boolean")
    }

    // MARK: Scalar styles and helpers

    @Test(arguments: [
        ("plain", YAMLNode.ScalarStyle.plain),
        ("'single'", .singleQuoted),
        ("\"double\"", .doubleQuoted),
        ("|\n  literal\n", .literal),
        (">\n  folded\n", .folded),
    ])
    func scalarStyles(yaml: String, style: YAMLNode.ScalarStyle) throws {
        let node = try YAMLDocument.parse("key: \(yaml)")
        #expect(node["key"]?.scalarStyle == style)
        #expect(node["key"]?.scalarStyle?.isPlain == (style == .plain))
    }

    @Test(arguments: [
        ("a:", true), ("a: ~", true), ("a: null", true), ("a: Null", true), ("a: NULL", true),
        ("a: 'null'", false), ("a: \"\"", false), ("a: ''", false), ("a: nULL", false), ("a: none", false),
        ("a: '~'", false), ("a: []", false), ("a: {}", false), ("a: 0", false),
    ])
    func isNull(yaml: String, expected: Bool) throws {
        let node = try YAMLDocument.parse(yaml)
        #expect(node["a"]?.isNull == expected)
    }

    @Test(arguments: [
        ("{b: 1}", "a mapping"), ("[1]", "a list"), ("[]", "a list"), ("hello", "a text"), ("'42'", "a text"),
        ("42", "a number"), ("-1.5", "a number"), ("1e3", "a number"), ("+7", "a number"),
        ("true", "a boolean"), ("No", "a boolean"), ("FALSE", "a boolean"), ("yes", "a boolean"),
        ("\"true\"", "a text"), ("~", "null"), ("", "null"), ("'null'", "a text"), ("nan", "a text"),
        ("|\n  12\n", "a text"), ("1.2.3", "a text"),
    ])
    func describedKind(yaml: String, expected: String) throws {
        let node = try YAMLDocument.parse("a: \(yaml)")
        #expect(node["a"]?.describedKind == expected)
    }

    @Test func accessors() throws {
        let root = try YAMLDocument.parse("m: {x: 1}\ns: [a, b]\nt: text\n")
        #expect(root["m"]?["x"]?.scalarValue == "1")
        #expect(root["s"]?.items?.compactMap(\.scalarValue) == ["a", "b"])
        #expect(root["t"]?.scalarValue == "text")
        #expect(root["missing"] == nil)
        #expect(root["t"]?["x"] == nil)
        #expect(root["m"]?.scalarValue == nil)
        #expect(root["m"]?.items == nil)
        #expect(root["s"]?.pairs == nil)
        #expect(root.pairs?.map { $0.key.scalarValue ?? "" } == ["m", "s", "t"])
    }

    @Test func equalityIncludesStyleAndMark() throws {
        let a = try YAMLDocument.parse("k: [1, {x: y}]")
        #expect(a == (try YAMLDocument.parse("k: [1, {x: y}]")))
        #expect(a != (try YAMLDocument.parse("k: [1, {x: 'y'}]")))
        #expect(a != (try YAMLDocument.parse("k:  [1, {x: y}]")))
        #expect(a != (try YAMLDocument.parse("k: [1, {x: z}]")))
    }

    // MARK: Errors

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var line: Int
        var column: Int?
        var message: String
        var testDescription: String { name }

        init(_ name: String, _ yaml: String, line: Int, column: Int? = nil, _ message: String) {
            self.init(name, bytes: Array(yaml.utf8), line: line, column: column, message)
        }

        init(_ name: String, bytes: [UInt8], line: Int, column: Int? = nil, _ message: String) {
            self.name = name
            self.bytes = bytes
            self.line = line
            self.column = column
            self.message = message
        }
    }

    static let errorCases: [ErrorCase] = [
        ErrorCase(
            "tab indentation", "source:\n\ttopic: a\n", line: 2, column: 1,
            "found character that cannot start any token"),
        ErrorCase(
            "tab after indentation", "a:\n  b: 1\n\t c: 2\n", line: 3, column: 1,
            "found a tab character that violates indentation"),
        ErrorCase(
            "unclosed double quote", "a: 1\nb: \"abc\nc: 2\n", line: 4, column: 1,
            "found unexpected end of stream (while scanning a quoted scalar that started at line 2, column 4)"),
        ErrorCase(
            "unclosed single quote", "a: 'abc\n", line: 2, column: 1,
            "found unexpected end of stream (while scanning a quoted scalar that started at line 1, column 4)"),
        ErrorCase(
            "bad indentation (less)", "a:\n  b: 1\n c: 2\n", line: 3, column: 2,
            "did not find expected key (while parsing a block mapping that started at line 1, column 1)"),
        ErrorCase(
            "bad indentation (more)", "a: 1\n  b: 2\n", line: 2, column: 4,
            "mapping values are not allowed in this context"),
        ErrorCase(
            "mapping value in a plain scalar", "a: b: c\n", line: 1, column: 5,
            "mapping values are not allowed in this context"),
        ErrorCase("stray ]", "a: 1\n]\n", line: 2, column: 1, "did not find expected key"),
        ErrorCase("stray ] after flow", "a: [1, 2]]\n", line: 1, column: 10, "did not find expected key"),
        ErrorCase(
            "stray } at the top", "}\n", line: 1, column: 1,
            "did not find expected node content"),
        ErrorCase(
            "unclosed flow sequence", "a: [1, 2\nb: 3\n", line: 2, column: 2,
            "did not find expected ',' or ']'"),
        ErrorCase(
            "sequence item in a mapping", "a: 1\n- b\n", line: 2, column: 1,
            "did not find expected key"),
        ErrorCase(
            "duplicate key", "source:\n  topic: a\n  qos: 1\n  topic: b\n", line: 4, column: 3,
            "duplicate key 'topic' (first defined at line 2)"),
        ErrorCase(
            "duplicate key quoted and plain", "a: 1\n\"a\": 2\n", line: 2, column: 1,
            "duplicate key 'a' (first defined at line 1)"),
        ErrorCase(
            "duplicate key in flow mapping", "{a: 1, b: 2, a: 3}", line: 1, column: 14,
            "duplicate key 'a' (first defined at line 1)"),
        ErrorCase(
            "duplicate key in JSON", "{\n  \"n\": 1,\n  \"n\": 2\n}", line: 3, column: 3,
            "duplicate key 'n' (first defined at line 2)"),
        ErrorCase(
            "duplicate merge keys", "a: &a {x: 1}\nb:\n  <<: *a\n  <<: {y: 2}\n", line: 4, column: 3,
            "duplicate key '<<' (first defined at line 3)"),
        ErrorCase(
            "duplicate complex key", "? [a, b]\n: 1\n? [a, b]\n: 2\n", line: 3, column: 3,
            "duplicate key (first defined at line 1)"),
        ErrorCase(
            "unknown alias", "a: 1\nb: *nope\n", line: 2, column: 4, "unknown alias '*nope' (no earlier '&nope')"),
        ErrorCase(
            "alias before its anchor", "a: *x\nb: &x 1\n", line: 1, column: 4, "unknown alias '*x'"),
        ErrorCase(
            "alias inside its own anchor", "a: &x [1, *x]\n", line: 1, column: 11,
            "alias '*x' refers to the node anchored at line 1, column 4, which contains the alias"),
        ErrorCase(
            "second document", "a: 1\n---\nb: 2\n", line: 2, column: 1,
            "expected a single document, found a second one"),
        ErrorCase(
            "second empty document", "---\na: 1\n---\n", line: 3, column: 1,
            "expected a single document, found a second one"),
        ErrorCase(
            "NUL byte", bytes: Array("a: 1\nb: x\0y\n".utf8), line: 2, column: 5,
            "control characters are not allowed (0x00)"),
        ErrorCase(
            "invalid UTF-8 byte", bytes: Array("a: 1\nbé: ".utf8) + [0xFF, 0x0A], line: 2, column: 5,
            "invalid leading UTF-8 octet (0xFF)"),
        ErrorCase(
            "truncated UTF-8 sequence", bytes: Array("a: ".utf8) + [0xE2, 0x82], line: 1, column: 4,
            "incomplete UTF-8 octet sequence"),
        // libyaml marks the end of a text without a final line break on the line after it.
        ErrorCase(
            "key cut off at the end, no final line break", "sources: {}\nsourc", line: 2, column: 6,
            "could not find expected ':'"),
        ErrorCase(
            "key cut off at the end of the last line", "sources: {}\nsourc\n", line: 3, column: 1,
            "could not find expected ':'"),
        ErrorCase(
            "too deep flow nesting", String(repeating: "[", count: 201) + String(repeating: "]", count: 201),
            line: 1, column: 201, "lists and mappings are nested more than 200 levels deep"),
        ErrorCase(
            "too deep block nesting", String(repeating: "- ", count: 250) + "x\n", line: 1, column: 401,
            "nested more than 200 levels deep"),
    ]

    @Test(arguments: errorCases)
    func errorsNameLineAndColumn(_ testCase: ErrorCase) throws {
        let error = try #require(parseError(bytes: testCase.bytes))
        #expect(error.message.contains(testCase.message), "\(error)")
        #expect(error.mark?.line == testCase.line, "\(error)")
        if let column = testCase.column {
            #expect(error.mark?.column == column, "\(error)")
        }
    }

    @Test func errorDescription() throws {
        let error = try #require(parseError("source:\n  topic: a\n  broker: b: c\n"))
        #expect(error.description == "line 3, column 12: mapping values are not allowed in this context")
        #expect(YAMLError(message: "the file is empty", mark: nil).description == "the file is empty")
    }

    @Test(arguments: ["", " ", "\n\n", "# only a comment\n", "  # comment\n\n# another\n", "\u{FEFF}"])
    func emptyFile(yaml: String) throws {
        let error = try #require(parseError(yaml))
        #expect(error.message == "the file is empty")
        #expect(error.description == "the file is empty")
    }

    @Test func typedThrowsFromStringEntryPoint() {
        #expect(throws: YAMLError(message: "the file is empty", mark: nil)) {
            try YAMLDocument.parse("# nothing\n")
        }
    }

    // MARK: Robustness

    @Test func nestingUpToTheLimitWorks() throws {
        let depth = YAMLDocument.maximumDepth
        let flow = try YAMLDocument.parse(String(repeating: "[", count: depth) + String(repeating: "]", count: depth))
        var node = flow
        var levels = 1
        while let inner = node.items?.first {
            node = inner
            levels += 1
        }
        #expect(levels == depth)

        var block = ""
        for level in 0..<depth { block += String(repeating: " ", count: level) + "k:\n" }
        #expect(try YAMLDocument.parse(block).mark.line == 1)
        block += String(repeating: " ", count: depth) + "k: v\n"
        #expect(parseError(block)?.mark?.line == depth + 1)
    }

    @Test(arguments: ["[", "{a: ", "- ", "[{", "? "])
    func veryDeepNestingIsAnErrorNotACrash(unit: String) throws {
        let text = String(repeating: unit, count: 100_000)
        let error = try #require(parseError(text))
        #expect(error.message.contains("nested more than 200 levels deep"), "\(error)")
        #expect(error.mark?.line == 1)
    }

    @Test func aliasBombIsAnError() throws {
        var yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...9 {
            let refs = Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ")
            yaml += "a\(level): &a\(level) [\(refs)]\n"
        }
        let error = try #require(parseError(yaml))
        #expect(error.message == "aliases expand to more than 1000000 nodes")
        #expect(error.mark?.line == 6)  // a5 would be 1_111_111 nodes
    }

    @Test func oneMegabyteFile() throws {
        var yaml = "# generated\nmeters:\n"
        var count = 0
        while yaml.utf8.count < 1_048_576 {
            yaml += "  meter_\(count):\n    topic: \"home/meter/\(count)/power\"\n    scale: 0.001\n"
            yaml += "    tags: [a, b, 'c']\n    note: |\n      line\n"
            count += 1
        }
        let root = try YAMLDocument.parse(yaml)
        let meters = try #require(root["meters"]?.pairs)
        #expect(meters.count == count)
        #expect(meters.last?.key.mark == YAMLMark(line: 3 + 6 * (count - 1), column: 3))
        #expect(nodeCount(root) == 3 + count * 13)
    }

    @Test func oneMegabyteOfGarbage() {
        var random = SeededGenerator(state: 42)
        let bytes = (0..<1_048_576).map { _ in UInt8.random(in: 0...255, using: &random) }
        let error = parseError(bytes: bytes)
        #expect(error != nil)
        #expect((error?.mark?.line ?? 1) >= 1)
    }

    @Test(arguments: 0..<4)
    func randomBytesNeverCrash(seed: Int) {
        var random = SeededGenerator(state: UInt64(seed))
        let alphabet = Array("ab1 :-?[]{},#&*!|>'\"\\%@`\t\r\n\0~.".utf8) + [0xC3, 0xA9, 0xFF, 0xE2]
        for _ in 0..<500 {
            let length = Int.random(in: 0...80, using: &random)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &random)! }
            checkNoCrash(bytes)
        }
    }

    @Test(arguments: 0..<4)
    func mutatedConfigNeverCrashes(seed: Int) {
        let sample = Array("""
            broker: {host: localhost, port: 1883}
            sources:
              solar: &s
                topic: "solar/ac/power"
                scale: 0.001
              copy: *s
              list:
                - 'a'
                - |
                  text
            """.utf8)
        var random = SeededGenerator(state: UInt64(seed) &+ 1000)
        let alphabet = Array(" :-[]{},#&*|>'\"\t\n\0".utf8) + [0xFF]
        for _ in 0..<500 {
            var bytes = sample
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[at] = alphabet.randomElement(using: &random)!
                case 1: bytes.insert(alphabet.randomElement(using: &random)!, at: at)
                default: bytes.remove(at: at)
                }
            }
            checkNoCrash(bytes)
        }
    }

    private func checkNoCrash(_ bytes: [UInt8]) {
        let lines = bytes.count { $0 == 0x0A || $0 == 0x0D } + 2
        if let error = parseError(bytes: bytes), let mark = error.mark {
            #expect((1...lines).contains(mark.line), "\(error) for \(bytes)")
            #expect(mark.column >= 1, "\(error) for \(bytes)")
            #expect(!error.message.isEmpty)
        }
    }

    @Test func repeatedErrorsDoNotLeakOrCorruptState() throws {
        // Errors from every layer (libyaml, tree builder) back to back, then a valid parse.
        for _ in 0..<2_000 {
            _ = parseError("a: 'x\n")
            _ = parseError("a: 1\na: 2\n")
            _ = parseError("a: *x\n")
            _ = parseError(bytes: [0x61, 0x3A, 0x20, 0xFF])
        }
        #expect(shape(try YAMLDocument.parse("a: [1, 2]\n")) == "{a: [1, 2]}")
    }
}
