/// MQTT's quality of service: how hard the client and the broker try to deliver a message, asked
/// for by every publish and subscription. A level MQTT does not have cannot be written down, so
/// nothing needs to check for one. A value of the core: what is published (a widget's content, a
/// simulated device's message) names its QoS without knowing which MQTT client sends it.
public enum QoS: Int, Sendable, CaseIterable {
    /// 0: sent once and forgotten; lost with the connection.
    case atMostOnce = 0
    /// 1: sent again until the broker acknowledges it; it may arrive twice.
    case atLeastOnce = 1
    /// 2: a four-step handshake, so it is neither lost nor doubled.
    case exactlyOnce = 2
}
