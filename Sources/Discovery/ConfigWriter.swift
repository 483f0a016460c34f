import FlowCore

/// The broker a config reads from: its `mqtt:` section.
public struct BrokerSettings: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var username: String?
    /// The environment variable that holds the password (never the password itself).
    public var passwordEnv: String?

    public init(host: String, port: Int, username: String? = nil, passwordEnv: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.passwordEnv = passwordEnv
    }

    /// `{host: …, port: …, username: …, password_env: …}`.
    var mapping: String {
        var fields = ["host: \(YAMLScalar.text(host))", "port: \(port)"]
        if let username { fields.append("username: \(YAMLScalar.text(username))") }
        if let passwordEnv { fields.append("password_env: \(YAMLScalar.text(passwordEnv))") }
        return "{\(fields.joined(separator: ", "))}"
    }
}

/// How much was heard before the config was written, for its header.
public struct Heard: Sendable, Equatable {
    public var messages: Int
    public var topics: Int
    public var seconds: Double

    public init(messages: Int, topics: Int, seconds: Double) {
        self.messages = messages
        self.topics = topics
        self.seconds = seconds
    }
}

/// Writes a setup plan as a config file: every source with a comment saying what the device
/// publishes there (unit, sign, why the sign is flipped or not), the widget, and at the end what
/// was left out or could not be placed.
struct ConfigWriter {
    let plan: SetupPlan
    /// Where the messages came from: the header and the `mqtt:` section.
    let broker: BrokerSettings
    let heard: Heard

    /// Comments are kept to this width where the words allow.
    static let width = 100

