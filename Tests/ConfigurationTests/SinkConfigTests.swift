import Commands
import Configuration
import Persistence
import Platform
import Runtime
import Delivery
import FlowCore
import Foundation
import TestSupport
import Testing

/// `push:` of a widget and `output:`: read, checked (all problems at once, with key and line) and
/// shown by `check` without secrets.
@Suite struct SinkConfigTests {
    static let base = """
        sources:
          grid: {topic: x}
        widgets:
          power:
            template: flow
            flow: {exchange: {rate: grid}}

        """

    /// A progress widget is pushed to its own URL like a flow widget.
    @Test func aProgressWidgetHasAPushOfItsOwn() throws {
        let text = """
            sources:
              grid: {topic: x}
              battery: {topic: b}
              soc: {topic: s, unit: "%"}
            widgets:
              power:
                template: flow
                flow: {exchange: {rate: grid}, storage: {rate: battery, level: soc}}
                push: {url: "https://widgets.example.com/w/flow", token_env: FLOW_TOKEN}
              charge:
                template: progress
                progress: {of: battery}
                push: {url: "https://widgets.example.com/w/bar", token_env: BAR_TOKEN}
            """
        let config = try DaemonConfig.parse(text, file: "config.yaml")
        #expect(config.pushes.map(\.widget) == ["power", "charge"])
        #expect(config.pushes.map(\.api.url) == ["https://widgets.example.com/w/flow", "https://widgets.example.com/w/bar"])
        #expect(config.flow.progressWidgets.map(\.name) == ["charge"])
    }

    @Test func everyPushKeyIsRead() throws {
        let text = Self.base + """
                push:
                  url: https://widgets.example.com/api/v1/widgets/abc123/content
                  token_env: WIDGET_TOKEN
                  methods: {replace: POST, patch: PATCH}
                  headers: {X-Client: flowbridge, X-Tenant: home}
                  body_key: data
                  connect_timeout: 3s
                  timeout: 20s
                  ca_file: /etc/flowbridge/ca.pem
                  retry: {min: 2s, max: 10m}
            output: {stdout: true}

            """
        let config = try DaemonConfig.parse(text, file: "config.yaml")
        let push = try #require(config.pushes.first)
        #expect(config.pushes.count == 1)
        #expect(push.widget == "power")
        #expect(push.tokenEnv == "WIDGET_TOKEN" && push.tokenFile == nil)
        var expected = WidgetAPISettings(url: "https://widgets.example.com/api/v1/widgets/abc123/content")
        expected.replaceMethod = .post
        expected.headers = [.init(name: "X-Client", value: "flowbridge"), .init(name: "X-Tenant", value: "home")]
        expected.bodyKey = "data"
        expected.connectTimeoutSeconds = 3
        expected.timeoutSeconds = 20
        expected.caFile = "/etc/flowbridge/ca.pem"
        expected.retry = WidgetDelivery.Retry(minSeconds: 2, maxSeconds: 600)
        #expect(push.api == expected)
        #expect(config.output.stdout)
        #expect(config.hasSink)
    }

