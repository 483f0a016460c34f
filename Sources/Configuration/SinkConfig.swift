import Delivery
import FlowCore
import Persistence
import Platform

/// `push:` of a widget: its documents go to the widget HTTP API.
public struct PushSettings: Sendable, Equatable {
    public var widget: String
    public var api: WidgetAPISettings
    /// The bearer token's file (a relative name is a systemd credential) or environment variable;
    /// exactly one is set.
    public var tokenFile: String?
    public var tokenEnv: String?
    /// The token itself, read with the config by `check` and `run` (nil when the config was read
    /// without its context, as replay reads it).
    public var token: Secret?
}

/// `output:`: sinks that take every widget's pushes.
public struct OutputSettings: Sendable, Equatable {
    /// NDJSON lines on standard output, as `run --dry-run` prints them.
    public var stdout = false
    /// The widgets' content and patches on the broker, and Home Assistant's discovery.
    public var mqtt: MQTTOutputSettings?
}

extension DaemonConfig {
    /// Whether `run` delivers anywhere.
    public var hasSink: Bool { !pushes.isEmpty || output.stdout || output.mqtt != nil }

    /// What `check` and `run` say of a config without a sink, and how to give it one.
    package static let noSinkWarning = "pushes are computed but go nowhere (add push: to a widget, or output: {stdout: true} or {mqtt: true})"
}

extension ConfigLoader {
    /// `output:` and every widget's `push:`. `output.mqtt.prefix` and `mqtt.topic_prefix` are one
    /// prefix (the daemon's status is the availability of what it publishes): either sets it,
    /// and both must agree.
    func loadSinks(_ top: inout MappingReader, mqtt: inout MQTTSettings, flow: FlowConfig) -> (pushes: [PushSettings], output: OutputSettings) {
        var output = OutputSettings()
        if let node = top.value("output"), var map = reader.mapping(node, "output") {
            output.stdout = map.flag("stdout") ?? false
            if let mqttNode = map.value("mqtt") {
                let topicPrefix = top.value("mqtt")?.pairs?.first { $0.key.scalarValue == "topic_prefix" && !$0.value.isNull }?.value
                output.mqtt = loadMQTTOutput(mqttNode, map.childPath("mqtt"), mqtt: &mqtt, topicPrefix: topicPrefix, flow: flow)
            }
            map.finish()
        }
        var pushes: [PushSettings] = []
        for (key, widget) in top.value("widgets")?.pairs ?? [] {
            guard let name = key.scalarValue, let node = widget.pairs?.first(where: { $0.key.scalarValue == "push" })?.value,
                  !node.isNull
            else { continue }
            if let push = loadPush(widget: name, node, "widgets.\(name).push") { pushes.append(push) }
        }
        return (pushes, output)
    }

    /// `output.mqtt`: `true`, or `{prefix, retain, home_assistant}` where `home_assistant` is
    /// `true` or `{discovery_prefix}`.
    func loadMQTTOutput(_ node: YAMLNode, _ path: String, mqtt: inout MQTTSettings, topicPrefix: YAMLNode?, flow: FlowConfig) -> MQTTOutputSettings? {
        var settings = MQTTOutputSettings(prefix: mqtt.topicPrefix)
        if node.pairs == nil {
            return reader.flag(node, path) == true ? checked(settings, path, node, flow: flow) : nil
        }
        guard var map = reader.mapping(node, path) else { return nil }
        defer { map.finish() }
        if let prefix = map.text("prefix") {
            if let problem = Self.publishTopicProblem(prefix) {
                reader.report(map.childPath("prefix"), map.value("prefix"), problem)
            } else if let topicPrefix, prefix != mqtt.topicPrefix {
                reader.report(map.childPath("prefix"), map.value("prefix"), "'\(prefix)' differs from mqtt.topic_prefix '\(mqtt.topicPrefix)' (line \(topicPrefix.mark.line)): flowbridge's status, <prefix>/status, is the availability of what it publishes, so both are one prefix; give one of them")
            } else {
                settings.prefix = prefix
                mqtt.topicPrefix = prefix
            }
        }
        settings.retain = map.flag("retain") ?? settings.retain
        if let haNode = map.value("home_assistant") {
            let haPath = map.childPath("home_assistant")
            if haNode.pairs == nil {
                if reader.flag(haNode, haPath) == true { settings.homeAssistant = MQTTOutputSettings.HomeAssistant() }
            } else if var haMap = reader.mapping(haNode, haPath) {
                var homeAssistant = MQTTOutputSettings.HomeAssistant()
                if let prefix = haMap.text("discovery_prefix") {
                    if let problem = Self.publishTopicProblem(prefix) {
                        reader.report(haMap.childPath("discovery_prefix"), haMap.value("discovery_prefix"), problem)
                    } else {
                        homeAssistant.discoveryPrefix = prefix
                    }
                }
                haMap.finish()
                settings.homeAssistant = homeAssistant
            }
        }
        return checked(settings, path, node, flow: flow)
    }

    /// Every widget's name must be a topic level, and with Home Assistant every sensor needs an id
    /// of its own.
    private func checked(_ settings: MQTTOutputSettings, _ path: String, _ node: YAMLNode, flow: FlowConfig) -> MQTTOutputSettings {
        for widget in flow.widgetNames {
            if let problem = MQTTOutputSettings.topicLevelProblem(widget) {
                reader.report(path, node, "widget '\(widget)' cannot be a topic level (\(problem)): rename it to publish it on MQTT")
            }
        }
        if let homeAssistant = settings.homeAssistant {
            let discovery = HomeAssistantDiscovery(flow: flow, settings: settings, homeAssistant: homeAssistant, software: Flowbridge.version)
            for conflict in discovery.conflicts {
                reader.report(path, node, "home_assistant: \(conflict); give the nodes distinct names")
            }
        }
        return settings
    }

