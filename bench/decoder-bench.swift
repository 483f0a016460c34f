// The payload decoders' CPU per message, compiled into one optimized module with FlowCore's
// sources (bench/decoders.sh), so that it needs no target of its own. Prints ns per message for
// each decoder on a payload of its kind; the JSON path is the one `make bench` measures whole.
import FoundationEssentials

@main
struct DecoderBench {
    static func main() throws {
        let count = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 1_000_000
        let shelly = Array(#"{"id":0,"a_current":4.029,"a_voltage":236.1,"a_act_power":951.2,"a_aprt_power":951.9,"a_pf":1,"total_current":4.029,"total_act_power":951.2,"total_aprt_power":951.9}"#.utf8)
        let cases: [(String, PayloadDecoder, [UInt8])] = [
            ("plain text", PayloadDecoder(), Array("612.4".utf8)),
            ("json path (Shelly em:0)", PayloadDecoder(path: try JSONPath("total_act_power")), shelly),
            ("keyvalue", PayloadDecoder(format: .keyValue(KeyValueFormat(key: "soc"))), Array("pwr=-1,soc=87,temp=21.5,v=231".utf8)),
            ("regex", PayloadDecoder(format: .pattern(try PatternFormat("grid (-?[0-9.]+) W"))), Array("Meter 7: grid -412.5 W at 12:00".utf8)),
            ("binary int16 raw", PayloadDecoder(format: .binary(BinaryNumberFormat(.int16))), [0xFB, 0x2E]),
            ("binary float32 hex", PayloadDecoder(format: .binary(BinaryNumberFormat(.float32, byteOrder: .little, hex: true))), Array("0080bf44".utf8)),
            ("json + sign field", PayloadDecoder(path: try JSONPath("power"), sign: SignField(path: try JSONPath("flow"), negative: ["producing"])),
             Array(#"{"power": 2145, "flow": "producing"}"#.utf8)),
            ("value map", PayloadDecoder(map: ValueMap(["on": 1, "off": 0])), Array("ON".utf8)),
        ]
        for (name, decoder, payload) in cases {
            guard case .value = decoder.decode(payload) else { fatalError("\(name) does not decode") }
            var sum = 0.0
            let clock = ContinuousClock()
            let elapsed = clock.measure {
                for _ in 0..<count {
                    if case .value(let value) = decoder.decode(payload) { sum += value }
                }
            }
            let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            let perMessage = String(Int((nanoseconds / Double(count)).rounded()))
            // The sum is printed so that the decoding is not optimized away.
            print("\(name)\(String(repeating: " ", count: max(1, 26 - name.count)))\(perMessage.leftPadded(6)) ns/message   (sum \(sum))")
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
