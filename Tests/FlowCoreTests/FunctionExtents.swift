/// Where a function of Swift source text stands: from the line of its `func`, `init`, `deinit` or
/// `subscript` keyword to the line of the brace that closes its body.
struct FunctionExtent: Equatable, CustomStringConvertible {
    var name: String
    var firstLine: Int
    var lastLine: Int

    var lineCount: Int { lastLine - firstLine + 1 }
    var description: String { "\(name) at line \(firstLine): \(lineCount) lines" }
}

/// The extents of the functions in a Swift file.
///
/// Braces are matched in code only. A brace in a string (`UInt8(ascii: "{")`, the JSON parser's
/// every case), a raw or multi-line string, a regex literal (`/\d{3}/`) or a comment does not
/// count, and code in a string's interpolation does: a counter that matches the braces of the raw
/// text reads `"{"` as an opening brace and runs on to the end of the type. Text that does not
/// balance (braces, brackets, an unterminated string or comment) is an error, never a guess.
enum FunctionExtents {
    struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    static func of(_ text: String) throws(Unreadable) -> [FunctionExtent] {
        var lexer = Lexer(bytes: Array(text.utf8))
        try lexer.code(inInterpolation: false)
        return try extents(of: lexer.tokens)
    }

    /// A word, or one byte of punctuation, of code, with its line.
    struct Token {
        var word: String?
        var symbol: UInt8
        var line: Int
    }

    /// The keywords that begin a function with a body.
    static let functionKeywords: Set<String> = ["func", "init", "deinit", "subscript"]
    /// Keywords that begin another declaration: a function declared without a body (a protocol's
    /// requirement) ends where one of these comes.
    static let declarationKeywords: Set<String> = [
        "var", "let", "struct", "class", "enum", "extension", "protocol", "case", "typealias", "actor", "associatedtype", "import",
    ]

