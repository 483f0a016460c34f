import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import TestSupport
import Testing

@Suite struct ConfigTests {
    /// What a shipped config says of the MQTT protocol's default is what the loader does: MQTT 5,
    /// falling back to 3.1.1 (a broker too old for 5 is still reached).
    @Test(arguments: Repository.shippedConfigs.filter { $0.hasSuffix(".yaml") })
    func theProtocolsDefaultIsSaidAsTheLoaderHasIt(file: String) throws {
        let loaded = try DaemonConfig.parse("sources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {output: {rate: a}}}}", file: "c.yaml")
        #expect(loaded.mqtt.protocolVersion == .v5 && loaded.mqtt.fallsBackToV311)
        let text = try String(contentsOf: Repository.root.appendingPathComponent(file), encoding: .utf8)
        for line in text.split(separator: "\n") where line.contains("protocol:") && line.contains("default") {
            #expect(line.contains("default: 5, falling back to 3.1.1"), "\(file): \(line)")
        }
    }

    static let example = """
        timezone: Europe/Berlin            # optional; default: the system's zone
        mqtt: {host: 127.0.0.1, port: 1883} # used by `run`; replay ignores it
        sources:                           # every number flowbridge reads, by name
          solar:   {topic: solar/ac/power}                           # plain number, W
          grid:    {topic: shellypro3em/status/em:0, json: total_act_power}
          battery: {topic: evcc/site/battery/power, invert: true}    # evcc: + = discharging
          soc:     {topic: evcc/site/battery/soc, unit: "%"}
          yield:   {topic: solar/ac/yieldday, unit: Wh}
        widgets:
          power:
            template: flow
            label: Power
            unit: W
            flow:
              inputs:   [{name: Solar, rate: solar, total: integrate, icon: sun.max.fill}]
              storage:  {name: Battery, rate: battery, level: soc}
              exchange: {name: Grid, rate: grid, total: import}
              output:   {name: Home, rate: balance, total: integrate}
            policy: {min_interval: 10s, rate_step: 10, rate_deadband: 20, total_step: 0.1}
        """

    @Test func theIssuesExampleLoads() throws {
        let config = try DaemonConfig.parse(Self.example, file: "config.yaml")
        #expect(config.timezone == "Europe/Berlin")
        #expect(config.flow.sources.map(\.name) == ["solar", "grid", "battery", "soc", "yield"])
        let battery = config.flow.sources[2]
        #expect(battery.invert)
        #expect(config.flow.sources[4].unit == .wattHour)
        let widget = try #require(config.flow.widgets.first)
        #expect(widget.inputs.first?.total == .integrate)
        #expect(widget.exchange?.total == .imported)
        #expect(widget.output?.rate == .balance)
        #expect(widget.storage?.level == "soc")
        #expect(widget.policy == PatchPolicyConfig(minIntervalSeconds: 10, rateStep: 10, rateDeadband: 20, totalStep: 0.1))
    }

