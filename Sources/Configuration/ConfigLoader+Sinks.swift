import Delivery
import FlowCore
import Platform

extension ConfigLoader {
    /// `output:`: the sinks that take every widget's pushes. `output.mqtt.prefix` and
    /// `mqtt.topic_prefix` are one prefix (the daemon's status is the availability of what it
    /// publishes): either sets it, and both must agree; `topicPrefix` is the latter as written.
    func loadOutput(_ outputNode: ConfigNode, mqtt: inout MQTTSettings, topicPrefix: ConfigNode?, flow: FlowConfig) -> OutputSettings {
        var output = OutputSettings()
        guard var map = outputNode.mapping() else { return output }
        output.stdout = map.flag("stdout")?.value ?? false
        output.mqtt = map.field("mqtt").flatMap { loadMQTTOutput($0, mqtt: &mqtt, topicPrefix: topicPrefix, flow: flow) }
        map.finish()
        return output
    }

    /// `output.mqtt`: `true`, or `{prefix, retain, home_assistant}` where `home_assistant` is
    /// `true` or `{discovery_prefix}`.
    func loadMQTTOutput(_ mqttOutput: ConfigNode, mqtt: inout MQTTSettings, topicPrefix: ConfigNode?, flow: FlowConfig) -> MQTTOutputSettings? {
        var settings = MQTTOutputSettings(prefix: mqtt.topicPrefix)
        if mqttOutput.node.pairs == nil {
            return mqttOutput.flag()?.value == true ? checked(settings, mqttOutput, flow: flow) : nil
        }
        guard var map = mqttOutput.mapping() else { return nil }
        defer { map.finish() }
        if let prefix = map.text("prefix") {
            if let problem = Self.publishTopicProblem(prefix.value) {
                prefix.report(problem)
            } else if let topicPrefix, prefix.value != mqtt.topicPrefix {
                prefix.report("'\(prefix.value)' differs from \(topicPrefix.path) '\(mqtt.topicPrefix)' (line \(topicPrefix.node.mark.line)): flowbridge's status, <prefix>/status, is the availability of what it publishes, so both are one prefix; give one of them")
            } else {
                settings.prefix = prefix.value
                mqtt.topicPrefix = prefix.value
            }
        }
        settings.retain = map.flag("retain")?.value ?? settings.retain
        if let homeAssistant = map.field("home_assistant") {
            if homeAssistant.node.pairs == nil {
                if homeAssistant.flag()?.value == true { settings.homeAssistant = MQTTOutputSettings.HomeAssistant() }
            } else if var haMap = homeAssistant.mapping() {
                var discovery = MQTTOutputSettings.HomeAssistant()
                if let prefix = haMap.text("discovery_prefix") {
                    if let problem = Self.publishTopicProblem(prefix.value) {
                        prefix.report(problem)
                    } else {
                        discovery.discoveryPrefix = prefix.value
                    }
                }
                haMap.finish()
                settings.homeAssistant = discovery
            }
        }
        return checked(settings, mqttOutput, flow: flow)
    }

    /// Every widget's name must be a topic level, and with Home Assistant every sensor needs an id
    /// of its own.
    private func checked(_ settings: MQTTOutputSettings, _ mqttOutput: ConfigNode, flow: FlowConfig) -> MQTTOutputSettings {
        for widget in flow.widgetNames {
            if let problem = MQTTOutputSettings.topicLevelProblem(widget) {
                mqttOutput.report("widget '\(PrintableText.escaped(widget))' cannot be a topic level (\(problem)): rename it to publish it on MQTT")
            }
        }
        if let homeAssistant = settings.homeAssistant {
            let discovery = HomeAssistantDiscovery(flow: flow, settings: settings, homeAssistant: homeAssistant, software: Flowbridge.version)
            for conflict in discovery.conflicts {
                mqttOutput.report("home_assistant: \(conflict); give the nodes distinct names")
            }
        }
        return settings
    }

    /// Why `topic` cannot be published to, or nil: empty, a wildcard, or a character a broker
    /// refuses (`TopicFilter.refusedCharacter`). The status prefix, the discovery prefix and the
    /// keepalive topics are checked by it.
    static func topicProblem(_ topic: String) -> String? {
        if topic.isEmpty || topic.contains("+") || topic.contains("#") { return "must be a topic without wildcards" }
        if let refused = TopicFilter.refusedCharacter(in: topic) { return "holds \(refused), which MQTT refuses in a topic" }
        return nil
    }

    /// Why `topic` cannot start the topics flowbridge publishes (`<prefix>/...`), or nil.
    static func publishTopicProblem(_ topic: String) -> String? {
        topicProblem(topic) ?? (topic.hasPrefix("/") || topic.hasSuffix("/") ? "must not start or end with /" : nil)
    }