    /// Why `topic` cannot start the topics flowbridge publishes, or nil.
    static func publishTopicProblem(_ topic: String) -> String? {
        if topic.isEmpty || topic.contains("+") || topic.contains("#") || topic.utf8.contains(0) {
            return "must be a topic without wildcards"
        }
        if topic.hasPrefix("/") || topic.hasSuffix("/") { return "must not start or end with /" }
        return nil
    }

    func loadPush(widget: String, _ node: YAMLNode, _ path: String) -> PushSettings? {
        guard var map = reader.mapping(node, path) else { return nil }
        defer { map.finish() }
        let url = map.required("url").flatMap { reader.text($0, map.childPath("url")) }
        if let url, !(url.hasPrefix("https://") || url.hasPrefix("http://")) || url.count <= "https://".count
            || url.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true })
        {
            reader.report(map.childPath("url"), map.value("url"), "'\(url)' is not an http:// or https:// URL")
        }
        var api = WidgetAPISettings(url: url ?? "")
        let inlineToken = map.value("token")
        if inlineToken != nil {
            reader.report(map.childPath("token"), inlineToken, "write the token to a file (token_file) or an environment variable (token_env), never into the config")
        }
        let tokenFile = map.text("token_file")
        let tokenEnv = map.text("token_env")
        switch (tokenFile, tokenEnv) {
        case (nil, nil) where inlineToken == nil:
            reader.report(path, node, "needs token_file or token_env: the widget API takes a bearer token")
        case (_?, _?):
            reader.report(map.childPath("token_env"), map.value("token_env"), "write token_file or token_env, not both")
        default: break
        }
        if let methods = map.value("methods"), var methodMap = reader.mapping(methods, map.childPath("methods")) {
            func method(_ key: String) -> HTTPMethod? {
                guard let word = methodMap.text(key) else { return nil }
                guard let method = HTTPMethod(rawValue: word) else {
                    reader.report(methodMap.childPath(key), methodMap.value(key), "'\(word)' is not an HTTP method (\(HTTPMethod.allCases.map(\.rawValue).joined(separator: ", ")))")
                    return nil
                }
                return method
            }
            api.replaceMethod = method("replace") ?? api.replaceMethod
            api.patchMethod = method("patch") ?? api.patchMethod
            methodMap.finish()
        }
        if let headers = map.value("headers") {
            api.headers = loadHeaders(headers, map.childPath("headers"))
        }
        if let key = map.value("body_key") {
            api.bodyKey = key.isNull ? "" : reader.text(key, map.childPath("body_key")) ?? api.bodyKey
        }
        func positive(_ key: String) -> Double? {
            guard let seconds = map.duration(key) else { return nil }
            if seconds <= 0 { reader.report(map.childPath(key), map.value(key), "must be longer than 0s") }
            return seconds > 0 ? seconds : nil
        }
        api.connectTimeoutSeconds = positive("connect_timeout") ?? api.connectTimeoutSeconds
        api.timeoutSeconds = positive("timeout") ?? api.timeoutSeconds
        api.caFile = map.text("ca_file")
        api.insecure = map.flag("insecure") ?? false
        if let retry = map.value("retry"), var retryMap = reader.mapping(retry, map.childPath("retry")) {
            let minimum = retryMap.duration("min") ?? api.retry.minSeconds
            let maximum = retryMap.duration("max") ?? max(api.retry.maxSeconds, minimum)
            if minimum <= 0 {
                reader.report(retryMap.childPath("min"), retryMap.value("min"), "must be longer than 0s: a failing API is never retried in a loop")
            } else if maximum < minimum {
                reader.report(retryMap.childPath("max"), retryMap.value("max"), "must not be shorter than min")
            } else {
                api.retry = WidgetDelivery.Retry(minSeconds: minimum, maxSeconds: maximum)
            }
            retryMap.finish()
        }
        guard url != nil else { return nil }
        let token = context.flatMap { loadSecret(&map, "token", file: tokenFile, variable: tokenEnv, context: $0) }
        return PushSettings(widget: widget, api: api, tokenFile: tokenFile, tokenEnv: tokenEnv, token: token)
    }

    /// `headers: {X-Name: value}`: extra request headers. The token and the content type are the
    /// sink's own.
    func loadHeaders(_ node: YAMLNode, _ path: String) -> [WidgetAPISettings.Header] {
        guard let pairs = node.pairs else {
            reader.report(path, node, "expected a mapping of header names to values, found \(node.describedKind)")
            return []
        }
        let nameCharacters = Set("!#$%&'*+-.^_`|~abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return pairs.compactMap { key, value in
            guard let name = key.scalarValue, let text = reader.text(value, "\(path).\(key.scalarValue ?? "?")") else { return nil }
            let headerPath = "\(path).\(name)"
            if name.isEmpty || !name.allSatisfy(nameCharacters.contains) {
                reader.report(headerPath, key, "'\(name)' is not a header name")
                return nil
            }
            if ["authorization", "content-type", "content-length"].contains(name.lowercased()) {
                reader.report(headerPath, key, "\(name) is set by flowbridge (the token comes from token_file or token_env)")
                return nil
            }
            if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                reader.report(headerPath, value, "a header value must be one line of text")
                return nil
            }
            return WidgetAPISettings.Header(name: name, value: text)
        }
    }
}
