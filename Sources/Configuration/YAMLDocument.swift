import CYAML

// MARK: - Public model

/// A position in the source text, 1-based, as a person reads an editor.
/// `column` counts characters (Unicode scalars), not bytes.
public struct YAMLMark: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// "line 3, column 7"
    public var description: String { "line \(line), column \(column)" }
}

/// One node of a parsed YAML (or JSON) document, with the position it started at.
///
/// Tags (`!!str`, `!foo`) are ignored; aliases are resolved by copying the anchored node
/// (the copy's top node carries the alias' position, the nodes inside it keep the positions
/// of the anchored original). Merge keys (`<<`) are not interpreted: they stay plain keys.
public indirect enum YAMLNode: Sendable, Equatable {
    /// How a scalar was written. Only `plain` scalars can mean null, booleans or numbers;
    /// all other styles are always text.
    public enum ScalarStyle: Sendable, Equatable, Hashable {
        case plain
        case singleQuoted
        case doubleQuoted
        /// `|` block scalar
        case literal
        /// `>` block scalar
        case folded

        public var isPlain: Bool { self == .plain }
    }

    case scalar(String, style: ScalarStyle, mark: YAMLMark)
    case sequence([YAMLNode], mark: YAMLMark)
    /// Key/value pairs in source order.
    case mapping([(key: YAMLNode, value: YAMLNode)], mark: YAMLMark)

    /// Where the node starts in the source (for a block mapping: its first key).
    public var mark: YAMLMark {
        switch self {
        case .scalar(_, _, let mark), .sequence(_, let mark), .mapping(_, let mark): mark
        }
    }

    /// The text of a scalar (any style), `nil` for a list or mapping.
    public var scalarValue: String? {
        if case .scalar(let text, _, _) = self { text } else { nil }
    }

    /// The style of a scalar, `nil` for a list or mapping.
    public var scalarStyle: ScalarStyle? {
        if case .scalar(_, let style, _) = self { style } else { nil }
    }

    /// The items of a sequence, `nil` otherwise.
    public var items: [YAMLNode]? {
        if case .sequence(let items, _) = self { items } else { nil }
    }

    /// The pairs of a mapping in source order, `nil` otherwise.
    public var pairs: [(key: YAMLNode, value: YAMLNode)]? {
        if case .mapping(let pairs, _) = self { pairs } else { nil }
    }

    /// The value of the first pair whose key is a scalar with exactly this text
    /// (any style). `nil` if this is not a mapping or there is no such key.
    public subscript(key: String) -> YAMLNode? {
        guard case .mapping(let pairs, _) = self else { return nil }
        return pairs.first { $0.key.scalarValue == key }?.value
    }

    /// A plain scalar `""`, `~`, `null`, `Null` or `NULL` (a quoted "null" is text).
    public var isNull: Bool {
        guard case .scalar(let text, .plain, _) = self else { return false }
        return Self.nullWords.contains(text)
    }

    /// What the node looks like, for error messages: "a mapping", "a list", "null",
    /// "a boolean", "a number" or "a text". Only plain scalars can be null, booleans or numbers.
    public var describedKind: String {
        switch self {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .scalar(let text, let style, _):
            guard style == .plain else { return "a text" }
            if Self.nullWords.contains(text) { return "null" }
            if Self.booleanWords.contains(text.lowercased()) { return "a boolean" }
            if Self.looksNumeric(text) { return "a number" }
            return "a text"
        }
    }

    public static func == (lhs: YAMLNode, rhs: YAMLNode) -> Bool {
        switch (lhs, rhs) {
        case let (.scalar(a, sa, ma), .scalar(b, sb, mb)):
            return a == b && sa == sb && ma == mb
        case let (.sequence(a, ma), .sequence(b, mb)):
            return ma == mb && a == b
        case let (.mapping(a, ma), .mapping(b, mb)):
            return ma == mb && a.count == b.count
                && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default:
            return false
        }
    }

    private static let nullWords: Set<String> = ["", "~", "null", "Null", "NULL"]
    private static let booleanWords: Set<String> = ["true", "false", "yes", "no"]

    private static func looksNumeric(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first,
              "0123456789+-.".unicodeScalars.contains(first)
        else { return false }
        return Int(text) != nil || Double(text) != nil
    }

    /// Equal ignoring positions (used to detect duplicate non-scalar keys).
    func hasSameContent(as other: YAMLNode) -> Bool {
        switch (self, other) {
        case let (.scalar(a, _, _), .scalar(b, _, _)):
            return a == b
        case let (.sequence(a, _), .sequence(b, _)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.hasSameContent(as: $1) }
        case let (.mapping(a, _), .mapping(b, _)):
            return a.count == b.count
                && zip(a, b).allSatisfy {
                    $0.key.hasSameContent(as: $1.key) && $0.value.hasSameContent(as: $1.value)
                }
        default:
            return false
        }
    }
}

