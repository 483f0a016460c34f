import FlowCore

/// `PayloadDecoder.decode` with any path, format and payload. Input: one flag byte (bit 0: a
/// `json:` path follows, up to the first newline; bit 1: `decimal_comma`; bits 2–4: the format,
/// 0 text, 1 keyvalue, 2 regex, 3 a binary number raw, 4 as hex; bit 5: a sign field whose path
/// is the next line; bit 6: a value map `{on: 1, off: 0}`), then the format's line (the key, the
/// pattern, or for binary one byte choosing type and byte order), then the payload.
///
/// Holds: decoding never crashes and gives the same answer twice; a `.value` is finite; without a
/// path there is no `.noField`; an `.invalid` says why; a path that parses reads back the same
/// from its canonical quoted form (`["key"][0]`), and one that does not names itself in the error;
/// a pattern that does not compile names itself; a binary value comes only from a payload of the
/// type's width and encodes back to the same bytes; a key=value value only from a payload holding
/// the key; a sign field changes a value's direction, never its magnitude; and read as a price
/// schedule, the payload gives slots that can be, or a reason.
public enum PayloadDecoderProperty: FuzzProperty {
    public static let name = "PayloadDecoder"

    public static func check(_ input: [UInt8]) -> [String] {
        guard let flags = input.first else { return [] }
        var rest = input.dropFirst()
        var findings: [String] = []
        func line() -> String {
            let end = rest.firstIndex(of: 0x0A) ?? rest.endIndex
            let text = String(decoding: rest[..<end], as: UTF8.self)
            rest = end < rest.endIndex ? rest[(end + 1)...] : []
            return text
        }
        func readPath() -> JSONPath? {
            let text = line()
            do {
                let path = try JSONPath(text)
                let canonical = canonicalText(of: path.steps)
                if (try? JSONPath(canonical))?.steps != path.steps {
                    findings.append("path \(text.debugDescription) (steps \(path.steps)) does not read back from \(canonical.debugDescription)")
                }
                return path
            } catch {
                if !error.description.contains("json path '\(text)'") {
                    findings.append("the error for path \(text.debugDescription) does not name it: \(error)")
                }
                return nil
            }
        }
        let path = flags & 1 == 1 ? readPath() : nil
        var format = PayloadDecoder.Format.text
        switch flags >> 2 & 7 {
        case 1:
            format = .keyValue(KeyValueFormat(key: line()))
        case 2:
            let pattern = line()
            do {
                format = .pattern(try PatternFormat(pattern))
            } catch {
                if !error.description.contains("'\(pattern)'") { findings.append("the error for regex \(pattern.debugDescription) does not name it") }
            }
        case 3, 4:
            let choice = rest.first ?? 0
            rest = rest.dropFirst()
            let types = BinaryNumberFormat.NumberType.allCases
            format = .binary(BinaryNumberFormat(
                types[Int(choice) % types.count], byteOrder: choice & 0x80 == 0 ? .big : .little, hex: flags >> 2 & 7 == 4))
        default:
            break
        }
        let sign = flags & 0x20 == 0 ? nil : readPath().map { SignField(path: $0, negative: ["out", "-1"]) }
        let map = flags & 0x40 == 0 ? nil : ValueMap(["on": 1, "off": 0])
        let decoder = PayloadDecoder(path: path, decimalComma: flags & 2 == 2, format: format, sign: sign, map: map)
        let payload = Array(rest)
        let decoded = decoder.decode(payload)
        switch decoded {
        case .value(let value) where !value.isFinite:
            findings.append("decoded a value that is not finite: \(value)")
        case .noField where path == nil:
            findings.append("no path, yet the payload lacks a field")
        case .invalid(let why) where why.description.isEmpty:
            findings.append("invalid without a reason")
        default:
            break
        }
        let again = decoder.decode(payload)
        if again != decoded, !(isNaNValue(again) && isNaNValue(decoded)) {
            findings.append("decoded \(decoded) once and \(again) the second time")
        }
        if case .value(let value) = decoded {
            findings += checkValue(value, of: payload, decoder: decoder)
        }
        findings += checkSchedule(payload, path: path)
        return findings
    }

