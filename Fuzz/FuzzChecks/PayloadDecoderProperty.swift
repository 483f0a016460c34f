import FlowCore

/// `PayloadDecoder.decode` with any path and any payload. Input: one flag byte (bit 0: a `json:`
/// path follows, up to the first newline; bit 1: `decimal_comma`), then the payload.
///
/// Holds: decoding never crashes and gives the same answer twice; a `.value` is finite; without a
/// path there is no `.noField`; an `.invalid` says why; a path that parses reads back the same
/// from its canonical quoted form (`["key"][0]`), and one that does not names itself in the error.
public enum PayloadDecoderProperty: FuzzProperty {
    public static let name = "PayloadDecoder"

    public static func check(_ input: [UInt8]) -> [String] {
        guard let flags = input.first else { return [] }
        var rest = input.dropFirst()
        var path: JSONPath?
        var findings: [String] = []
        if flags & 1 == 1 {
            let end = rest.firstIndex(of: 0x0A) ?? rest.endIndex
            let text = String(decoding: rest[..<end], as: UTF8.self)
            rest = end < rest.endIndex ? rest[(end + 1)...] : []
            do {
                path = try JSONPath(text)
            } catch {
                if !error.description.contains("json path '\(text)'") {
                    findings.append("the error for path \(text.debugDescription) does not name it: \(error)")
                }
            }
            if let path {
                let canonical = canonicalText(of: path.steps)
                if (try? JSONPath(canonical))?.steps != path.steps {
                    findings.append("path \(text.debugDescription) (steps \(path.steps)) does not read back from \(canonical.debugDescription)")
                }
            }
        }
        let decoder = PayloadDecoder(path: path, decimalComma: flags & 2 == 2)
        let payload = Array(rest)
        let decoded = decoder.decode(payload)
        switch decoded {
        case .value(let value) where !value.isFinite:
            findings.append("decoded a value that is not finite: \(value)")
        case .noField where path == nil:
            findings.append("no path, yet the payload lacks a field")
        case .invalid(let why) where why.isEmpty:
            findings.append("invalid without a reason")
        default:
            break
        }
        let again = decoder.decode(payload)
        if again != decoded, !(isNaNValue(again) && isNaNValue(decoded)) {
            findings.append("decoded \(decoded) once and \(again) the second time")
        }
        return findings
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