    /// A widget's `push:` (read with the widget): its documents go to the widget HTTP API.
    func loadPush(widget: String, _ push: ConfigNode) -> PushSettings? {
        guard var map = push.mapping() else { return nil }
        defer { map.finish() }
        let url = map.required("url")?.text()
        if let url, !(url.value.hasPrefix("https://") || url.value.hasPrefix("http://")) || url.value.count <= "https://".count
            || url.value.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true })
        {
            url.report("'\(url.value)' is not an http:// or https:// URL")
        }
        var api = WidgetAPISettings(url: url?.value ?? "")
        let inlineToken = map.field("token")
        inlineToken?.report("write the token to a file (token_file) or an environment variable (token_env), never into the config")
        let tokenFile = map.text("token_file")
        let tokenEnv = map.text("token_env")
        switch (tokenFile, tokenEnv) {
        case (nil, nil) where inlineToken == nil:
            push.report("needs token_file or token_env: the widget API takes a bearer token")
        case (_?, let tokenEnv?):
            tokenEnv.report("write token_file or token_env, not both")
        default: break
        }
        if let methods = map.field("methods"), var methodMap = methods.mapping() {
            api.replaceMethod = methodMap.text("replace").flatMap(method) ?? api.replaceMethod
            api.patchMethod = methodMap.text("patch").flatMap(method) ?? api.patchMethod
            methodMap.finish()
        }
        api.headers = map.field("headers").map(loadHeaders) ?? api.headers
        api.bodyKey = map.text("body_key")?.value ?? api.bodyKey
        func positive(_ seconds: ConfigValue<Double>) -> Double? {
            if seconds.value <= 0 { seconds.report("must be longer than 0s") }
            return seconds.value > 0 ? seconds.value : nil
        }
        api.connectTimeoutSeconds = map.duration("connect_timeout").flatMap(positive) ?? api.connectTimeoutSeconds
        api.timeoutSeconds = map.duration("timeout").flatMap(positive) ?? api.timeoutSeconds
        api.caFile = map.text("ca_file")?.value
        api.insecure = map.flag("insecure")?.value ?? false
        if let retry = map.field("retry"), var retryMap = retry.mapping() {
            let minimum = retryMap.duration("min")
            let maximum = retryMap.duration("max")
            let minimumSeconds = minimum?.value ?? api.retry.minSeconds
            let maximumSeconds = maximum?.value ?? max(api.retry.maxSeconds, minimumSeconds)
            if let minimum, minimum.value <= 0 {
                minimum.report("must be longer than 0s: a failing API is never retried in a loop")
            } else if let maximum, maximum.value < minimumSeconds {
                maximum.report("must not be shorter than min")
            } else {
                api.retry = WidgetDelivery.Retry(minSeconds: minimumSeconds, maxSeconds: maximumSeconds)
            }
            retryMap.finish()
        }
        guard url != nil else { return nil }
        let token = context.flatMap { $0.readsPushTokens ? loadSecret(file: tokenFile, variable: tokenEnv, context: $0) : nil }
        return PushSettings(widget: widget, api: api, tokenFile: tokenFile?.value, tokenEnv: tokenEnv?.value, token: token)
    }

    /// `methods: {replace:, patch:}`: a method the widget API is reached with.
    private func method(_ word: ConfigValue<String>) -> HTTPMethod? {
        guard let method = HTTPMethod(rawValue: word.value) else {
            word.report("'\(word.value)' is not an HTTP method (\(HTTPMethod.allCases.map(\.rawValue).joined(separator: ", ")))")
            return nil
        }
        return method
    }

    /// `headers: {X-Name: value}`: extra request headers. The token and the content type are the
    /// sink's own.
    func loadHeaders(_ headers: ConfigNode) -> [WidgetAPISettings.Header] {
        guard let entries = headers.entries else {
            headers.report("expected a mapping of header names to values, found \(headers.node.describedKind)")
            return []
        }
        let nameCharacters = Set("!#$%&'*+-.^_`|~abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return entries.compactMap { name, value in
            guard let text = value.text() else { return nil }
            if name.value.isEmpty || !name.value.allSatisfy(nameCharacters.contains) {
                name.report("'\(name.value)' is not a header name")
                return nil
            }
            if ["authorization", "content-type", "content-length"].contains(name.value.lowercased()) {
                name.report("\(name.value) is set by flowbridge (the token comes from token_file or token_env)")
                return nil
            }
            if text.value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                text.report("a header value must be one line of text")
                return nil
            }
            return WidgetAPISettings.Header(name: name.value, value: text.value)
        }
    }
}
