import Foundation
import TestSupport
import Testing

/// No function in FlowCore runs over 80 lines: what a reader takes in at once. The core is read
/// more than any other module (every reading and every push goes through it), so a function that
/// grows past a screen is split into parts named for what each judges.
@Suite struct FunctionLengthTests {
    static let limit = 80
    static let flowCore = Repository.root.appendingPathComponent("Sources/FlowCore")

    /// Every Swift file below FlowCore, by its path inside the repository.
    static func flowCoreFiles() throws -> [(path: String, text: String)] {
        let found = FileManager.default.enumerator(at: flowCore, includingPropertiesForKeys: nil)
        let files = (found?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "swift" }
        return try files.map { file in
            (String(file.path.dropFirst(Repository.root.path.count + 1)), try String(contentsOf: file, encoding: .utf8))
        }.sorted { $0.path < $1.path }
    }

    @Test func noFunctionInFlowCoreIsOverTheLimit() throws {
        let files = try Self.flowCoreFiles()
        #expect(files.count > 30, "FlowCore's files not found under \(Self.flowCore.path)")
        var functions = 0
        var over: [String] = []
        for file in files {
            let extents = try FunctionExtents.of(file.text)
            functions += extents.count
            over += extents.filter { $0.lineCount > Self.limit }.map { "\(file.path): \($0)" }
        }
        #expect(functions > 300, "only \(functions) functions read in FlowCore")
        #expect(over.isEmpty, "over \(Self.limit) lines:\n\(over.joined(separator: "\n"))")
    }

    /// Source text and the extents read from it (`name first...last`): braces in strings, raw and
    /// multi-line strings, regex literals and comments do not count, code in an interpolation does,
    /// a call of `init` is no function, and a requirement without a body is none either.
    static let cases: [(String, [String])] = [
        (
            """
            func parseValue() -> JSONValue {
                switch bytes[index] {
                case UInt8(ascii: "{"): return try parseObject()
                default: throw fail("unexpected character")
                }
            }
            func next() {}
            """,
            ["parseValue 1...6", "next 7...7"]
        ),
        (
            #"""
            struct S {
                init(_ x: Int) {
                    let raw = #"a "}" here"#
                    // a comment's }
                    /* a comment's { /* nested } */ still { */
                    self.init(raw)
                }
                func text() -> String {
                    """
                    {"power": \(power)}
                    """
                }
            }
            """#,
            ["init 2...7", "text 8...12"]
        ),
        (
            #"""
            func line(_ flag: Bool) -> String {
                "\(flag ? "}" : "{") \(items.map { item in item.name }.joined())"
            }
            """#,
            ["line 1...3"]
        ),
        (
            ##"""
            func patterns(_ text: String) -> Bool {
                text.contains(/"total":\d{3}\}$/) && text.contains(#/ "{ /#) && #""""# != "}" && 6 / 2 == 3
            }
            """##,
            ["patterns 1...3"]
        ),
        (
            """
            protocol P {
                func requirement()
                var value: Int { get }
                subscript(key: String) -> Int { get }
            }
            func outer(run: () -> Void = {}) {
                func inner() {
                }
            }
            """,
            ["subscript 4...4", "outer 6...9", "inner 7...8"]
        ),
    ]

    @Test(arguments: cases)
    func extentsAreReadFromCodeAlone(_ source: String, _ expected: [String]) throws {
        let read = try FunctionExtents.of(source).map { "\($0.name) \($0.firstLine)...\($0.lastLine)" }
        #expect(read == expected)
    }

    /// Text that does not balance is not read at all: a check that guessed could pass a long function.
    @Test(arguments: ["func f() {", "func f() { \"}\" }}", "func f() { \"text }", "func f() { /* } */", "func f() { \"\\(g(\" }"])
    func unbalancedTextIsAnError(_ source: String) {
        #expect(throws: FunctionExtents.Unreadable.self) { try FunctionExtents.of(source) }
    }
}
