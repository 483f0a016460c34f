import FlowCore

/// What the MQTT sink publishes, as a state machine: pushes, the broker connection coming up,
/// Home Assistant starting and reloaded configs come in; the messages to publish go out.
///
/// It keeps no queue: only each widget's newest document, the sensors' values last published, and
/// the retained topics it published. While the broker is away the messages of pushes are lost (the
/// sink publishes nothing then), so every connect publishes each widget's current content again,
/// and the broker holds the truth whatever it lost meanwhile. The retained topics it published are
/// kept across restarts (`saved`): a topic that no widget or sensor of the config publishes any
/// more (a node renamed or removed, a widget gone, discovery turned off) is removed with an empty
/// retained message, so Home Assistant drops the sensor instead of showing it unavailable forever.
public struct MQTTPublication: Sendable {
    /// One MQTT publish.
    public struct Message: Sendable, Equatable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: QoS
        public var retain: Bool

        public init(topic: String, payload: [UInt8], qos: QoS, retain: Bool) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }

        /// An empty retained message: the broker forgets what it kept on the topic.
        public var isRemoval: Bool { retain && payload.isEmpty }
    }

    public let settings: MQTTOutputSettings
    public let software: String
    /// The Home Assistant sensors of the running config; nil without `home_assistant`.
    public private(set) var discovery: HomeAssistantDiscovery?
    /// The widgets of the running config.
    private var widgets: [String]
    /// Each widget's newest document.
    private var documents: [String: WidgetContent] = [:]
    /// Each flow widget's newest accounts and money, which its energy and money sensors carry.
    private var accounts: [String: WidgetAccounts] = [:]
    /// What each widget's sensors topic last carried: a push that changes none of it publishes none.
    private var sensorValues: [String: JSONValue] = [:]
    /// The retained topics published and not removed since, this run or an earlier one.
    public private(set) var retainedTopics: Set<String> = []

    public init(settings: MQTTOutputSettings, flow: FlowConfig, software: String) {
        self.settings = settings
        self.software = software
        widgets = flow.widgetNames
        discovery = settings.homeAssistant.map { HomeAssistantDiscovery(flow: flow, settings: settings, homeAssistant: $0, software: software) }
    }

    /// The retained topics the running config publishes: each widget's content and sensors' values
    /// (when retained), and every discovery config.
    public var wantedTopics: Set<String> {
        var topics: Set<String> = []
        if settings.retain {
            topics.formUnion(widgets.map(settings.contentTopic))
            topics.formUnion(discovery?.widgets.map(settings.sensorsTopic) ?? [])
        }
        if let discovery { topics.formUnion(discovery.sensors.map(discovery.configTopic)) }
        return topics
    }

    /// A push: the whole content (QoS 1, retained unless `retain: false`), the patch (QoS 0, never
    /// retained: a stream, which the content heals when a message of it is lost), and the
    /// sensors' values when they changed.
    public mutating func push(_ push: OutgoingPush) -> [Message] {
        documents[push.widget] = push.document
        var messages = [
            Message(topic: settings.contentTopic(push.widget), payload: push.document.json.encoded(), qos: .atLeastOnce, retain: settings.retain),
            Message(topic: settings.patchTopic(push.widget), payload: push.contentPatch.encoded(), qos: .atMostOnce, retain: false),
        ]
        messages += sensors(of: push.widget, always: false)
        return messages
    }

    /// A flow widget's accounts and money: its sensors' values when they changed (at Wh and a
    /// hundredth of a cent). They come with each push and at most a minute apart while one moves,
    /// so a widget pushed every 5 minutes still feeds Home Assistant's statistics.
    public mutating func accounts(_ item: WidgetAccounts) -> [Message] {
        accounts[item.widget] = item
        return sensors(of: item.widget, always: false)
    }

    /// The broker connection is up (again): first the retained topics that belong to nothing any
    /// more go, then every discovery config, and each widget's current content and sensors' values.
    public mutating func connected() -> [Message] {
        var messages = removals() + announcements()
        for widget in widgets {
            guard let document = documents[widget] else { continue }
            messages.append(Message(topic: settings.contentTopic(widget), payload: document.json.encoded(), qos: .atLeastOnce, retain: settings.retain))
            messages += sensors(of: widget, always: true)
        }
        return messages
    }

    /// Home Assistant said `online` (it started, or its MQTT integration was reloaded): every
    /// discovery config again, and the sensors' values, which it may not have while not retained.
    public mutating func homeAssistantOnline() -> [Message] {
        announcements() + widgets.flatMap { sensors(of: $0, always: true) }
    }

    /// A reloaded config: the widgets and sensors it no longer has are removed, the ones it has
    /// announced (a discovery config that did not change is nothing new to Home Assistant), and
    /// the values of sensors it added published from the newest documents.
    public mutating func reconfigure(_ flow: FlowConfig) -> [Message] {
        widgets = flow.widgetNames
        discovery = settings.homeAssistant.map { HomeAssistantDiscovery(flow: flow, settings: settings, homeAssistant: $0, software: software) }
        for widget in documents.keys where !widgets.contains(widget) {
            documents[widget] = nil
            accounts[widget] = nil
            sensorValues[widget] = nil
        }
        return removals() + announcements() + widgets.flatMap { sensors(of: $0, always: false) }
    }

    /// Records a message the broker connection took: which retained topics the broker now keeps.
    public mutating func published(_ message: Message) {
        guard message.retain else { return }
        if message.payload.isEmpty {
            retainedTopics.remove(message.topic)
        } else {
            retainedTopics.insert(message.topic)
        }
    }

    /// The retained topics published, for the state file.
    public var saved: JSONValue { ["retained": .array(retainedTopics.sorted().map(JSONValue.string))] }

    /// Takes back the retained topics an earlier run published (before the first connect).
    public mutating func restore(_ saved: JSONValue) {
        for topic in saved["retained"]?.arrayValue ?? [] {
            if let topic = topic.stringValue, !topic.isEmpty { retainedTopics.insert(topic) }
        }
    }

    /// Empty retained messages for the retained topics the config no longer publishes, discovery
    /// configs first (Home Assistant drops the sensor before its state topic empties).
    private func removals() -> [Message] {
        retainedTopics.subtracting(wantedTopics)
            .sorted { ($0.hasSuffix("/config") ? 0 : 1, $0) < ($1.hasSuffix("/config") ? 0 : 1, $1) }
            .map { Message(topic: $0, payload: [], qos: .atLeastOnce, retain: true) }
    }

    /// Every discovery config, retained (Home Assistant reads them when it starts).
    private func announcements() -> [Message] {
        guard let discovery else { return [] }
        return discovery.sensors.map { sensor in
            Message(topic: discovery.configTopic(sensor), payload: discovery.config(sensor).encoded(), qos: .atLeastOnce, retain: true)
        }
    }

    /// The sensors' values of `widget` from its newest document, when it has sensors and a
    /// document, and the values changed (or `always`).
    private mutating func sensors(of widget: String, always: Bool) -> [Message] {
        guard let document = documents[widget], let values = discovery?.values(widget: widget, document: document, accounts: accounts[widget]) else { return [] }
        if !always, sensorValues[widget] == values { return [] }
        sensorValues[widget] = values
        return [Message(topic: settings.sensorsTopic(widget), payload: values.encoded(), qos: .atLeastOnce, retain: settings.retain)]
    }
}
