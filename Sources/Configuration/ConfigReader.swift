import FlowCore

/// One thing wrong with a config file, with the key path and the line it concerns.
public struct ConfigProblem: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int?
    public var message: String

    public var description: String {
        let place = line.map { "line \($0): " } ?? ""
        return path.isEmpty ? "\(place)\(message)" : "\(place)\(path): \(message)"
    }
}

/// Every problem of a config file at once, so a user fixes them in one go.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public var file: String
    public var problems: [ConfigProblem]

    public var description: String {
        problems.map { "\(file): \($0)" }.joined(separator: "\n")
    }
}

/// Collects the problems of a config instead of stopping at the first, so a user fixes them in one
/// go. The typed reads are `ConfigValue`'s, the keys of a mapping `MappingReader`'s.
package final class ConfigReader {
    private(set) var problems: [ConfigProblem] = []

    func report(_ path: String, _ node: YAMLNode?, _ message: String) {
        problems.append(ConfigProblem(path: path, line: node?.mark.line, message: message))
    }

    /// A year: any longer duration is a typo. The timers count in whole seconds, milliseconds or
    /// nanoseconds, which `1e19` seconds (or `1e308d`, not even a finite number) would not fit.
    static let longestSeconds = 365 * 86_400.0

    /// `90s`, `5m`, `1h`, `250ms`, `1d` or a plain number of seconds, in seconds; nil for anything
    /// else. The config's durations and the command line's (`--listen 60s`) read alike.
    package static func seconds(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            if let value = Double(text.dropLast(suffix.count).trimmingSpaces), value.isFinite, value >= 0 {
                return value * factor
            }
        }
        if let value = Double(text), value.isFinite, value >= 0 { return value }
        return nil
    }
}

/// A mapping being read: which keys were taken, which are left. Keys a mapping has but nobody
/// asked for are reported as unknown (a typo such as `stale_afer` must not be silently ignored).
struct MappingReader {
    /// The mapping itself, with its path.
    let mapping: ConfigNode
    let pairs: [(key: YAMLNode, value: YAMLNode)]
    private var taken: Set<String> = []

    init(_ mapping: ConfigNode, pairs: [(key: YAMLNode, value: YAMLNode)]) {
        self.mapping = mapping
        self.pairs = pairs
    }

    /// The value under `key`, at its key path; a null value counts as absent.
    mutating func field(_ key: String) -> ConfigNode? {
        taken.insert(key)
        guard let value = pairs.first(where: { $0.key.scalarValue == key })?.value, !value.isNull else { return nil }
        return ConfigNode(value, path: mapping.childPath(key), reader: mapping.reader)
    }

    mutating func required(_ key: String) -> ConfigNode? {
        guard let value = field(key) else {
            mapping.report(at: key, "is required")
            return nil
        }
        return value
    }

    mutating func text(_ key: String) -> ConfigValue<String>? { field(key)?.text() }
    mutating func number(_ key: String) -> ConfigValue<Double>? { field(key)?.number() }
    mutating func flag(_ key: String) -> ConfigValue<Bool>? { field(key)?.flag() }
    mutating func duration(_ key: String) -> ConfigValue<Double>? { field(key)?.duration() }

    mutating func choice<T: RawRepresentable & CaseIterable>(_ key: String, as type: T.Type) -> ConfigValue<T>? where T.RawValue == String {
        field(key)?.choice(type)
    }

    /// Text limited to `limit` characters as a person counts them (the widget spec's limits).
    mutating func text(_ key: String, limit: Int) -> ConfigValue<String>? {
        guard let text = text(key) else { return nil }
        if text.value.count > limit {
            text.report("'\(text.value)' is longer than \(limit) characters, which the widget rejects")
        }
        return text
    }

    /// A color the widget takes (a name or hex, `FlowNode.isColor`): a node's, and the shared
    /// accent, background and text colors, checked alike.
    mutating func color(_ key: String) -> ConfigValue<String>? {
        guard let color = text(key) else { return nil }
        if !FlowNode.isColor(color.value) {
            color.report("'\(PrintableText.escaped(color.value))' is not a color the widget takes: a name (yellow, mint) or hex (#FFCC00)")
        }
        return color
    }

    /// Takes every key: nothing in this mapping is reported as unknown.
    mutating func ignoreRest() {
        for (key, _) in pairs { if let name = key.scalarValue { taken.insert(name) } }
    }

    /// Reports the keys nobody asked for.
    func finish() {
        for (key, _) in pairs {
            guard let name = key.scalarValue else {
                mapping.reader.report(mapping.path, key, "keys must be texts, found \(key.describedKind)")
                continue
            }
            if !taken.contains(name) {
                let known = taken.sorted().joined(separator: ", ")
                mapping.reader.report(mapping.childPath(name), key, "unknown key (known here: \(known))")
            }
        }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}

extension String {
    var trimmed: String { String(Substring(self).trimmingSpaces) }
}
