import Configuration
import Delivery
import FlowCore
import Persistence
import Platform
import Runtime

/// Where `check` says the pushes go: the widget API of each widget (its URL without secrets), and
/// `output:`; a config without any sink gets a warning.
extension ConfigSummary {
    func pushLines(widget: String) -> [String] {
        guard let push = config.pushes.first(where: { $0.widget == widget }) else { return [] }
        let api = push.api
        let token: String
        if let file = push.tokenFile {
            token = file.hasPrefix("/") ? "token from \(file)" : "token from the credential \(file) ($CREDENTIALS_DIRECTORY)"
        } else {
            token = "token from $\(push.tokenEnv ?? "")"
        }
        let transport: String
        if !api.url.hasPrefix("https://") {
            transport = "plain HTTP: the token travels unencrypted"
        } else if api.insecure {
            transport = "TLS without certificate verification (insecure)"
        } else {
            transport = "TLS verified against \(api.caFile ?? "the system's certificates")"
        }
        let body = api.bodyKey.isEmpty ? "the document itself" : "{\"\(api.bodyKey)\": …}"
        return [
            "  push to \(api.displayURL)",
            "      \(api.replaceMethod) the whole document first and after any doubt, then \(api.patchMethod) merge patches; body \(body)",
            "      \(token); \(transport)",
            "      timeouts \(JSONValue.format(api.connectTimeoutSeconds))s to connect, \(JSONValue.format(api.timeoutSeconds))s in all; retries \(JSONValue.format(api.retry.minSeconds))s … \(JSONValue.format(api.retry.maxSeconds))s apart"
                + (api.headers.isEmpty ? "" : "; headers \(api.headers.map(\.name).joined(separator: ", "))"),
        ]
    }

    var outputLines: [String] {
        if !config.hasSink {
            return ["", "warning: no sink: \(DaemonConfig.noSinkWarning); run --dry-run prints them"]
        }
        return (config.output.stdout ? ["", "output: standard output (NDJSON)"] : []) + mqttLines
    }

    /// `output.mqtt`: the topics of every widget, the status, and the Home Assistant sensors with
    /// the entity ids they get (with a tariff, each priced widget's money and prices too).
    var mqttLines: [String] {
        guard let settings = config.output.mqtt else { return [] }
        let retained = settings.retain ? "retained" : "not retained"
        var lines = [
            "", "output: MQTT, through flowbridge's connection to \(config.mqtt.host):\(config.mqtt.port)",
            "  \(settings.statusTopic): online / offline (retained; the last will)",
        ]
        for widget in config.flow.widgetNames {
            lines.append("  \(settings.contentTopic(widget)): the whole content after every push (\(retained), again at every connect)")
            lines.append("  \(settings.patchTopic(widget)): each push's merge patch")
        }
        guard let homeAssistant = settings.homeAssistant else { return lines }
        let discovery = HomeAssistantDiscovery(flow: config.flow, settings: settings, homeAssistant: homeAssistant, software: Flowbridge.version)
        lines.append("  Home Assistant: device \"\(discovery.deviceName)\", discovery configs under \(homeAssistant.discoveryPrefix)/sensor/\(discovery.nodeID)/ (announced again when \(homeAssistant.statusTopic) says online)")
        for widget in discovery.widgets {
            lines.append("    from \(settings.sensorsTopic(widget)) (\(retained)):")
            let sensors = discovery.sensors.filter { $0.widget == widget }
            let width = sensors.map { discovery.uniqueID($0).count }.max() ?? 0
            for sensor in sensors {
                let id = "sensor." + discovery.uniqueID(sensor)
                let reset = switch sensor.quantity.resetPeriod {
                case .day?: ", last_reset at local midnight"
                case .month?: ", last_reset at the month's first local midnight"
                case .billing?: ", last_reset at the billing month's first local midnight"
                case nil: ""
                }
                let classes = [sensor.quantity.deviceClass, sensor.quantity.stateClass].compactMap { $0 }.joined(separator: ", ") + reset
                lines.append("      \(id.padding(to: width + 7)) \(sensor.name) (\(sensor.quantity.unit); \(classes))")
            }
        }
        return lines
    }
}

extension String {
    /// The text followed by spaces up to `width` characters, for a column.
    func padding(to width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
