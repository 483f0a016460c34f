@testable import Commands
import Configuration
import FlowCore
import Foundation
import Platform
@testable import Runtime
import TestSupport
import Testing

/// `check --listen` shows per source each kind of payload that did not decode, counted, with the
/// text that says what to change, as the log does.
@Suite struct ListenDecodeErrorTests {
    @Test func eachKindOfUndecodablePayloadIsCountedPerSource() throws {
        let config = try DaemonConfig.parse("""
            timezone: UTC
            sources:
              grid: {topic: meter/grid}
              battery: {topic: meter/battery, decode: int16}
              solar: {topic: meter/solar, regex: 'solar ([0-9.]+) W'}
            widgets:
              w: {template: flow, flow: {inputs: [{rate: solar}], exchange: {rate: grid}, storage: {rate: battery}}}
            """, file: "listen.yaml")
        var report = ListenReport(config: config, zone: SystemTimeZone(identifier: "UTC")!)
        let start = Date(timeIntervalSince1970: 1_780_000_000)
        let messages: [(String, [UInt8])] = [
            ("meter/grid", Array("pwr=-1,soc=87".utf8)), ("meter/grid", Array("pwr=-2,soc=87".utf8)), ("meter/grid", [0x44, 0xBF, 0x88, 0x00]),
            ("meter/battery", [0x01, 0x02, 0x03]), ("meter/battery", [0x01, 0x02]),
            ("meter/solar", Array("inverter offline".utf8)),
        ]
        for (offset, (topic, payload)) in messages.enumerated() {
            _ = report.receive(topic: topic, payload: payload, retained: false, at: start + Double(offset))
        }
        var connection = TimedListen.Outcome()
        connection.connected = true
        let text = report.text(broker: "localhost:1883", seconds: 10, connection: connection, at: start + 10)
        for line in [
            "  grid: 2 messages key=value payload: the payload is key=value pairs (keys pwr, soc); set `format: keyvalue` and `key:` to the one that holds the number",
            "  grid: 1 message binary payload: the payload is binary (4 bytes: 44bf8800), not text; set decode: int32, uint32 or float32 (and byte_order: big or little)",
            "  battery: 1 message wrong length: a payload of 3 bytes is not an int16 (2 bytes); check `decode:` (or `hex: true` for hex text)",
            "  solar: 1 message regex does not match: the regex 'solar ([0-9.]+) W' does not match the payload 'inverter offline'",
        ] {
            #expect(text.contains(line + "\n"), "\(text)")
        }
        #expect(!text.contains("battery: 2 messages"), "the int16 of 2 bytes decoded: \(text)")
    }
}
