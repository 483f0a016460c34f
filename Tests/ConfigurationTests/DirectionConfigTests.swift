import Configuration
import FlowCore
import TestSupport
import Testing

/// `direction:` on a source: what it makes, and each mistake named with key and line.
@Suite struct DirectionConfigTests {
    /// Source `a` with `keys`, beside the flags `up` and `down`, the signed meter `meter` and the
    /// counter `energy`.
    static func config(_ keys: String, topic: String = "x") -> String {
        """
        sources:
          a: {topic: '\(topic)', \(keys)}
          up: {topic: u}
          down: {topic: d}
          meter: {topic: m}
          energy: {topic: e, unit: kWh}
        widgets:
          w: {template: flow, flow: {storage: {rate: a}}}

        """
    }

    @Test(arguments: [
        ("direction: {positive: charging}", "line 2: sources.a.direction.positive: unknown source 'charging' (sources: a, down, energy, meter, up)"),
        ("direction: {negative: up, positive: nope}", "line 2: sources.a.direction.positive: unknown source 'nope'"),
        ("direction: {sign_of: grid}", "line 2: sources.a.direction.sign_of: unknown source 'grid'"),
        ("direction: {positive: a}", "line 2: sources.a.direction.positive: 'a' cannot give its own direction"),
        ("direction: {positive: up, negative: up}", "line 2: sources.a.direction.negative: 'up' cannot be both the positive and the negative flag"),
        ("direction: {positive: up, sign_of: meter}", "line 2: sources.a.direction.sign_of: a direction comes from flags (positive:, negative:) or from a signed number (sign_of:): write one kind, not both"),
        ("direction: {}", "line 2: sources.a.direction.positive: is required (or negative:, or sign_of:)"),
        ("direction: {postive: up}", "line 2: sources.a.direction.postive: unknown key"),
        ("direction: up", "line 2: sources.a.direction: expected a mapping"),
        ("direction: {sign_of: energy}", "line 2: sources.a.direction.sign_of: source 'energy' is energy (kWh); sign_of reads the sign of a power"),
        ("unit: kWh, direction: {positive: up}", "line 2: sources.a.direction: a direction signs a power; this source is energy (kWh)"),
        ("json: p, sign: {json: flow, negative: [out]}, direction: {positive: up}", "line 2: sources.a.direction: the direction comes from a field (sign:) or from other sources (direction:): write one of them, not both"),
    ])
    func aBrokenDirectionNamesKeyAndLine(keys: String, expected: String) {
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(Self.config(keys), file: "config.yaml") }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error")")
    }

    @Test func aSumOfTopicsHasNoOneDirection() {
        let text = Self.config("combine: sum, direction: {positive: up}", topic: "x/+")
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "config.yaml") }
        #expect(error?.description.contains("line 2: sources.a.direction: a sum of topics has no one direction") == true, "\(error?.description ?? "no error")")
    }

    /// A direction read through another direction is refused: each is read from a flag or a number.
    @Test func aDirectionThroughAnotherDirectionIsRefused() {
        let text = Self.config("direction: {sign_of: meter}").replacingOccurrences(of: "meter: {topic: m}", with: "meter: {topic: m, direction: {positive: up}}")
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "config.yaml") }
        #expect(error?.description.contains("line 2: sources.a.direction.sign_of: 'meter' takes its direction from other sources itself; name the flag or the signed number directly") == true,
                "\(error?.description ?? "no error")")
    }

    @Test(arguments: [
        ("direction: {positive: up, negative: down}", DirectionSource.flags(positive: "up", negative: "down")),
        ("direction: {negative: down}", .flags(positive: nil, negative: "down")),
        ("direction: {positive: up}", .flags(positive: "up", negative: nil)),
        ("direction: {sign_of: meter}", .signOf("meter")),
    ])
    func theKeysMakeTheDirection(keys: String, expected: DirectionSource) throws {
        let config = try DaemonConfig.parse(Self.config(keys), file: "config.yaml")
        #expect(config.flow.sources[0].direction == expected)
    }

    /// A flag without a `map:` reads on/off and true/false (any case) as 1/0; one with its own
    /// map keeps it, and a signed number reads numbers only.
    @Test func aFlagReadsOnOffAndTrueFalse() throws {
        var text = Self.config("direction: {positive: up, negative: down}")
        text = text.replacingOccurrences(of: "down: {topic: d}", with: "down: {topic: d, map: {yes: 1, no: 0}}")
        let sources = try DaemonConfig.parse(text, file: "config.yaml").flow.sources
        let up = try #require(sources.first { $0.name == "up" })
        for (payload, value) in [("on", 1.0), ("OFF", 0), ("true", 1), ("false", 0), ("1", 1), ("0", 0), (#"{"v": true}"#, 1)] {
            var decoder = up.decoder
            if payload.hasPrefix("{") { decoder.path = try JSONPath("v") }
            #expect(decoder.decode(Array(payload.utf8)) == .value(value), "\(payload)")
        }
        let down = try #require(sources.first { $0.name == "down" })
        #expect(down.decoder.decode(Array("yes".utf8)) == .value(1))
        #expect(down.decoder.map?.values["on"] == nil)
        let meter = try DaemonConfig.parse(Self.config("direction: {sign_of: meter}"), file: "config.yaml").flow.sources.first { $0.name == "meter" }
        #expect(meter?.decoder.map == nil)
    }
}
