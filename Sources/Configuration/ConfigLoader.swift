import FlowCore
import Platform

/// Turns the YAML tree into a `DaemonConfig`, checking names, units, slots and references, and,
/// with a context, what the config refers to outside itself. Each section has a file of its own
/// (`ConfigLoader+Broker.swift`, `+Sources`, `+Widgets`, `+Sinks`, `+StateAndTimeZone`); this one
/// reads the top level, each key once, and hands each section what it needs of the others.
struct ConfigLoader {
    let reader: ConfigReader
    var context: ConfigContext?
    /// The config file's path (a state file must not be it).
    var file: String

    func load(_ root: YAMLNode) -> DaemonConfig? {
        guard var top = ConfigNode(root, path: "", reader: reader).mapping() else { return nil }
        let timezone = loadTimeZone(top.text("timezone"))
        let broker = top.field("mqtt").map(loadMQTT) ?? BrokerSection()
        let keepalives = top.field("keepalive").map(loadKeepalives) ?? []
        let stateFile = loadStateFile(top.text("state_file"))
        let bookFile = loadBookFile(top.text("book_file"))
        let billingDayNode = top.number("billing_day")
        let billingDay = loadBillingDay(billingDayNode)
        let sources = top.required("sources").map(loadSources) ?? []
        let widgets = top.required("widgets").map { loadWidgets($0, sources: sources) }
        var flow = widgets?.flow ?? FlowConfig(sources: sources, widgets: [])
        flow.billingDay = billingDay
        if billingDayNode == nil {
            for progress in widgets?.billingPeriods ?? [] {
                progress.report(at: "period", "billing counts from the day the meter is read: say which with billing_day: (1–28) at the top of the config")
            }
        }
        let tariff = top.field("tariff")
        flow.tariff = tariff.flatMap { loadTariff($0, sources: sources, flow: flow) }
        if let widgets { checkTariff(for: widgets, written: tariff != nil) }
        var mqtt = broker.settings
        mqtt.maximumPayloadBytes = Self.maximumPayloadBytes(of: sources)
        let output = top.field("output").map { loadOutput($0, mqtt: &mqtt, topicPrefix: broker.topicPrefix, flow: flow) }
        let pushes = (widgets?.pushes ?? []).compactMap { loadPush(widget: $0.widget, $0.push) }
        let window = top.field("http").flatMap(loadWindow)
        top.finish()
        return DaemonConfig(
            timezone: timezone, mqtt: mqtt, keepalives: keepalives, flow: flow, stateFile: stateFile, pushes: pushes,
            output: output ?? OutputSettings(), window: window, bookFile: bookFile, billingDay: billingDay)
    }

    /// A secret (the broker password, a widget API token) from `<key>_file` (a systemd credential
    /// when relative) or `<key>_env`, never from the config itself. Trailing line breaks are not
    /// part of it (an editor's last newline); an empty file is a problem, since a `LoadCredential=`
    /// file that is missing arrives as the unit's empty default. So is a control character left
    /// inside (a second line, a tab, an escape): it would go as it is into an `Authorization:`
    /// header or a CONNECT packet, where a line break starts another header. Problems name the key
    /// and line, never the secret.
    func loadSecret(file: ConfigValue<String>?, variable: ConfigValue<String>?, context: ConfigContext) -> Secret? {
        if let file {
            guard let path = context.credentialPath(file.value) else {
                file.report("'\(file.value)' is a credential name, and $CREDENTIALS_DIRECTORY is unset (systemd sets it for LoadCredential=); outside systemd, give the file's full path, or set CREDENTIALS_DIRECTORY to the folder that holds it")
                return nil
            }
            do {
                var text = String(decoding: try FileIO.read(path, limit: 65_536), as: UTF8.self)
                while text.last == "\n" || text.last == "\r" { text.removeLast() }
                if text.isEmpty {
                    file.report("\(path) is empty (a LoadCredential= file that is missing arrives as the unit's empty default)")
                    return nil
                }
                if let problem = Self.controlCharacterProblem(text) {
                    file.report("\(path) \(problem)")
                    return nil
                }
                return Secret(text)
            } catch {
                file.report("cannot read \(error)")
                return nil
            }
        }
        if let variable {
            guard let value = context.environment[variable.value] else {
                variable.report("the environment variable \(variable.value) is not set")
                return nil
            }
            if let problem = Self.controlCharacterProblem(value) {
                variable.report("the environment variable \(variable.value) \(problem)")
                return nil
            }
            return Secret(value)
        }
        return nil
    }

    /// Where a secret holds a control character (C0, DEL or C1), in words that do not show it:
    /// "holds a line break after character 12 (a second line?)".
    static func controlCharacterProblem(_ secret: String) -> String? {
        guard let index = secret.unicodeScalars.firstIndex(where: { $0.properties.generalCategory == .control }) else { return nil }
        let scalar = secret.unicodeScalars[index]
        let position = secret.unicodeScalars.distance(from: secret.unicodeScalars.startIndex, to: index)
        if scalar == "\n" || scalar == "\r" {
            return "holds a line break after character \(position): a secret is one line (a second line? only a trailing line break is trimmed)"
        }
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "holds the control character U+\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex) after character \(position): a secret is one line of printable text"
    }
}
