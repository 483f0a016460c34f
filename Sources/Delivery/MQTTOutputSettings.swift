import FlowCore

/// How every widget's pushes reach MQTT (`output.mqtt` in the config), and the topics that follows.
///
/// One prefix serves the daemon's status and the widgets, so the availability that Home Assistant
/// reads (`<prefix>/status`, the daemon's last will) is the one beside the content it describes.
public struct MQTTOutputSettings: Sendable, Equatable {
    /// Home Assistant's MQTT discovery (`home_assistant:`).
    public struct HomeAssistant: Sendable, Equatable {
        /// Where Home Assistant looks for discovery configs (its own `discovery_prefix`).
        public var discoveryPrefix = "homeassistant"

        public init(discoveryPrefix: String = "homeassistant") {
            self.discoveryPrefix = discoveryPrefix
        }

        /// Home Assistant's birth and last will (`online` / `offline`): `online` means it started
        /// (again) and wants the discovery configs.
        public var statusTopic: String { "\(discoveryPrefix)/status" }
    }

    public var prefix: String
    /// The content (and the sensors' values) are retained, so a subscriber that comes later, or a
    /// Home Assistant that restarts, reads the current document at once.
    public var retain = true
    public var homeAssistant: HomeAssistant?

    public init(prefix: String = "flowbridge", retain: Bool = true, homeAssistant: HomeAssistant? = nil) {
        self.prefix = prefix
        self.retain = retain
        self.homeAssistant = homeAssistant
    }

    /// `<prefix>/status`: `online` while the daemon runs, `offline` after (its last will).
    public var statusTopic: String { "\(prefix)/status" }
    /// The widget's whole content after every push.
    public func contentTopic(_ widget: String) -> String { "\(prefix)/\(widget)/content" }
    /// Each push's RFC 7396 merge patch, as the widget API gets it.
    public func patchTopic(_ widget: String) -> String { "\(prefix)/\(widget)/patch" }
    /// The values of the widget's Home Assistant sensors, one JSON object.
    public func sensorsTopic(_ widget: String) -> String { "\(prefix)/\(widget)/sensors" }

    /// What the sink listens to on the daemon's connection: Home Assistant's status.
    public var subscriptions: [String] { homeAssistant.map { [$0.statusTopic] } ?? [] }

    /// Why `name` cannot be one level of a topic, or nil when it can: MQTT forbids the wildcards
    /// in a published topic, and control characters and noncharacters in any (libmosquitto
    /// refuses to publish on one), and a `/` would put the widget's topics under another's.
    public static func topicLevelProblem(_ name: String) -> String? {
        if name.isEmpty { return "an empty name" }
        if let refused = TopicFilter.refusedCharacter(in: name) { return "\(refused) in it" }
        if let bad = name.first(where: { "/+#".contains($0) }) { return "'\(bad)' in it" }
        return nil
    }
}
