/// Recognizes the topic layouts of the common home energy devices in what a broker carries, and
/// plans the widget they make: messages in, a config text and findings out. Pure: the caller
/// listens (to `#`) and hands over every message; nothing here reads a clock or a socket.
///
/// The layouts known: OpenDTU and AhoyDTU (Hoymiles micro-inverters), Shelly Gen2 and Gen1 energy
/// meters, Tasmota (energy plugs and smart meter readers), Victron Venus OS, evcc, SolarAssistant,
/// Home Assistant's mqtt_statestream and Zigbee2MQTT plugs.
public struct Discovery: Sendable {
    static let layouts: [any DeviceLayout] = [
        OpenDTULayout(), AhoyDTULayout(), ShellyGen2Layout(), ShellyGen1Layout(), TasmotaLayout(), VictronLayout(),
        SolarAssistantLayout(), Zigbee2MQTTLayout(), EvccLayout(), HomeAssistantLayout(),
    ]

    public private(set) var catalog = TopicCatalog()

    public init() {}

    /// Takes one message heard on the broker.
    public mutating func hear(topic: String, payload: [UInt8], retained: Bool) {
        catalog.hear(topic: topic, payload: payload, retained: retained)
    }

    /// The topic to publish to so that the device behind `topic` keeps talking (Victron Venus OS
    /// publishes its readings only while asked: `R/<portal>/keepalive`), or nil.
    public static func keepalive(for topic: String) -> String? { VictronLayout.keepalive(for: topic) }

    /// How often to ask (seconds): well inside the 60 s after which Venus OS stops publishing.
    public static let keepaliveIntervalSeconds = VictronLayout.keepaliveIntervalSeconds

    /// What the devices heard so far make.
    public var plan: SetupPlan { SetupPlan(catalog: catalog, layouts: Self.layouts) }
}
