@testable import Configuration
import TestSupport
import Testing

/// A password or token is one line of printable text: a control character inside (a token file
/// with a second line) would go as it is into an `Authorization:` header or a CONNECT packet.
extension CheckTests {
    static let pushed = """
        sources:
          a: {topic: x}
        widgets:
          w: {template: flow, flow: {output: {rate: a}}, push: {url: "https://widgets.example/w", token_file: FOLDER/token}}
        """

    static let secretCases: [Case] = [
        Case(name: "token file with a second line", config: pushed,
             expected: "line 4: widgets.w.push.token_file: FOLDER/token holds a line break after character 6: a secret is one line",
             files: ["token": "abc123\nX-Other: 1\n"]),
        Case(name: "password file with a tab", config: "mqtt: {username: u, password_file: FOLDER/pw}\n" + sources,
             expected: "line 1: mqtt.password_file: FOLDER/pw holds the control character U+0009 after character 2",
             files: ["pw": "se\tcret\n"]),
        Case(name: "password from the environment with an escape", config: "mqtt: {username: u, password_env: FB_PW}\n" + sources,
             expected: "line 1: mqtt.password_env: the environment variable FB_PW holds the control character U+001B after character 0",
             environment: ["FB_PW": "\u{1B}[2Jpw"]),
    ]

    @Test(arguments: secretCases)
    func aSecretWithAControlCharacterIsRefusedWithItsKeyAndLine(_ test: Case) throws {
        try checkFindsWhatRunRefuses(test)
    }

    /// What is refused and what is kept: only a control character counts, never where it is said
    /// by showing the secret.
    @Test(arguments: [
        ("s3cr3t-pässwörd €", nil),
        ("two\nlines", "holds a line break after character 3"),
        ("cr\rinside", "holds a line break after character 2"),
        ("del\u{7F}", "U+007F after character 3"),
        ("c1\u{85}next", "U+0085 after character 2"),
        ("nul\u{0}", "U+0000 after character 3"),
    ] as [(String, String?)])
    func controlCharactersInASecretAreFound(secret: String, problem: String?) {
        let found = ConfigLoader.controlCharacterProblem(secret)
        if let problem {
            #expect(found?.contains(problem) == true, "\(found ?? "nil")")
            #expect(found?.contains(secret) == false)
        } else {
            #expect(found == nil)
        }
    }
}