    var text: String {
        var lines: [String] = []
        let duration = JSONValue.format(heard.seconds.rounded())
        lines += Self.wrap(
            "flowbridge config written by `flowbridge discover` from \(heard.messages) messages on \(heard.topics) topics heard in \(duration) s on \(broker.host):\(broker.port). Each choice is explained beside it; what could not be placed is listed at the end.",
            first: "# ")
        lines += ["#", "# Check it, then watch the signs for a minute:", "#   flowbridge check --config FILE", "#   flowbridge check --config FILE --listen 60s", "#", "# Recognized:"]
        lines += plan.devices.map { "#   - " + YAMLScalar.comment($0) }
        lines += ["", "mqtt: \(broker.mapping)"]
        if !plan.keepalives.isEmpty {
            lines += ["", "# Victron Venus OS publishes only while a client asks, at least every 60 s.", "keepalive:"]
            lines += plan.keepalives.map { "  - {topic: \(YAMLScalar.text($0)), interval: \(Discovery.keepaliveIntervalSeconds)s}" }
        }
        var names = SourceNames(retainedOnly: plan.retainedOnly)
        var sourceLines: [String] = []
        /// The node's fields as the widget config writes them, its sources named (and written) on the way.
        func entry(_ node: NodeDraft, icon: String, color: String?) -> String {
            let rate = node.terms.map { term in (term.negated ? "-" : "") + names.name(for: term.source, lines: &sourceLines) }
            var fields = ["name: \(YAMLScalar.text(node.name))", "rate: \(rate.count == 1 ? rate[0] : "[\(rate.joined(separator: ", "))]")"]
            if let level = node.level { fields.append("level: \(names.name(for: level, lines: &sourceLines))") }
            switch node.total {
            case .word(let word): fields.append("total: \(word)")
            case .counter(let draft): fields.append("total: {counter: \(names.name(for: draft, lines: &sourceLines))}")
            case .daily(let draft): fields.append("total: {daily: \(names.name(for: draft, lines: &sourceLines))}")
            }
            fields.append("icon: \(icon)")
            if let color { fields.append("color: \(color)") }
            return "{\(fields.joined(separator: ", "))}"
        }
        var flow: [String] = []
        if !plan.production.isEmpty {
            flow.append("      inputs:")
            flow += plan.production.map { "        - " + entry($0, icon: "sun.max.fill", color: "yellow") }
        }
        if let battery = plan.battery {
            flow += ["      # + filling, − draining.", "      storage: " + entry(battery, icon: "battery.75percent", color: "green")]
        }
        if let grid = plan.grid {
            flow += ["      # + importing, − exporting.", "      exchange: " + entry(grid, icon: "bolt.fill", color: "cyan")]
        }
        if plan.derivesOutput {
            flow += Self.wrap("No meter of the home's own draw: it is derived as Σ inputs + exchange − storage, at least 0.", first: "      # ")
            flow.append("      output: {name: Home, rate: balance, total: integrate, icon: house.fill}")
        }
        lines += ["", "sources:"] + sourceLines
        lines += ["", "widgets:", "  power:", "    template: flow", "    label: Power", "    unit: W", "    flow:"] + flow
        if !plan.leftOut.isEmpty {
            lines += ["", "# Heard and left out:"]
            for item in plan.leftOut.prefix(Self.listLimit) {
                lines += Self.wrap("\(item.topic): \(item.why)", first: "# - ", rest: "#   ")
                if let suggestion = item.suggestion {
                    lines.append("#     " + YAMLScalar.comment(suggestion.configLine))
                }
            }
            if plan.leftOut.count > Self.listLimit { lines.append("# … and \(plan.leftOut.count - Self.listLimit) more") }
        }
        if !plan.unplaced.isEmpty {
            lines += ["", "# Not placed: numbers from devices flowbridge does not know that may be readings; add them by hand"]
            lines.append("# if they belong (topic, and the JSON fields that look like readings):")
            let shown = plan.unplaced.prefix(Self.listLimit)
            lines += shown.map { "# - " + YAMLScalar.comment($0.description) }
            if plan.unplaced.count > shown.count { lines.append("# … and \(plan.unplaced.count - shown.count) more") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Readings left out or not placed beyond this many are counted, not listed.
    static let listLimit = 40

    /// Comment lines of at most `width` characters (a single long word stays whole): the first
    /// starts with `first`, the others with `rest` (by default the same). The text is escaped
    /// first (it names what was heard), so each line stays a comment.
    static func wrap(_ text: String, first: String, rest: String? = nil) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in YAMLScalar.comment(text).split(separator: " ") {
            let prefix = lines.isEmpty ? first : (rest ?? first)
            if !current.isEmpty, prefix.count + current.count + 1 + word.count > width {
                lines.append(prefix + current)
                current = ""
            }
            current += (current.isEmpty ? "" : " ") + word
        }
        if !current.isEmpty { lines.append((lines.isEmpty ? first : (rest ?? first)) + current) }
        return lines
    }
}

extension SetupPlan {
    /// The config text for this plan.
    public func configText(broker: BrokerSettings, heard: Heard) -> String {
        ConfigWriter(plan: self, broker: broker, heard: heard).text
    }
}

/// Source names of a config, each once: a draft reads under its own name, or the name plus a number
/// when another draft has it; the same draft used twice is one source.
struct SourceNames {
    /// Topics heard only as retained copies: their comment says so.
    let retainedOnly: Set<String>
    var taken: [String: SourceDraft] = [:]

    /// The name for `draft`, writing its line (and comment) into `lines` the first time.
    mutating func name(for draft: SourceDraft, lines: inout [String]) -> String {
        let base = Self.clean(draft.name)
        var candidate = base
        var number = 2
        while let other = taken[candidate] {
            if Self.sameSource(other, draft) { return candidate }
            candidate = "\(base)_\(number)"
            number += 1
        }
        taken[candidate] = draft
        let stale = retainedOnly.contains(draft.topic) ? " (heard only as the broker's retained copy: does the device still publish?)" : ""
        lines += ConfigWriter.wrap(draft.note + stale, first: "  # ")
        lines.append("  \(candidate): \(Self.mapping(draft))")
        return candidate
    }

    static func sameSource(_ a: SourceDraft, _ b: SourceDraft) -> Bool {
        a.topic == b.topic && a.json == b.json && a.unit == b.unit && a.invert == b.invert && a.sumsMatches == b.sumsMatches
    }

    /// `{topic: …, json: …, unit: kWh, invert: true, stale_after: 11m, combine: sum}`.
    static func mapping(_ draft: SourceDraft) -> String {
        var fields = ["topic: \(YAMLScalar.text(draft.topic))"]
        if let json = draft.json { fields.append("json: \(YAMLScalar.text(json))") }
        if draft.unit != .watt { fields.append("unit: \(YAMLScalar.text(draft.unit.rawValue))") }
        if draft.invert { fields.append("invert: true") }
        if let stale = draft.staleAfter { fields.append("stale_after: \(stale)") }
        if draft.sumsMatches { fields.append("combine: sum") }
        return "{\(fields.joined(separator: ", "))}"
    }

    /// A name the config takes: letters, digits and `_`, not empty, not `balance`. A letter that
    /// carries a character to escape (a zero-width joiner) is no letter here: the name is a plain key.
    static func clean(_ name: String) -> String {
        let kept = String(name.lowercased().map { ($0.isLetter || $0.isNumber) && !$0.unicodeScalars.contains(where: PrintableText.mustEscape) ? $0 : "_" })
        if kept.isEmpty || kept == "balance" { return "source" }
        return kept
    }
}

extension SourceDraft {
    /// The config line that adds this source: `balcony: {topic: tele/plug/SENSOR, json: ENERGY.Power}`.
    public var configLine: String { "\(SourceNames.clean(name)): \(SourceNames.mapping(self))" }
}

/// Texts as the config writes them. Whoever may publish on the broker names its topics, devices
/// and JSON keys, and discovery writes them down: each must read back as the same text, and none
/// may end a comment or a line early. libyaml takes NEL, LS and PS (U+0085, U+2028, U+2029) as
/// line breaks beside CR and LF, and refuses other control characters outright; a BOM or a
/// bidirectional override makes a line show other than it reads. Each of these is written as an
/// escape (`\u2028`), in values and comments alike.
package enum YAMLScalar {
    /// A scalar of a flow mapping: plain where YAML reads it back as the same text, else
    /// double-quoted, with escapes.
    static func text(_ value: String) -> String {
        isPlain(value) ? value : quoted(value)
    }

    /// Comment text that stays one line and shows what it holds: the characters that must not
    /// stand raw escaped as in a double-quoted scalar, the rest as it is (a comment is for a person:
    /// `"` and `\` need no escape there).
    package static func comment(_ text: String) -> String { escaped(text, quoting: false) }

    static let special: Set<Character> = [":", "#", ",", "[", "]", "{", "}", "&", "*", "!", "|", ">", "'", "\"", "%", "@", "`", "\\"]
    /// Words YAML (1.1 and 1.2) reads as something other than text.
    static let reserved: Set<String> = ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"]

    static func isPlain(_ value: String) -> Bool {
        guard let first = value.first, let last = value.last, !first.isWhitespace, !last.isWhitespace else { return false }
        if first == "-" || first == "?" { return false }
        if value.contains(where: special.contains) || value.unicodeScalars.contains(where: PrintableText.mustEscape) { return false }
        if reserved.contains(value.lowercased()) || Double(value) != nil { return false }
        return true
    }

    static func quoted(_ value: String) -> String { "\"" + escaped(value, quoting: true) + "\"" }

    /// The one escaping of the writer (`PrintableText`'s), and in a double-quoted scalar
    /// (`quoting`) `\"` and `\\`.
    static func escaped(_ text: String, quoting: Bool) -> String {
        PrintableText.escaped(text, backslashed: quoting ? ["\"", "\\"] : [])
    }
}
