@testable import Discovery
import FlowCore
import Testing

/// `discover` suggests the source keys for readings that are neither text nor JSON, from the same
/// payload shapes whose errors the daemon logs.
@Suite struct PayloadFormatDiscoveryTests {
    static func plan(_ messages: [(String, [UInt8])]) -> SetupPlan {
        var discovery = Discovery()
        for (topic, payload) in messages { discovery.hear(topic: topic, payload: payload, retained: false) }
        return discovery.plan
    }

    @Test func readingsInOtherFormatsAreListedWithTheKeysThatReadThem() {
        let plan = Self.plan([
            ("modbus/heater/power", [0xFB, 0x2E]),
            ("lora/node7/uplink", Array("pwr=-412,soc=87,rssi=-90".utf8)),
            ("modbus/heater/status", [0x01, 0x02, 0x03, 0x04]),  // binary, but nothing says it is a reading
            ("home/door", Array("state=open,battery_low=false".utf8)),  // pairs: battery_low sounds like one
            ("home/garden/note", Array("watered at 7".utf8)),
        ])
        #expect(plan.unplaced == [
            SetupPlan.Unplaced(topic: "home/door", fields: [], format: "format: keyvalue, key: battery_low"),
            SetupPlan.Unplaced(topic: "lora/node7/uplink", fields: [], format: "format: keyvalue, key: soc"),
            SetupPlan.Unplaced(topic: "modbus/heater/power", fields: [], format: "decode: int16 or uint16 (and byte_order: big or little)"),
        ])
        #expect(plan.unplaced.last?.description == "modbus/heater/power (decode: int16 or uint16 (and byte_order: big or little))")
    }

    @Test(arguments: [
        ([0xFB, 0x2E] as [UInt8], PayloadShape.binary(byteCount: 2)),
        (Array("pwr=-1,soc=87".utf8), .keyValue(keys: ["pwr", "soc"])),
        (Array("P=12 E=3".utf8), .keyValue(keys: ["P", "E"])),
        (Array(" 612.4\n".utf8), .number),
        (Array(#"{"a": 1}"#.utf8), .json),
        (Array("online".utf8), .text),
        (Array("grid 12 W, a=1".utf8), .text),
        (Array("12\0".utf8), .number),
        ([], .empty),
        ([0xC3, 0x28], .binary(byteCount: 2)),
    ])
    func shapes(payload: [UInt8], shape: PayloadShape) {
        #expect(PayloadShape.of(payload) == shape)
    }
}