    /// Matches the braces of `tokens`: a function's body is the first brace after its keyword at the
    /// keyword's own depth of parentheses (a closure in a default argument is deeper).
    static func extents(of tokens: [Token]) throws(Unreadable) -> [FunctionExtent] {
        var open: [FunctionExtent?] = []  // each brace still open, and the function it is the body of
        var pending: (extent: FunctionExtent, depth: Int, braces: Int)?  // a keyword whose body is still to come
        var depth = 0
        var found: [FunctionExtent] = []
        for (position, token) in tokens.enumerated() {
            let afterDot = position > 0 && tokens[position - 1].symbol == UInt8(ascii: ".")
            if let word = token.word {
                if functionKeywords.contains(word), !afterDot {  // `self.init(…)` is a call
                    let next = tokens.dropFirst(position + 1).first?.word
                    pending = (FunctionExtent(name: word == "func" ? next ?? "operator" : word, firstLine: token.line, lastLine: 0), depth, open.count)
                } else if declarationKeywords.contains(word), pending?.depth == depth {
                    pending = nil
                }
                continue
            }
            switch token.symbol {
            case UInt8(ascii: "("), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: ")"), UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: "{"):
                if let body = pending, body.depth == depth {
                    open.append(body.extent)
                    pending = nil
                } else {
                    open.append(nil)
                }
            case UInt8(ascii: "}"):
                guard let closed = open.popLast() else { throw Unreadable(description: "'}' without '{' at line \(token.line)") }
                if let body = pending, open.count < body.braces { pending = nil }  // the end of a protocol
                if var extent = closed {
                    extent.lastLine = token.line
                    found.append(extent)
                }
            default: break
            }
        }
        guard open.isEmpty, depth == 0 else { throw Unreadable(description: "\(open.count) braces and \(depth) brackets left open at the end") }
        return found.sorted { $0.firstLine < $1.firstLine }
    }

    /// Splits source text into the tokens of its code, leaving out comments and the text of strings.
    struct Lexer {
        let bytes: [UInt8]
        var index = 0
        var line = 1
        var tokens: [Token] = []

        func byte(at offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }

        /// Reads code up to the end, or inside an interpolation up to its closing parenthesis.
        mutating func code(inInterpolation: Bool) throws(Unreadable) {
            var parentheses = 0
            while let byte = byte(at: 0) {
                switch byte {
                case UInt8(ascii: "\n"):
                    line += 1
                    index += 1
                case UInt8(ascii: "/") where self.byte(at: 1) == UInt8(ascii: "/"):
                    while let next = self.byte(at: 0), next != UInt8(ascii: "\n") { index += 1 }
                case UInt8(ascii: "/") where self.byte(at: 1) == UInt8(ascii: "*"):
                    try blockComment()
                case UInt8(ascii: "\""), UInt8(ascii: "#"):
                    var hashes = 0
                    while self.byte(at: hashes) == UInt8(ascii: "#") { hashes += 1 }
                    let opening = self.byte(at: hashes)
                    index += hashes
                    if opening == UInt8(ascii: "\"") {
                        try string(hashes: hashes)
                    } else if opening == UInt8(ascii: "/"), hashes > 0 {
                        try regex(hashes: hashes)
                    }  // else `#if`, `#filePath`
                case UInt8(ascii: "/") where startsExpression && !Self.isSpace(self.byte(at: 1)):
                    if !bareRegex() {  // an operator
                        tokens.append(Token(word: nil, symbol: byte, line: line))
                        index += 1
                    }
                case UInt8(ascii: ")") where inInterpolation && parentheses == 0:
                    index += 1
                    return
                case _ where Self.isWordByte(byte):
                    let start = index
                    while let next = self.byte(at: 0), Self.isWordByte(next) { index += 1 }
                    tokens.append(Token(word: String(decoding: bytes[start..<index], as: UTF8.self), symbol: 0, line: line))
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                    index += 1
                default:
                    if byte == UInt8(ascii: "(") { parentheses += 1 }
                    if byte == UInt8(ascii: ")") { parentheses -= 1 }
                    tokens.append(Token(word: nil, symbol: byte, line: line))
                    index += 1
                }
            }
            if inInterpolation { throw Unreadable(description: "an interpolation left open at the end") }
        }

        /// Whether a `/` here may open a regex literal rather than divide: after an opening
        /// bracket, a separator, an operator or a keyword, where no operand stands.
        var startsExpression: Bool {
            guard let last = tokens.last else { return true }
            if let word = last.word { return ["return", "case", "in", "where", "if", "guard", "while", "throw", "try", "await"].contains(word) }
            return "([{,:=!&|?".utf8.contains(last.symbol)
        }

        static func isSpace(_ byte: UInt8?) -> Bool {
            byte == nil || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
        }

        /// `/…/` on one line, escapes skipped; false (nothing read) when the line has no end for it.
        mutating func bareRegex() -> Bool {
            var offset = 1
            while let next = byte(at: offset), next != UInt8(ascii: "\n") {
                if next == UInt8(ascii: "\\") {
                    offset += 2
                    continue
                }
                if next == UInt8(ascii: "/") {
                    index += offset + 1
                    return true
                }
                offset += 1
            }
            return false
        }

        /// `#/…/#`, from its slash: it ends at a slash followed by as many `#` as opened it.
        mutating func regex(hashes: Int) throws(Unreadable) {
            let startLine = line
            index += 1
            while let byte = byte(at: 0) {
                if byte == UInt8(ascii: "\\") {
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "/"), (1...hashes).allSatisfy({ self.byte(at: $0) == UInt8(ascii: "#") }) {
                    index += 1 + hashes
                    return
                }
                if byte == UInt8(ascii: "\n") { line += 1 }
                index += 1
            }
            throw Unreadable(description: "the regex from line \(startLine) is not closed")
        }

        static func isWordByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"), UInt8(ascii: "0")...UInt8(ascii: "9"), 0x80...: true
            default: false
            }
        }

        /// `/* … */`, which nests in Swift.
        mutating func blockComment() throws(Unreadable) {
            let startLine = line
            var nesting = 0
            while let byte = byte(at: 0) {
                if byte == UInt8(ascii: "/"), self.byte(at: 1) == UInt8(ascii: "*") {
                    nesting += 1
                    index += 2
                } else if byte == UInt8(ascii: "*"), self.byte(at: 1) == UInt8(ascii: "/") {
                    nesting -= 1
                    index += 2
                    if nesting == 0 { return }
                } else {
                    if byte == UInt8(ascii: "\n") { line += 1 }
                    index += 1
                }
            }
            throw Unreadable(description: "the comment from line \(startLine) is not closed")
        }

        /// A string literal from its opening quote: `"…"` or `"""…"""`, behind `hashes` `#` when raw.
        /// Its escapes and its end take the same number of `#`; an interpolation is code.
        mutating func string(hashes: Int) throws(Unreadable) {
            let startLine = line
            // `"""` opens a multi-line string only when the line ends there (`#""""#` holds `""`).
            var end = 3
            while byte(at: end) == UInt8(ascii: " ") || byte(at: end) == UInt8(ascii: "\t") { end += 1 }
            let multiLine = byte(at: 1) == UInt8(ascii: "\"") && byte(at: 2) == UInt8(ascii: "\"") && byte(at: end) == UInt8(ascii: "\n")
            let quotes = multiLine ? 3 : 1
            index += quotes
            func followedByHashes(_ lexer: Lexer, after offset: Int) -> Bool {
                (0..<hashes).allSatisfy { lexer.byte(at: offset + $0) == UInt8(ascii: "#") }
            }
            while let byte = byte(at: 0) {
                if byte == UInt8(ascii: "\\"), followedByHashes(self, after: 1) {
                    index += 1 + hashes
                    if self.byte(at: 0) == UInt8(ascii: "(") {
                        index += 1
                        try code(inInterpolation: true)
                    } else {
                        if self.byte(at: 0) == UInt8(ascii: "\n") { line += 1 }  // a multi-line string's line joined
                        index += 1
                    }
                } else if byte == UInt8(ascii: "\""), (0..<quotes).allSatisfy({ self.byte(at: $0) == UInt8(ascii: "\"") }),
                    followedByHashes(self, after: quotes)
                {
                    index += quotes + hashes
                    return
                } else {
                    if byte == UInt8(ascii: "\n") {
                        guard multiLine else { break }
                        line += 1
                    }
                    index += 1
                }
            }
            throw Unreadable(description: "the string from line \(startLine) is not closed")
        }
    }
}