/// A syntax or structure error in a YAML document.
public struct YAMLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, e.g. "mapping values are not allowed in this context" or
    /// "duplicate key 'topic' (first defined at line 4)".
    public var message: String
    /// Where it went wrong; `nil` when there is no position (empty file).
    public var mark: YAMLMark?

    public init(message: String, mark: YAMLMark?) {
        self.message = message
        self.mark = mark
    }

    /// "line 3, column 7: mapping values are not allowed in this context"
    public var description: String {
        if let mark { "\(mark): \(message)" } else { message }
    }
}

public enum YAMLDocument {
    /// Collections nested deeper than this are an error (keeps every recursive walk of
    /// the tree, including its deallocation, far away from a stack overflow).
    public static let maximumDepth = 200
    /// Resolving aliases may add at most this many nodes in total (stops "billion laughs").
    public static let maximumAliasExpansion = 1_000_000

    /// Parses exactly one document. An empty (or comments-only) text is an error
    /// ("the file is empty"), and so is a second document.
    public static func parse(_ text: String) throws(YAMLError) -> YAMLNode {
        try parse(bytes: Array(text.utf8))
    }

    /// Parses exactly one document from raw file contents (UTF-8, or UTF-16 with a BOM).
    /// Invalid UTF-8 and control characters are reported as errors with their position.
    public static func parse(bytes: [UInt8]) throws(YAMLError) -> YAMLNode {
        if bytes.isEmpty { throw YAMLError(message: "the file is empty", mark: nil) }
        let result: Result<YAMLNode, YAMLError> = bytes.withUnsafeBufferPointer { buffer in
            var builder = TreeBuilder(bytes: buffer)
            do throws(YAMLError) {
                return .success(try builder.run())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

// MARK: - libyaml event loop

private struct TreeBuilder: ~Copyable {
    /// An unfinished sequence or mapping.
    private struct Frame {
        var isMapping: Bool
        var mark: YAMLMark
        var anchor: String?
        var items: [YAMLNode] = []
        var pairs: [(key: YAMLNode, value: YAMLNode)] = []
        var pendingKey: YAMLNode?
        /// Text of scalar keys seen so far → where they were.
        var scalarKeys: [String: YAMLMark] = [:]
        /// Number of nodes in this subtree so far (itself included).
        var size = 1
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private let event: UnsafeMutablePointer<yaml_event_t>
    private var stack: [Frame] = []
    private var anchors: [String: (node: YAMLNode, size: Int)] = [:]
    private var aliasExpansion = 0
    private var root: YAMLNode?
    /// Where the text ends.
    private let end: YAMLMark

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        end = Self.markOfByte(at: bytes.count, in: bytes)
        parser = .allocate(capacity: 1)
        event = .allocate(capacity: 1)
        // Zeroed memory: yaml_event_delete is a no-op on it, so cleanup is always safe.
        UnsafeMutableRawPointer(parser).initializeMemory(
            as: UInt8.self, repeating: 0, count: MemoryLayout<yaml_parser_t>.size)
        UnsafeMutableRawPointer(event).initializeMemory(
            as: UInt8.self, repeating: 0, count: MemoryLayout<yaml_event_t>.size)
    }

    deinit {
        yaml_event_delete(event)
        yaml_parser_delete(parser)
        parser.deallocate()
        event.deallocate()
    }

    mutating func run() throws(YAMLError) -> YAMLNode {
        guard yaml_parser_initialize(parser) != 0 else {
            throw YAMLError(message: "out of memory", mark: nil)
        }
        yaml_parser_set_input_string(parser, bytes.baseAddress, bytes.count)

        var documents = 0
        while true {
            try nextEvent()
            let type = event.pointee.type
            let mark = position(event.pointee.start_mark)
            switch type {
            case YAML_STREAM_START_EVENT, YAML_DOCUMENT_END_EVENT:
                break
            case YAML_STREAM_END_EVENT:
                guard let root else { throw YAMLError(message: "the file is empty", mark: nil) }
                return root
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    throw YAMLError(
                        message: "expected a single document, found a second one "
                            + "(only one document is allowed in the file)",
                        mark: mark)
                }
            case YAML_SCALAR_EVENT:
                let data = event.pointee.data.scalar
                let text = String(
                    decoding: UnsafeBufferPointer(start: data.value, count: data.length),
                    as: UTF8.self)
                let node = YAMLNode.scalar(text, style: Self.style(data.style), mark: mark)
                try add(node, size: 1, anchor: Self.string(data.anchor))
            case YAML_ALIAS_EVENT:
                let name = Self.string(event.pointee.data.alias.anchor) ?? ""
                try addAlias(name, mark: mark)
            case YAML_SEQUENCE_START_EVENT:
                try push(Frame(
                    isMapping: false, mark: mark,
                    anchor: Self.string(event.pointee.data.sequence_start.anchor)))
            case YAML_MAPPING_START_EVENT:
                try push(Frame(
                    isMapping: true, mark: mark,
                    anchor: Self.string(event.pointee.data.mapping_start.anchor)))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                guard let frame = stack.popLast() else {
                    throw YAMLError(message: "unbalanced end of a collection", mark: mark)
                }
                let node: YAMLNode =
                    frame.isMapping
                    ? .mapping(frame.pairs, mark: frame.mark)
                    : .sequence(frame.items, mark: frame.mark)
                try add(node, size: frame.size, anchor: frame.anchor)
            default:
                break
            }
        }
    }

    /// Frees the previous event and parses the next one, turning libyaml's errors into YAMLError.
    private mutating func nextEvent() throws(YAMLError) {
        yaml_event_delete(event)
        guard yaml_parser_parse(parser, event) != 0 else { throw libyamlError() }
    }

    private mutating func push(_ frame: Frame) throws(YAMLError) {
        guard stack.count < YAMLDocument.maximumDepth else {
            throw YAMLError(
                message: "lists and mappings are nested more than "
                    + "\(YAMLDocument.maximumDepth) levels deep",
                mark: frame.mark)
        }
        stack.append(frame)
    }

    private mutating func addAlias(_ name: String, mark: YAMLMark) throws(YAMLError) {
        if let open = stack.last(where: { $0.anchor == name }) {
            throw YAMLError(
                message: "alias '*\(name)' refers to the node anchored at \(open.mark), "
                    + "which contains the alias",
                mark: mark)
        }
        guard let (node, size) = anchors[name] else {
            throw YAMLError(message: "unknown alias '*\(name)' (no earlier '&\(name)')", mark: mark)
        }
        aliasExpansion += size
        guard aliasExpansion <= YAMLDocument.maximumAliasExpansion else {
            throw YAMLError(
                message: "aliases expand to more than "
                    + "\(YAMLDocument.maximumAliasExpansion) nodes",
                mark: mark)
        }
        try add(Self.moved(node, to: mark), size: size, anchor: nil)
    }

    /// Puts a finished node into its parent (or makes it the root).
    private mutating func add(_ node: YAMLNode, size: Int, anchor: String?) throws(YAMLError) {
        if let anchor { anchors[anchor] = (node, size) }
        guard !stack.isEmpty else {
            root = node
            return
        }
        let top = stack.count - 1
        stack[top].size += size
        guard stack[top].isMapping else {
            stack[top].items.append(node)
            return
        }
        guard let key = stack[top].pendingKey else {
            try checkDuplicate(key: node, in: top)
            stack[top].pendingKey = node
            return
        }
        stack[top].pairs.append((key: key, value: node))
        stack[top].pendingKey = nil
    }

    private mutating func checkDuplicate(key: YAMLNode, in index: Int) throws(YAMLError) {
        if case .scalar(let text, _, let mark) = key {
            if let first = stack[index].scalarKeys.updateValue(mark, forKey: text) {
                throw YAMLError(
                    message: "duplicate key '\(Self.shortened(text))' "
                        + "(first defined at line \(first.line))",
                    mark: mark)
            }
        } else if let first = stack[index].pairs.first(where: { $0.key.hasSameContent(as: key) }) {
            throw YAMLError(
                message: "duplicate key (first defined at line \(first.key.mark.line))",
                mark: key.mark)
        }
    }

    // MARK: Errors

    private func libyamlError() -> YAMLError {
        let p = parser.pointee
        switch p.error {
        case YAML_MEMORY_ERROR:
            return YAMLError(message: "out of memory", mark: nil)
        case YAML_READER_ERROR:
            // The reader has no mark, only a byte offset into the input.
            var message = Self.string(p.problem) ?? "cannot read the input"
            if p.problem_value != -1 {
                let hex = String(UInt32(truncatingIfNeeded: p.problem_value), radix: 16, uppercase: true)
                message += " (0x\(hex.count % 2 == 1 ? "0" : "")\(hex))"
            }
            return YAMLError(message: message, mark: Self.markOfByte(at: Int(p.problem_offset), in: bytes))
        default:
            var message = Self.string(p.problem) ?? "invalid YAML"
            if let context = Self.string(p.context) {
                message += " (\(context) that started at \(position(p.context_mark)))"
            }
            return YAMLError(message: message, mark: position(p.problem_mark))
        }
    }

    /// Line and column of a byte offset in the (UTF-8) input.
    private static func markOfByte(at offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> YAMLMark {
        let end = min(max(offset, 0), bytes.count)
        var line = 1
        var lineStart = 0
        var index = 0
        while index < end {
            let byte = bytes[index]
            if byte == 0x0A || (byte == 0x0D && (index + 1 >= bytes.count || bytes[index + 1] != 0x0A)) {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }
        let prefix = UnsafeBufferPointer(rebasing: bytes[lineStart..<end])
        let column = String(decoding: prefix, as: UTF8.self).unicodeScalars.count + 1
        return YAMLMark(line: line, column: column)
    }

    // MARK: Helpers

    /// A libyaml mark as a person reads it. At the end of a text whose last line has no line
    /// break, libyaml moves on to the line after it, which the file does not have: that is the
    /// text's end.
    private func position(_ mark: yaml_mark_t) -> YAMLMark {
        let position = YAMLMark(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
        return position.line > end.line ? end : position
    }

    private static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: UnsafePointer($0)) }
    }

    private static func style(_ style: yaml_scalar_style_t) -> YAMLNode.ScalarStyle {
        switch style {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: .singleQuoted
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: .doubleQuoted
        case YAML_LITERAL_SCALAR_STYLE: .literal
        case YAML_FOLDED_SCALAR_STYLE: .folded
        default: .plain
        }
    }

    /// The copy an alias stands for: the anchored node, positioned at the alias.
    private static func moved(_ node: YAMLNode, to mark: YAMLMark) -> YAMLNode {
        switch node {
        case .scalar(let text, let style, _): .scalar(text, style: style, mark: mark)
        case .sequence(let items, _): .sequence(items, mark: mark)
        case .mapping(let pairs, _): .mapping(pairs, mark: mark)
        }
    }

    private static func shortened(_ text: String) -> String {
        text.count > 60 ? String(text.prefix(57)) + "..." : text
    }
}