    /// The commented sinks of Config/example.yaml are valid once uncommented.
    @Test func theExamplesSinksAreValidUncommented() throws {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("Config/example.yaml"), encoding: .utf8)
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            guard ["    # push:", "    #   ", "# output:", "#   stdout:", "#   mqtt:", "#     "].contains(where: line.hasPrefix),
                  let hash = line.firstRange(of: "# ")
            else { return String(line) }
            return String(line[..<hash.lowerBound] + line[hash.upperBound...])
        }.joined(separator: "\n")
        let config = try DaemonConfig.parse(uncommented, file: "example.yaml")
        #expect(config.pushes.map(\.widget) == ["power"])
        #expect(config.pushes.first?.tokenFile == "widget-token")
        #expect(config.pushes.first?.api.headers == [.init(name: "X-Client", value: "flowbridge")])
        #expect(config.output.stdout)
        #expect(config.output.mqtt == MQTTOutputSettings(prefix: "flowbridge", retain: true, homeAssistant: .init()))
    }

    @Test func defaultsFollowTheContract() throws {
        let config = try DaemonConfig.parse(Self.base + "    push: {url: \"http://127.0.0.1:8080/w\", token_file: widget-token}\n", file: "c.yaml")
        let api = try #require(config.pushes.first?.api)
        #expect(api.replaceMethod == .put && api.patchMethod == .patch && api.bodyKey == "content")
        #expect(api.retry == WidgetDelivery.Retry(minSeconds: 1, maxSeconds: 300))
        #expect(!api.insecure && api.caFile == nil)
        #expect(!config.output.stdout)
    }

    @Test(arguments: [
        ("    push: {token_file: t}\n", "line 7: widgets.power.push.url: is required"),
        ("    push: {url: ftp://x/y, token_file: t}\n", "line 7: widgets.power.push.url: 'ftp://x/y' is not an http:// or https:// URL"),
        ("    push: {url: \"https://x/y\", token: abc}\n", "line 7: widgets.power.push.token: write the token to a file"),
        ("    push: {url: \"https://x/y\"}\n", "line 7: widgets.power.push: needs token_file or token_env"),
        ("    push: {url: \"https://x/y\", token_file: t, token_env: T}\n", "widgets.power.push.token_env: write token_file or token_env, not both"),
        ("    push: {url: \"https://x/y\", token_file: t, headers: {Authorization: Basic x}}\n",
         "widgets.power.push.headers.Authorization: Authorization is set by flowbridge"),
        ("    push: {url: \"https://x/y\", token_file: t, methods: {patch: patch}}\n", "widgets.power.push.methods.patch: 'patch' is not an HTTP method"),
        ("    push: {url: \"https://x/y\", token_file: t, retry: {min: 0s}}\n", "widgets.power.push.retry.min: must be longer than 0s"),
        ("    push: {url: \"https://x/y\", token_file: t, retry: {min: 10s, max: 1s}}\n", "widgets.power.push.retry.max: must not be shorter than min"),
        ("    push: {url: \"https://x/y\", token_file: t, timeout: soon}\n", "widgets.power.push.timeout: 'soon' is not a duration"),
        ("    push: {url: \"https://x/y\", token_file: t, proxy: p}\n", "widgets.power.push.proxy: unknown key"),
        ("output: {stdout: yes please}\n", "line 7: output.stdout: expected true or false"),
        ("output: {mqtt: {retain: maybe}}\n", "line 7: output.mqtt.retain: expected true or false"),
        ("output: {mqtt: {prefix: \"a/#\"}}\n", "line 7: output.mqtt.prefix: must be a topic without wildcards"),
        ("output: {mqtt: {prefix: fb/}}\n", "line 7: output.mqtt.prefix: must not start or end with /"),
        ("output: {mqtt: {prefix: \"fb\\u0007\"}}\n", "line 7: output.mqtt.prefix: holds \\u0007, which MQTT refuses in a topic"),
        ("mqtt: {topic_prefix: \"fb\\x85\"}\n", "line 7: mqtt.topic_prefix: holds \\u0085, which MQTT refuses in a topic"),
        ("keepalive: [{topic: \"R/x\\tkeepalive\"}]\n", "line 7: keepalive[0].topic: 'R/x\\u0009keepalive' is not a topic to publish to"),
        ("output: {mqtt: {home_assistant: {discovery_prefix: \"+\"}}}\n", "output.mqtt.home_assistant.discovery_prefix: must be a topic without wildcards"),
        ("output: {mqtt: {home_assistant: {prefix: ha}}}\n", "output.mqtt.home_assistant.prefix: unknown key"),
        ("output: {mqtt: {topic: x}}\n", "line 7: output.mqtt.topic: unknown key"),
        ("mqtt: {topic_prefix: home}\noutput: {mqtt: {prefix: flowbridge}}\n", "line 8: output.mqtt.prefix: 'flowbridge' differs from mqtt.topic_prefix 'home' (line 7)"),
    ])
    func brokenSinkSettingsNameKeyAndLine(tail: String, expected: String) {
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(Self.base + tail, file: "config.yaml") }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error")")
    }

    /// Problems of the sinks come with the others, all at once.
    @Test func sinkProblemsComeWithTheOthers() {
        let text = Self.base.replacingOccurrences(of: "rate: grid", with: "rate: gird") + "    push: {url: \"https://x/y\"}\n"
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "config.yaml") }
        #expect(error?.problems.count == 2, "\(error?.description ?? "")")
    }

    /// `check` names each widget's sink, with the URL but without what may be secret in it.
    @Test func checkShowsTheSinksWithoutSecrets() throws {
        let folder = TemporaryFolder()
        let path = try folder.write("c.yaml", Self.base + """
                push: {url: "https://me:hunter2@widgets.example.com/w/abc?key=s3cret", token_file: widget-token}
            output: {stdout: true}

            """)
        _ = try folder.write("widget-token", "t0ken\n")
        let run = try runFlowbridge(["check", "--config", path], environment: ["CREDENTIALS_DIRECTORY": folder.url.path])
        #expect(run.status == 0, "\(run.err)")
        #expect(!run.out.contains("t0ken"))
        #expect(run.out.contains("push to https://…@widgets.example.com/w/abc?…"), "\(run.out)")
        #expect(run.out.contains("token from the credential widget-token ($CREDENTIALS_DIRECTORY)"), "\(run.out)")
        #expect(run.out.contains("TLS verified against the system's certificates"))
        #expect(run.out.contains("output: standard output (NDJSON)"))
        #expect(!run.out.contains("hunter2") && !run.out.contains("s3cret"))
        #expect(!run.out.contains("warning"))
    }

    @Test func theMQTTOutputIsRead() throws {
        let short = try DaemonConfig.parse(Self.base + "output: {mqtt: true}\n", file: "c.yaml")
        #expect(short.output.mqtt == MQTTOutputSettings(prefix: "flowbridge", retain: true, homeAssistant: nil))
        #expect(short.hasSink)
        #expect(try DaemonConfig.parse(Self.base + "output: {mqtt: false}\n", file: "c.yaml").output.mqtt == nil)

        let full = try DaemonConfig.parse(Self.base + """
            output:
              mqtt: {prefix: home/flowbridge, retain: false, home_assistant: {discovery_prefix: ha}}

            """, file: "c.yaml")
        #expect(full.output.mqtt == MQTTOutputSettings(prefix: "home/flowbridge", retain: false, homeAssistant: .init(discoveryPrefix: "ha")))
        // One prefix: the daemon's status is the availability of what it publishes.
        #expect(full.mqtt.statusTopic == "home/flowbridge/status")
        #expect(full.output.mqtt?.statusTopic == full.mqtt.statusTopic)
        #expect(full.output.mqtt?.subscriptions == ["ha/status"])

        let inherited = try DaemonConfig.parse("mqtt: {topic_prefix: garage}\n" + Self.base + "output: {mqtt: {home_assistant: true}}\n", file: "c.yaml")
        #expect(inherited.output.mqtt?.prefix == "garage")
        #expect(inherited.output.mqtt?.homeAssistant == .init(discoveryPrefix: "homeassistant"))
        let agreeing = try DaemonConfig.parse("mqtt: {topic_prefix: garage}\n" + Self.base + "output: {mqtt: {prefix: garage}}\n", file: "c.yaml")
        #expect(agreeing.output.mqtt?.prefix == "garage")
    }

    /// What MQTT and Home Assistant cannot take is said with the rest, naming the widget or nodes.
    @Test(arguments: [
        ("""
            sources: {s: {topic: x}}
            widgets:
              "a/b": {template: flow, flow: {output: {rate: s}}}
            output: {mqtt: true}
            """, "line 4: output.mqtt: widget 'a/b' cannot be a topic level ('/' in it): rename it to publish it on MQTT"),
        ("""
            sources: {s: {topic: x}}
            widgets:
              "a\\tb": {template: flow, flow: {output: {rate: s}}}
            output: {mqtt: true}
            """, "line 4: output.mqtt: widget 'a\\u0009b' cannot be a topic level (\\u0009 in it): rename it to publish it on MQTT"),
        ("""
            sources: {s: {topic: "meter\\x85power"}}
            widgets:
              w: {template: flow, flow: {output: {rate: s}}}
            """, "sources.s.topic: topic filter 'meter\\u0085power' holds \\u0085, which MQTT refuses in a topic"),
        ("""
            sources: {s: {topic: x}, t: {topic: y}}
            widgets:
              power: {template: flow, flow: {inputs: [{name: East roof, rate: s}, {name: east-roof, rate: t}]}}
            output: {mqtt: {home_assistant: true}}
            """, "output.mqtt: home_assistant: 'east-roof power' of widget power would have the id flowbridge_power_east_roof_power of 'East roof power' of widget power; give the nodes distinct names"),
    ])
    func namesMQTTCannotTakeAreProblems(text: String, expected: String) {
        let error = #expect(throws: ConfigError.self) { try DaemonConfig.parse(text, file: "config.yaml") }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error")")
    }

    /// `check` names the MQTT topics of every widget and the entity each Home Assistant sensor gets.
    @Test func checkShowsTheMQTTOutputAndItsSensors() throws {
        let folder = TemporaryFolder()
        let path = try folder.write("c.yaml", """
            sources:
              solar: {topic: s}
              grid: {topic: g}
              soc: {topic: c, unit: "%"}
              battery: {topic: b}
            widgets:
              power:
                template: flow
                flow:
                  inputs: [{name: Solar, rate: solar, total: integrate}]
                  storage: {name: Battery, rate: battery, level: soc}
                  exchange: {name: Grid, rate: grid, total: export}
              autarky: {template: progress, label: Self-sufficiency, progress: {of: production_goal, goal_kwh: 20}}
            output: {mqtt: {home_assistant: true}}

            """)
        let run = try runFlowbridge(["check", "--config", path])
        #expect(run.status == 0, "\(run.err)")
        for line in [
            "output: MQTT, through flowbridge's connection to 127.0.0.1:1883",
            "  flowbridge/status: online / offline (retained; the last will)",
            "  flowbridge/power/content: the whole content after every push (retained, again at every connect)",
            "  flowbridge/power/patch: each push's merge patch",
            "  flowbridge/autarky/content: the whole content after every push (retained, again at every connect)",
            "  Home Assistant: device \"flowbridge\", discovery configs under homeassistant/sensor/flowbridge/ (announced again when homeassistant/status says online)",
            "    from flowbridge/power/sensors (retained):",
            "      sensor.flowbridge_power_solar_energy        Solar production today (kWh; energy, total_increasing)",
            "      sensor.flowbridge_power_battery_level       Battery level (%; battery, measurement)",
            "      sensor.flowbridge_power_battery_discharged  Battery discharged today (kWh; energy, total_increasing)",
            "      sensor.flowbridge_power_grid_import         Grid import today (kWh; energy, total_increasing)",
            "      sensor.flowbridge_power_grid_export         Grid export today (kWh; energy, total_increasing)",
            "      sensor.flowbridge_autarky_percent Self-sufficiency (%; measurement)",
        ] {
            #expect(run.out.contains(line + "\n"), "\(line)\n\(run.out)")
        }
        #expect(!run.out.contains("warning"))
    }

    @Test func checkWarnsWhenNothingIsDelivered() throws {
        let folder = TemporaryFolder()
        let run = try runFlowbridge(["check", "--config", try folder.write("c.yaml", Self.base)])
        #expect(run.status == 0)
        #expect(run.out.contains("warning: no sink: pushes are computed but go nowhere"), "\(run.out)")
    }
}
