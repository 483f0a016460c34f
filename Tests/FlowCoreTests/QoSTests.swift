import FlowCore
import Testing

@Suite struct QoSTests {
    /// QoS is the core's: what is published names its level without the MQTT client's module.
    @Test(arguments: [(QoS.atMostOnce, 0), (.atLeastOnce, 1), (.exactlyOnce, 2)])
    func qosLevelsAreMQTTs(qos: QoS, level: Int) {
        #expect(qos.rawValue == level)
    }
}
