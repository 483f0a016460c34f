/// A value read from the config together with where it was written: its YAML node (for the line)
/// and its key path. A loader checks the value and reports against it, `host.report("must be …")`,
/// so each key is spelled once, where it is read, and every problem with a value carries the same
/// path and line as the value itself.
struct ConfigValue<Value> {
    let value: Value
    let node: YAMLNode
    let path: String
    let reader: ConfigReader

    /// A problem with this value, at its key path and line.
    func report(_ message: String) {
        reader.report(path, node, message)
    }

    /// A problem with the key `key` under this value, on this value's line: for what is missing
    /// from a mapping, or what two of its keys say together.
    func report(at key: String, _ message: String) {
        reader.report(childPath(key), node, message)
    }

    func childPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The same place holding another value: what a typed read makes of the node.
    func holding<Other>(_ other: Other) -> ConfigValue<Other> {
        ConfigValue<Other>(value: other, node: node, path: path, reader: reader)
    }
}

/// A node of the config with its key path: what the loaders read typed values from.
typealias ConfigNode = ConfigValue<YAMLNode>

extension ConfigValue where Value == YAMLNode {
    init(_ node: YAMLNode, path: String, reader: ConfigReader) {
        self.init(value: node, node: node, path: path, reader: reader)
    }

    /// A mapping being read, or nil (and a problem) for anything else.
    func mapping() -> MappingReader? {
        guard let pairs = node.pairs else {
            report("expected a mapping, found \(node.describedKind)")
            return nil
        }
        return MappingReader(self, pairs: pairs)
    }

    /// The pairs of a mapping whose keys are texts, each value at its key's path; the key comes
    /// with that path too, for problems with the name itself. Nil for anything but a mapping.
    var entries: [(key: ConfigValue<String>, value: ConfigNode)]? {
        node.pairs?.compactMap { key, value in
            guard let name = key.scalarValue else { return nil }
            let path = childPath(name)
            return (ConfigValue<String>(value: name, node: key, path: path, reader: reader), ConfigNode(value, path: path, reader: reader))
        }
    }

    /// The items of a list, each at `path[index]`; nil for anything but a list.
    var items: [ConfigNode]? {
        node.items?.enumerated().map { index, item in ConfigNode(item, path: "\(path)[\(index)]", reader: reader) }
    }

    /// This node as item `index` of a list (a single item written without the list).
    func asItem(_ index: Int) -> ConfigNode { ConfigNode(node, path: "\(path)[\(index)]", reader: reader) }

    func text() -> ConfigValue<String>? {
        guard let text = node.scalarValue, !node.isNull else {
            report("expected a text, found \(node.describedKind)")
            return nil
        }
        return holding(text)
    }

    func number() -> ConfigValue<Double>? {
        guard let text = node.scalarValue, node.scalarStyle == .plain, let value = Double(text), value.isFinite else {
            report("expected a number, found \(node.describedKind)")
            return nil
        }
        return holding(value)
    }

    func flag() -> ConfigValue<Bool>? {
        switch node.scalarStyle == .plain ? node.scalarValue?.lowercased() : nil {
        case "true", "yes", "on": return holding(true)
        case "false", "no", "off": return holding(false)
        default:
            report("expected true or false, found \(node.describedKind)")
            return nil
        }
    }

    /// `90s`, `5m`, `1h`, `250ms`, or a plain number of seconds; in seconds.
    func duration() -> ConfigValue<Double>? {
        guard let text = node.scalarValue, !node.isNull else {
            report("expected a duration such as 90s or 5m, found \(node.describedKind)")
            return nil
        }
        guard let seconds = ConfigReader.seconds(text) else {
            report("'\(text)' is not a duration (write e.g. 90s, 5m, 1h)")
            return nil
        }
        guard seconds <= ConfigReader.longestSeconds else {
            report("'\(text)' is longer than 365d, the longest duration the config takes")
            return nil
        }
        return holding(seconds)
    }

    /// One of a fixed set of words.
    func choice<T: RawRepresentable & CaseIterable>(_: T.Type) -> ConfigValue<T>? where T.RawValue == String {
        guard let text = text() else { return nil }
        if let value = T(rawValue: text.value) { return holding(value) }
        report("'\(text.value)' is not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
        return nil
    }
}
