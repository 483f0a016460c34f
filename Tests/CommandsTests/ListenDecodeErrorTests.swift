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

/// `check --listen` shows a schedule's slots as the engine holds them (those no stretch needs any
/// more let go), the slot in force marked,
/// and a schedule it refused with the reason, counted like any undecodable payload.
@Suite struct ListenScheduleTests {
    static let config = """
        timezone: UTC
        sources:
          grid: {topic: meter/grid}
          prices: {topic: evcc/site/forecast/grid, unit: EUR/MWh, schedule: true}
        widgets:
          w: {template: flow, flow: {exchange: {rate: grid, total: import}}}
        tariff:
          import: {price: prices}
        """

    @Test func theSlotsReceivedAreShown() throws {
        var report = ListenReport(config: try DaemonConfig.parse(Self.config, file: "listen.yaml"), zone: SystemTimeZone(identifier: "UTC")!)
        let start = try #require(RFC3339.parse("2026-06-01T12:20:00Z"))
        let schedule = "[[1780315200, 1780316100, 312], [1780316100, 1780317000, 298], [1780317000, 1780317900, 287.5]]"  // 12:00, 12:15, 12:30
        _ = report.receive(topic: "evcc/site/forecast/grid", payload: Array(schedule.utf8), retained: true, at: start)
        _ = report.receive(topic: "evcc/site/forecast/grid", payload: Array("[[1780316100, 1780315200, 1]]".utf8), retained: false, at: start + 1)
        _ = report.receive(topic: "meter/grid", payload: Array("500".utf8), retained: false, at: start + 2)
        var connection = TimedListen.Outcome()
        connection.connected = true
        let text = report.text(broker: "localhost:1883", seconds: 10, connection: connection, at: start + 10)
        for line in [
            // 12:00–12:15 ended before the grid's first reading: no stretch needs it, so it is let go.
            "  prices: schedule of 2 slots from 12:15 to 12:45 (local time, per kWh before fees and VAT):",
            "    12:15–12:30  0.298  (now)",
            "    12:30–12:45  0.2875",
            "  prices: 1 message not a schedule: slot 1: ends at 2026-06-01T12:00:00Z, not after its start 2026-06-01T12:15:00Z",
            "  price now: import €0.298/kWh",
        ] {
            #expect(text.contains(line + "\n"), "\(text)")
        }
        #expect(text.contains("every source reported"), "\(text)")
    }
}
