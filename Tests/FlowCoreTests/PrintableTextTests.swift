import FlowCore
import Testing

/// What is heard from the broker, as it may be printed: every character that would act instead of
/// show (on a terminal, in the journal, in a config) written as an escape, the rest as it is.
@Suite struct PrintableTextTests {
    @Test(arguments: [
        ("1500 W", "1500 W"),
        ("Grüße → 3 kW ☀︎", "Grüße → 3 kW ☀︎"),
        ("\u{0}<0>boom", #"\u0000<0>boom"#),
        ("\u{1B}]0;owned\u{07}", #"\u001B]0;owned\u0007"#),
        ("\u{1B}[2J", #"\u001B[2J"#),
        ("two\nlines\r", #"two\u000Alines\u000D"#),
        ("tab\there\u{7F}", #"tab\u0009here\u007F"#),
        ("next\u{85}line\u{2028}", #"next\u0085line\u2028"#),
        ("\u{202E}txt\u{FEFF}", #"\u202Etxt\uFEFF"#),
        ("tag\u{E0001}", #"tag\U000E0001"#),
        (#"a "quoted" \ text"#, #"a "quoted" \ text"#),
    ])
    func escapesWhatWouldActInsteadOfShow(text: String, printed: String) {
        #expect(PrintableText.escaped(text) == printed)
    }

    /// A double-quoted YAML scalar also takes `"` and `\` after a backslash.
    @Test func aQuotedScalarBackslashesItsQuotes() {
        #expect(PrintableText.escaped(#"a "b" \ c"#, backslashed: ["\"", "\\"]) == #"a \"b\" \\ c"#)
    }
}
