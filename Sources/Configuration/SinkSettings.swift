import Delivery

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