    /// The same payload read as a price schedule (`schedule: true` at the same path): the same
    /// answer twice; slots sorted, apart, each ending after it starts, prices finite, at most
    /// `ScheduleFormat.maxSlots`; a refusal says why.
    static func checkSchedule(_ payload: [UInt8], path: JSONPath?) -> [String] {
        let format = ScheduleFormat()
        let decoded = format.decode(payload, path: path)
        var findings: [String] = []
        if format.decode(payload, path: path) != decoded { findings.append("a schedule read two ways") }
        switch decoded {
        case .slots(let slots):
            if slots.count > ScheduleFormat.maxSlots { findings.append("\(slots.count) slots") }
            if slots.contains(where: { $0.end <= $0.start || !($0.price?.isFinite ?? true) }) { findings.append("a slot that cannot be: \(slots)") }
            if zip(slots, slots.dropFirst()).contains(where: { $0.end > $1.start }) { findings.append("slots out of order or overlapping: \(slots)") }
        case .invalid(let why) where why.description.isEmpty:
            findings.append("a schedule refused without a reason")
        default:
            break
        }
        return findings
    }

    /// What a value must agree with, by format.
    static func checkValue(_ value: Double, of payload: [UInt8], decoder: PayloadDecoder) -> [String] {
        var findings: [String] = []
        if decoder.sign != nil {
            var unsigned = decoder
            unsigned.sign = nil
            if case .value(let magnitude) = unsigned.decode(payload), abs(magnitude) != abs(value) {
                findings.append("the sign field changed the magnitude \(magnitude) to \(value)")
            }
            return findings
        }
        switch decoder.format {
        case .binary(let binary):
            let raw = binary.hex ? nil : payload
            if let raw {
                if raw.count != binary.type.byteCount {
                    findings.append("a \(binary.type) from \(raw.count) bytes")
                } else if let bytes = encode(value, as: binary), bytes != raw {
                    findings.append("\(raw) decoded as \(binary.type) \(binary.byteOrder) to \(value), which encodes to \(bytes)")
                }
            }
        case .keyValue(let keyValue):
            if !String(decoding: payload, as: UTF8.self).contains(keyValue.key) {
                findings.append("a value \(value) under key \(keyValue.key.debugDescription) from a payload without it")
            }
        case .text, .pattern:
            break
        }
        return findings
    }

    /// The bytes of `value` as the format's type; nil for a float whose bits a Double does not keep
    /// (NaN payloads, -0).
    static func encode(_ value: Double, as format: BinaryNumberFormat) -> [UInt8]? {
        let bits: UInt64
        switch format.type {
        case .int16: bits = UInt64(UInt16(bitPattern: Int16(value)))
        case .uint16: bits = UInt64(UInt16(value))
        case .int32: bits = UInt64(UInt32(bitPattern: Int32(value)))
        case .uint32: bits = UInt64(UInt32(value))
        case .int64:
            // A Double holds 53 bits: a larger integer comes back rounded.
            guard abs(value) < 9e15 else { return nil }
            bits = UInt64(bitPattern: Int64(value))
        case .float32:
            guard value != 0 else { return nil }
            bits = UInt64(Float(value).bitPattern)
        case .float64:
            guard value != 0 else { return nil }
            bits = value.bitPattern
        }
        let big = (0..<format.type.byteCount).reversed().map { UInt8(truncatingIfNeeded: bits >> (8 * UInt64($0))) }
        return format.byteOrder == .big ? big : big.reversed()
    }

    /// Every step quoted or indexed: `["a\"b"][2]`.
    static func canonicalText(of steps: [JSONPath.Step]) -> String {
        steps.map { step in
            switch step {
            case .index(let index): return "[\(index)]"
            case .key(let key):
                var quoted = ""
                for scalar in key.unicodeScalars {
                    if scalar == "\"" || scalar == "\\" { quoted.unicodeScalars.append("\\") }
                    quoted.unicodeScalars.append(scalar)
                }
                return "[\"\(quoted)\"]"
            }
        }.joined()
    }

    private static func isNaNValue(_ decoded: DecodedPayload) -> Bool {
        if case .value(let value) = decoded { return value.isNaN }
        return false
    }
}
