/// Hints for mistakes YAML makes easy.
enum ConfigHint {
    static let quoteJSONPath = #"a JSON path with [ ] is read by YAML as a list: put it in quotes, e.g. json: '["em:0"].x'"#

    /// The hint for a YAML syntax error on a line that holds an unquoted `json:` path with
    /// brackets (`{topic: x, json: ENERGY.Power[1]}`): in a flow mapping `[` starts a list.
    static func bracketsInJSONPath(onLine line: Int, of bytes: [UInt8]) -> String? {
        let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        guard line >= 1, line <= lines.count else { return nil }
        let text = String(decoding: lines[line - 1], as: UTF8.self)
        guard let key = text.firstRange(of: "json:") else { return nil }
        let value = text[key.upperBound...].drop { $0 == " " }
        guard let first = value.first, first != "'", first != "\"", value.contains("[") else { return nil }
        return quoteJSONPath
    }
}