    @Test func jsonIsValidYAMLToo() throws {
        let json = #"""
            {"sources": {"grid": {"topic": "g", "json": "[\"em:0\"].x", "stale_after": "90s", "decimal_comma": true}},
             "widgets": {"w": {"template": "flow", "flow": {"exchange": {"rate": ["grid"], "total": {"counter": "grid"}}}}}}
            """#
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(json, file: "c.json") }
        // grid is a power source, so it cannot be a counter: named with its line.
        #expect(error?.description.contains("c.json: line 2: widgets.w.flow.exchange.total: source 'grid' is power (W); total needs energy") == true)
        let fixed = json.replacingOccurrences(of: #""total": {"counter": "grid"}"#, with: #""total": "export""#)
        let config = try DaemonConfig.parse(fixed, file: "c.json")
        #expect(config.flow.sources[0].staleAfterSeconds == 90)
        #expect(config.flow.sources[0].decoder.decimalComma)
        #expect(config.flow.widgets[0].exchange?.total == .exported)
    }

    /// Each broken config names the key path and the line.
    @Test(arguments: [
        ("sources:\n  a: {topic: x}\nwidgets:\n  w:\n    template: flow\n    flow:\n      inputs: [{rate: solr}]\n",
         "line 7: widgets.w.flow.inputs[0].rate: unknown source 'solr' (sources: a)"),
        ("sources:\n  a: {json: x}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.topic: is required"),
        ("sources:\n  a: {topic: x, level: 3}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.level: unknown key"),
        ("sources:\n  a: {topic: x}\n  s: {topic: y, unit: \"%\"}\nwidgets:\n  w:\n    template: flow\n    flow:\n      exchange: {rate: a, level: s}\n",
         "line 8: widgets.w.flow.exchange.level: only the storage slot has a level"),
        ("sources:\n  a: {topic: x, stale_after: soon}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.stale_after: 'soon' is not a duration"),
        ("sources:\n  a: {topic: x, unit: MW}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.unit: 'MW' is not one of W, kW, Wh, kWh, Wmin, %"),
        ("sources:\n  a: {topic: x\nwidgets: {}\n", "line 3"),
        ("sources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, flow: {exchange: {rate: a, total: integrate}}}\n",
         "line 4: widgets.w.flow.exchange.total: 'integrate' is not a total of the exchange slot"),
        ("sources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, flow: {inputs: [{rate: balance}]}}\n",
         "line 4: widgets.w.flow.inputs[0].rate: balance derives the output"),
        ("sources:\n  a: {topic: \"x/#/y\"}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.topic: topic filter 'x/#/y': '#' must be the whole last level"),
        ("sources:\n  a: {topic: x, json: \"a..b\"}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.json: json path 'a..b'"),
        ("timezone: Mars/Olympus\nsources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 1: timezone: unknown time zone 'Mars/Olympus'"),
        ("mqtt: {password: hunter2}\nsources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 1: mqtt.password: write the password to a file"),
        ("sources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a, name: \"\(String(repeating: "x", count: 33))\"}}}\n",
         "is longer than 32 characters"),
        ("sources:\n  a: {topic: x}\nwidgets:\n  w:\n    template: flow\n    flow:\n      output: {rate: a, color: \"rgb(1,2,3)\"}\n",
         "line 7: widgets.w.flow.output.color: 'rgb(1,2,3)' is not a color"),
        ("sources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, flow: {}}\n",
         "line 4: widgets.w.flow: needs at least one of inputs, output, storage, exchange"),
        ("sources:\n  a: {topic: solar/ac/power, combine: sum}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.combine: sum adds the topics a wildcard matches; 'solar/ac/power' is one topic"),
        ("sources:\n  a: {topic: \"solar/+/power\", combine: average}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.combine: 'average' is not one of latest, sum"),
        ("sources:\n  a: {topic: x, max_payload: lots}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.max_payload: 'lots' is not a size in bytes (write e.g. 65536, 64KiB or 1MiB)"),
        ("sources:\n  a: {topic: x, max_payload: 512MiB}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.max_payload: '512MiB' is more than an MQTT message can carry (268368892 bytes)"),
        // Colors are a name or hex, the node's and the shared ones alike (the widget refuses a push with another).
        ("sources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a, color: light blue}}}\n",
         "line 4: widgets.w.flow.output.color: 'light blue' is not a color the widget takes: a name (yellow, mint) or hex (#FFCC00)"),
        ("sources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, accent_color: \"#12\", flow: {output: {rate: a}}}\n",
         "line 4: widgets.w.accent_color: '#12' is not a color the widget takes: a name (yellow, mint) or hex (#FFCC00)"),
        ("sources:\n  a: {topic: x, stale_after: 0s}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.stale_after: must be longer than 0s (or never)"),
        // With it, a reading of 1e308 W passed, and two of them integrated to an infinite total.
        ("sources:\n  a: {topic: x, max_power: 1e308}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n",
         "line 2: sources.a.max_power: must be more than 0 W and at most 1e9 W"),
        ("sources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}, policy: {settle: 5m}}\n",
         "line 4: widgets.w.policy.settle: must be at most 60s"),
        ("sources:\n  a: {topic: x}\nwidgets:\n  w: {template: flow, stale_marker: maybe, flow: {output: {rate: a}}}\n",
         "line 4: widgets.w.stale_marker: expected true or false"),
    ])
    func brokenConfigNamesKeyAndLine(text: String, expected: String) {
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "config.yaml") }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error")")
    }

    /// A duration too long to mean anything is a config problem, not a value: a keepalive interval,
    /// a timeout or a retry wait becomes a whole number of seconds, milliseconds or nanoseconds,
    /// which `1e19` (or `1e308d`, no number at all) does not fit, and `check` passed what `run`
    /// then trapped on. Each case adds its text at the top, to source `a` or to widget `w`.
    @Test(arguments: [
        ("keepalive: [{topic: k, interval: 1e19}]\n", "", "", "keepalive[0].interval"),
        ("keepalive: [{topic: k, interval: 1e308d}]\n", "", "", "keepalive[0].interval"),
        ("", ", stale_after: 1e308d", "", "sources.a.stale_after"),
        ("", ", max_gap: 1e300", "", "sources.a.max_gap"),
        ("", "", ", policy: {min_interval: 1e308d}", "widgets.w.policy.min_interval"),
        ("", "", ", push: {url: \"https://x/y\", token_env: T, timeout: 1e19}", "widgets.w.push.timeout"),
        ("", "", ", push: {url: \"https://x/y\", token_env: T, connect_timeout: 1e308d}", "widgets.w.push.connect_timeout"),
        ("", "", ", push: {url: \"https://x/y\", token_env: T, retry: {min: 1s, max: 1e10}}", "widgets.w.push.retry.max"),
        ("", "", ", push: {url: \"https://x/y\", token_env: T, retry: {min: 1e308d}}", "widgets.w.push.retry.min"),
    ])
    func endlessDurationsAreProblems(top: String, source: String, widget: String, path: String) {
        let text = top + "sources:\n  a: {topic: x\(source)}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}\(widget)}\n"
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "config.yaml") }
        #expect(error?.problems.map(\.path) == [path], "\(error?.description ?? "no error")")
        #expect(error?.description.contains("longer than 365d") == true, "\(error?.description ?? "no error")")
    }

    /// A source with a broken topic still has its other keys read: each is checked, none is
    /// called unknown (`invert` and `decimal_comma` were, once the topic had failed).
    @Test func aBrokenTopicLeavesTheSourcesOtherKeysKnown() {
        let text = "sources:\n  a: {topic: \"a/#/b\", invert: true, decimal_comma: maybe}\nwidgets:\n  w: {template: flow, flow: {output: {rate: a}}}\n"
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "config.yaml") }
        #expect(error?.problems.map(\.path) == ["sources.a.topic", "sources.a.decimal_comma", "widgets.w.flow.output.rate"], "\(error?.description ?? "no error")")
    }

    @Test func freshnessSizesAndSettlingHaveDefaultsAndOptOuts() throws {
        let config = try DaemonConfig.parse("""
            sources:
              grid:   {topic: meter/grid}
              soc:    {topic: bms/soc, unit: "%", stale_after: never}
              solar:  {topic: "solar/+/0/power", combine: sum, stale_after: 2m, max_payload: 4KiB}
              events: {topic: shelly/events/rpc, json: x, max_payload: 1MiB}
              plain:  {topic: plain, max_payload: 512}
            widgets:
              w:
                template: flow
                stale_marker: false
                flow: {inputs: [{rate: solar}], exchange: {rate: grid}, output: {rate: balance}}
                policy: {settle: 0s}
              v: {template: flow, flow: {exchange: {rate: grid}}}
            """, file: "c.yaml")
        let sources = config.flow.sources
        #expect(sources.map(\.staleAfterSeconds) == [600, nil, 120, 600, 600])
        #expect(sources.map(\.combine) == [.latest, .latest, .sum, .latest, .latest])
        #expect(sources.map(\.maxPayloadBytes) == [65_536, 65_536, 4096, 1_048_576, 512])
        #expect(config.flow.widgets.map(\.staleMarker) == [false, true])
        #expect(config.flow.widgets.map(\.policy.settleSeconds) == [0, 2])
    }

    /// The configs the repository ships stay valid: every file under `Config/`, the device
    /// examples in `Config/examples/` included.
    @Test func shippedConfigsPassCheck() throws {
        let files = Repository.shippedConfigs
        #expect(files.count > 10)
        for file in files {
            let run = try runFlowbridge(["check", "--config", Repository.root.appendingPathComponent(file).path])
            #expect(run.status == 0, "\(file): \(run.err)")
        }
    }

    @Test func checkPrintsTheResolvedMappingOrTheErrors() throws {
        let folder = TemporaryFolder()
        let good = try folder.write("good.yaml", Self.example)
        let ok = try runFlowbridge(["check", "--config", good])
        #expect(ok.status == 0)
        #expect(ok.out.contains("+ battery [evcc/site/battery/power, W, inverted] (+ filling, − draining)"))
        #expect(ok.out.contains("grid [shellypro3em/status/em:0, json total_act_power, W] (+ importing, − exporting)"))
        #expect(ok.out.contains("pushes at least 10s apart, each once the readings of 2s have settled"))
        #expect(ok.out.contains("balance: Σ inputs + exchange − storage, at least 0; a stale input counts 0 W, a stale exchange or storage makes it unknown"))
        let sums = try folder.write("sums.yaml", Self.example
            .replacingOccurrences(of: "solar:   {topic: solar/ac/power}", with: "solar:   {topic: \"solar/+/0/power\", combine: sum, max_payload: 1KiB}")
            .replacingOccurrences(of: "soc:     {topic: evcc/site/battery/soc, unit: \"%\"}", with: "soc:     {topic: evcc/site/battery/soc, unit: \"%\", stale_after: never}"))
        let summed = try runFlowbridge(["check", "--config", sums])
        #expect(summed.status == 0, "\(summed.err)")
        #expect(summed.out.contains("solar [solar/+/0/power, W, sum of its topics, payloads up to 1024 bytes]"), "\(summed.out)")
        #expect(summed.out.contains("soc [evcc/site/battery/soc, %, never stale]"), "\(summed.out)")
        let bad = try folder.write("bad.yaml", Self.example.replacingOccurrences(of: "rate: grid", with: "rate: gird"))
        let failed = try runFlowbridge(["check", "--config", bad])
        #expect(failed.status == 78)
        #expect(failed.err.contains("bad.yaml: line 17: widgets.power.flow.exchange.rate: unknown source 'gird'"), "\(failed.err)")
        let usage = try runFlowbridge(["check", "--bogus"])
        #expect(usage.status == 64)
    }
}

/// `Config/flowbridge.yaml` is the reference of every key: the loader itself says which keys each
/// section knows (an unknown key is reported with the known ones), and each must be in the file;
/// and every key the file writes, live or commented out, is one the loader reads.
@Suite struct ConfigReferenceTests {
    /// A config with `zzz` as an extra key in one section, and that section's path.
    static let sections: [(path: String, config: String)] = [
        ("(top)", "zzz: 1\nsources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}"),
        ("mqtt", "mqtt: {zzz: 1}\nsources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}"),
        ("mqtt.tls", "mqtt: {tls: {zzz: 1}}\nsources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}"),
        ("keepalive[0]", "keepalive: [{topic: k, zzz: 1}]\nsources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}"),
        ("output", "output: {zzz: 1}\nsources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}"),
        ("output.mqtt", "output: {mqtt: {zzz: 1}}\nsources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}"),
        ("output.mqtt.home_assistant", "output: {mqtt: {home_assistant: {zzz: 1}}}\nsources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}"),
        ("sources.a", "sources: {a: {topic: x, zzz: 1}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}"),
        ("widgets.w", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, zzz: 1, flow: {exchange: {rate: a}}}}"),
        ("widgets.w.flow", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {zzz: 1, exchange: {rate: a}}}}"),
        ("widgets.w.flow.exchange", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a, zzz: 1}}}}"),
        ("widgets.w.flow.exchange.total", "sources: {a: {topic: x}, c: {topic: y, unit: kWh}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a, total: {counter: c, zzz: 1}}}}}"),
        ("widgets.w.policy", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, policy: {zzz: 1}, flow: {exchange: {rate: a}}}}"),
        ("widgets.w.push", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, push: {url: \"https://x/y\", token_env: T, zzz: 1}, flow: {exchange: {rate: a}}}}"),
        ("widgets.w.push.methods", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, push: {url: \"https://x/y\", token_env: T, methods: {zzz: PUT}}, flow: {exchange: {rate: a}}}}"),
        ("widgets.w.push.retry", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, push: {url: \"https://x/y\", token_env: T, retry: {zzz: 1s}}, flow: {exchange: {rate: a}}}}"),
        ("widgets.b", "sources: {a: {topic: x}, s: {topic: y, unit: \"%\"}}\nwidgets: {w: {template: flow, flow: {storage: {rate: a, level: s}}}, b: {template: progress, zzz: 1, progress: {of: battery}}}"),
        ("widgets.b.progress (battery)", "sources: {a: {topic: x}, s: {topic: y, unit: \"%\"}}\nwidgets: {w: {template: flow, flow: {storage: {rate: a, level: s}}}, b: {template: progress, progress: {of: battery, zzz: 1}}}"),
        ("widgets.b.progress (self_sufficiency)", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}, b: {template: progress, progress: {of: self_sufficiency, zzz: 1}}}"),
        ("tariff", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}\ntariff: {import: {price: 0.3}, zzz: 1}"),
        ("tariff.import", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}\ntariff: {import: {price: 0.3, zzz: 1}}"),
        ("tariff.import.zones[0]", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}}\ntariff: {import: {zones: [{price: 0.3, zzz: 1}]}}"),
        ("widgets.b.progress (production_goal)", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {inputs: [{rate: a, total: integrate}]}}, b: {template: progress, progress: {of: production_goal, goal_kwh: 5, zzz: 1}}}"),
        ("widgets.b.progress (cost)", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, flow: {exchange: {rate: a}}}, b: {template: progress, progress: {of: cost, budget: 5, zzz: 1}}}\ntariff: {import: {price: 0.3}}"),
        ("widgets.w.subtitle", "sources: {a: {topic: x}}\nwidgets: {w: {template: flow, subtitle: {show: net_cost, zzz: 1}, flow: {exchange: {rate: a}}}}\ntariff: {import: {price: 0.3}}"),
    ]

    /// The keys the loader knows in a section, from its "unknown key" report.
    static func knownKeys(_ config: String) -> [String] {
        do {
            _ = try DaemonConfig.parse(config, file: "c.yaml")
            return []
        } catch {
            guard let problem = error.problems.first(where: { $0.message.hasPrefix("unknown key (known here: ") }) else { return [] }
            return problem.message.dropFirst("unknown key (known here: ".count).dropLast().split(separator: ", ").map(String.init)
        }
    }

    @Test(arguments: sections.map(\.path))
    func theReferenceNamesEveryKeyOf(section: String) throws {
        let config = try #require(Self.sections.first { $0.path == section }?.config)
        let known = Self.knownKeys(config)
        #expect(!known.isEmpty, "no unknown-key report for \(section)")
        let reference = try String(contentsOf: Repository.root.appendingPathComponent("Config/flowbridge.yaml"), encoding: .utf8)
        let missing = known.filter { !reference.contains("\($0):") }
        #expect(missing.isEmpty, "Config/flowbridge.yaml does not mention \(section): \(missing.joined(separator: ", "))")
    }

    /// The reference with its commented-out keys written in: `# key: value` where the value is a
    /// word or a `{…}`/`[…]` (prose after a `#` reads otherwise), at the indentation it shows.
    static func uncommented(_ reference: String) -> (text: String, keys: [String]) {
        var keys: [String] = []
        let lines = reference.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let hash = line.firstRange(of: "# "), line[..<hash.lowerBound].allSatisfy({ $0 == " " }) else { return String(line) }
            let rest = line[hash.upperBound...]
            let body = rest.drop { $0 == " " }
            guard let colon = body.firstIndex(of: ":"), !body[..<colon].isEmpty,
                  body[..<colon].allSatisfy({ $0.isLowercase || $0 == "_" })
            else { return String(line) }
            let value = (body[body.index(after: colon)...].firstRange(of: " #").map { body[body.index(after: colon)..<$0.lowerBound] }
                ?? body[body.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            guard value.isEmpty || !value.contains(" ") || value.hasPrefix("{") || value.hasPrefix("[") else { return String(line) }
            keys.append(String(body[..<colon]))
            return String(line[..<hash.lowerBound]) + rest
        }
        return (lines.joined(separator: "\n"), keys)
    }

    /// Written in, the commented-out keys make a config the loader reads without an unknown key:
    /// its only problems are the alternatives the reference shows side by side.
    @Test func everyKeyOfTheReferenceIsOneTheLoaderReads() throws {
        let reference = try String(contentsOf: Repository.root.appendingPathComponent("Config/flowbridge.yaml"), encoding: .utf8)
        let (text, keys) = Self.uncommented(reference)
        #expect(Set(keys).isSuperset(of: ["password_file", "tls", "state_file", "push", "url", "retry"]), "\(keys)")
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "flowbridge.yaml") }
        let problems = error?.problems ?? []
        #expect(!problems.isEmpty && problems.allSatisfy { $0.message.hasSuffix(", not both") }, "\(error?.description ?? "")")
    }
}
