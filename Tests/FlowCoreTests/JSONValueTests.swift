import FlowCore
import TestSupport
import Testing

@Suite struct JSONValueTests {
    @Test(arguments: [
        (1000.0, "1000"), (-1400.0, "-1400"), (12.4, "12.4"), (0.0, "0"), (-0.0, "0"), (0.1 + 0.2, "0.30000000000000004"),
        (1e-5, "1e-05"), (76.5, "76.5"), (1e20, "1e+20"), (Double.nan, "null"),
    ])
    func numbersPrintAsAPersonWritesThem(number: Double, text: String) {
        #expect(JSONValue.number(number).description == text)
    }

    @Test func objectKeysPrintInByteOrder() {
        let value: JSONValue = ["template": "flow", "b": [1, 2.5, nil, true], "a": ["z": "x", "Z": "y"]]
        #expect(value.description == #"{"a":{"Z":"y","z":"x"},"b":[1,2.5,null,true],"template":"flow"}"#)
    }

    @Test(arguments: [
        #"{"a": [1, -2.5e3, "x\"y\u00e9\ud83d\ude00", null, false, {}], "": []}"#,
        #"  "tab\tnew\nline\\"  "#,
        "-0", "1E+2", "[[[[]]]]",
    ])
    func parsesAndPrintsBackToTheSameValue(text: String) throws {
        let value = try JSONValue(parsing: text)
        #expect(try JSONValue(parsing: value.description) == value)
    }

    @Test func decodesEscapesAndUnicode() throws {
        #expect(try JSONValue(parsing: #""\u00e9\ud83d\ude00\/""#) == .string("é😀/"))
        #expect(try JSONValue(parsing: #""Sonnenstrom ☀️""#) == .string("Sonnenstrom ☀️"))
    }

    @Test(arguments: [
        "", "   ", "{", "[1,]", "{\"a\" 1}", "01", "1.", ".5", "+1", "nan", "NaN", "tru", "\"abc", "\"a\u{01}\"",
        "{\"a\":1}}", "1 2", "[" + String(repeating: "[", count: 200) + String(repeating: "]", count: 201), "1e999",
        "\"\\x\"",
    ])
    func rejectsWhatIsNotJSON(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
    }

    @Test func controlCharactersAreEscapedOnOutput() {
        #expect(JSONValue.string("a\u{01}b\"c\\").description == #""a\u0001b\"c\\""#)
    }
}
