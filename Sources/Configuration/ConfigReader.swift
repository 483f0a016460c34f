import FlowCore
import Persistence
import Platform

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

/// Reads typed values out of a YAML mapping, remembering the key path and collecting problems
/// instead of stopping at the first. Keys a mapping has but nobody asked for are reported as unknown
/// (a typo such as `stale_afer` must not be silently ignored).
package final class ConfigReader {
    private(set) var problems: [ConfigProblem] = []

    func report(_ path: String, _ node: YAMLNode?, _ message: String) {
        problems.append(ConfigProblem(path: path, line: node?.mark.line, message: message))
    }

    /// A mapping's pairs by key text, checking that it is a mapping.
    func mapping(_ node: YAMLNode, _ path: String) -> MappingReader? {
        guard let pairs = node.pairs else {
            report(path, node, "expected a mapping, found \(node.describedKind)")
            return nil
        }
        return MappingReader(reader: self, node: node, pairs: pairs, path: path)
    }

    func text(_ node: YAMLNode, _ path: String) -> String? {
        guard let text = node.scalarValue, !node.isNull else {
            report(path, node, "expected a text, found \(node.describedKind)")
            return nil
        }
        return text
    }

    func number(_ node: YAMLNode, _ path: String) -> Double? {
        guard let text = node.scalarValue, node.scalarStyle == .plain, let value = Double(text), value.isFinite else {
            report(path, node, "expected a number, found \(node.describedKind)")
            return nil
        }
        return value
    }

    func flag(_ node: YAMLNode, _ path: String) -> Bool? {
        switch node.scalarStyle == .plain ? node.scalarValue?.lowercased() : nil {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            report(path, node, "expected true or false, found \(node.describedKind)")
            return nil
        }
    }

    /// `90s`, `5m`, `1h`, `250ms`, or a plain number of seconds.
    func duration(_ node: YAMLNode, _ path: String) -> Double? {
        guard let text = node.scalarValue, !node.isNull else {
            report(path, node, "expected a duration such as 90s or 5m, found \(node.describedKind)")
            return nil
        }
        guard let seconds = Self.seconds(text) else {
            report(path, node, "'\(text)' is not a duration (write e.g. 90s, 5m, 1h)")
            return nil
        }
        guard seconds <= Self.longestSeconds else {
            report(path, node, "'\(text)' is longer than 365d, the longest duration the config takes")
            return nil
        }
        return seconds
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

    /// One of a fixed set of words.
    func choice<T: RawRepresentable & CaseIterable>(_ node: YAMLNode, _ path: String, as: T.Type) -> T? where T.RawValue == String {
        guard let text = text(node, path) else { return nil }
        if let value = T(rawValue: text) { return value }
        report(path, node, "'\(text)' is not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
        return nil
    }
}

/// A mapping being read: which keys were taken, which are left.
struct MappingReader {
    let reader: ConfigReader
    let node: YAMLNode
    let pairs: [(key: YAMLNode, value: YAMLNode)]
    let path: String
    private var taken: Set<String> = []

    init(reader: ConfigReader, node: YAMLNode, pairs: [(key: YAMLNode, value: YAMLNode)], path: String) {
        self.reader = reader
        self.node = node
        self.pairs = pairs
        self.path = path
    }

    func childPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The value under `key`; a null value counts as absent.
    mutating func value(_ key: String) -> YAMLNode? {
        taken.insert(key)
        guard let value = pairs.first(where: { $0.key.scalarValue == key })?.value, !value.isNull else { return nil }
        return value
    }

    mutating func required(_ key: String) -> YAMLNode? {
        guard let value = value(key) else {
            reader.report(childPath(key), node, "is required")
            return nil
        }
        return value
    }

    mutating func text(_ key: String) -> String? { value(key).flatMap { reader.text($0, childPath(key)) } }
    mutating func number(_ key: String) -> Double? { value(key).flatMap { reader.number($0, childPath(key)) } }
    mutating func flag(_ key: String) -> Bool? { value(key).flatMap { reader.flag($0, childPath(key)) } }
    mutating func duration(_ key: String) -> Double? { value(key).flatMap { reader.duration($0, childPath(key)) } }

    /// Text limited to `limit` characters as a person counts them (the widget spec's limits).
    mutating func text(_ key: String, limit: Int) -> String? {
        guard let text = text(key) else { return nil }
        if text.count > limit {
            reader.report(childPath(key), value(key), "'\(text)' is longer than \(limit) characters, which the widget rejects")
        }
        return text
    }

    /// Takes every key: nothing in this mapping is reported as unknown.
    mutating func ignoreRest() {
        for (key, _) in pairs { if let name = key.scalarValue { taken.insert(name) } }
    }

    /// Reports the keys nobody asked for.
    func finish() {
        for (key, _) in pairs {
            guard let name = key.scalarValue else {
                reader.report(path, key, "keys must be texts, found \(key.describedKind)")
                continue
            }
            if !taken.contains(name) {
                let known = taken.sorted().joined(separator: ", ")
                reader.report(childPath(name), key, "unknown key (known here: \(known))")
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
