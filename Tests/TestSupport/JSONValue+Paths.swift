import FlowCore
import Testing

/// The last `{"content": …, "widget": …}` line of `replay --final`'s output: the document the widget
/// would show. The accounts lines that follow it are not documents.
public func finalDocument(_ output: String) throws -> JSONValue {
    try JSONValue(parsing: String(try #require(output.split(separator: "\n").last(where: { $0.contains(#""content""#) }))))
}

/// The documents a widget showed, push by push: each patch applied to the one before.
public func documents(_ lines: [JSONValue]) -> [JSONValue] {
    var shown = JSONValue.null
    return lines.compactMap { line in
        guard let patch = line["patch"]?["content"] else { return nil }
        shown = MergePatch.apply(patch, to: shown)
        return shown
    }
}

extension JSONValue {
    /// The value at `inputs[0].rate`-style paths.
    public func value(at path: String) -> JSONValue? {
        var current: JSONValue? = self
        for part in path.split(separator: ".") {
            if let open = part.firstIndex(of: "["), let index = Int(part[part.index(after: open)..<part.index(before: part.endIndex)]) {
                current = current?[String(part[..<open])]?.arrayValue.flatMap { index < $0.count ? $0[index] : nil }
            } else {
                current = current?[String(part)]
            }
        }
        return current
    }

    /// A copy with `value` at the key path, which must lead through objects.
    public func setting(_ path: [String], to value: JSONValue) -> JSONValue {
        guard let key = path.first, case .object(var members) = self else { return value }
        members[key] = (members[key] ?? .object([:])).setting(Array(path.dropFirst()), to: value)
        return .object(members)
    }
}
