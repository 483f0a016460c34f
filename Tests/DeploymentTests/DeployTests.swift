import Commands
import Configuration
import Persistence
import Platform
import Runtime
import FlowCore
import Foundation
import Glibc
import TestSupport
import Testing

/// The Home Assistant add-on (`deploy/homeassistant/`): its run script against the options Home
/// Assistant writes and the Supervisor's answer about its MQTT service (a file, read through
/// `SUPERVISOR_API=file://…`), the config it writes, and the daemon it starts.
@Suite(.enabled(if: MosquittoBroker.findExecutable("jq") != nil && MosquittoBroker.findExecutable("curl") != nil, "jq and curl are missing (make deps installs them)"), .ownThread)
struct HomeAssistantAddonTests {
    static let folder = Repository.root.appendingPathComponent("deploy/homeassistant")
    static let runScript = folder.appendingPathComponent("run.sh").path

    /// The add-on's manifest, read as Home Assistant reads it.
    static func manifest() throws -> YAMLNode {
        try YAMLDocument.parse(String(contentsOf: folder.appendingPathComponent("config.yaml"), encoding: .utf8))
    }

    /// A YAML node as the JSON Home Assistant makes of it (`/data/options.json`).
    static func json(_ node: YAMLNode) -> JSONValue {
        switch node {
        case .scalar(let text, let style, _):
            guard style.isPlain else { return .string(text) }
            if text == "true" || text == "false" { return .bool(text == "true") }
            return Double(text).map(JSONValue.number) ?? .string(text)
        case .sequence(let items, _): return .array(items.map(json))
        case .mapping(let pairs, _):
            return .object(Dictionary(pairs.map { ($0.key.scalarValue ?? "", json($0.value)) }, uniquingKeysWith: { $1 }))
        }
    }

    /// The add-on's /data: options.json, and the Supervisor's answer at services/mqtt.
    struct AddonData {
        let folder = TemporaryFolder()
        var path: String { folder.url.path }

        init(options: JSONValue, service: JSONValue?) throws {
            _ = try folder.write("options.json", options.description)
            if let service {
                try FileManager.default.createDirectory(at: folder.url.appendingPathComponent("services"), withIntermediateDirectories: true)
                _ = try folder.write("services/mqtt", service.description)
            }
        }

        /// The run script's environment, `binary` standing for the daemon.
        func environment(binary: String, token: Bool = true) -> [String: String] {
            [
                "FLOWBRIDGE_OPTIONS": "\(path)/options.json", "FLOWBRIDGE_DATA": path, "SUPERVISOR_API": "file://\(path)",
                "SUPERVISOR_TOKEN": token ? "supervisor-token" : "", "FLOWBRIDGE": binary, "TZ": "UTC",
            ]
        }

        var config: JSONValue { get throws { try JSONValue(parsing: Array(Data(contentsOf: folder.url.appendingPathComponent("flowbridge.json")))) } }
        func text(_ name: String) -> String? { try? String(contentsOfFile: "\(path)/\(name)", encoding: .utf8) }
    }

    static func service(port: Int, user: String, password: String) -> JSONValue {
        ["result": "ok", "data": ["host": "127.0.0.1", "port": .number(Double(port)), "ssl": false, "protocol": "3.1.1",
                                  "username": .string(user), "password": .string(password)]]
    }

    /// Runs the script to its end (the daemon it starts is `/bin/echo`, or exits by itself).
    static func runScript(_ data: AddonData, binary: String = "/bin/echo", token: Bool = true) async throws -> (status: Int32?, out: String) {
        let log = "\(data.path)/run.log"
        let process = try ChildProcess(runScript, [], outputFile: log, environment: data.environment(binary: binary, token: token))
        if !(await process.waitForExit(timeout: .seconds(30))) { process.send(SIGKILL) }
        return (process.exitCode, data.text("run.log") ?? "")
    }

    /// Every option the manifest sets has a schema entry, so the Supervisor accepts the defaults.
    @Test func everyDefaultOptionHasASchema() throws {
        let manifest = try Self.manifest()
        let optionPairs = manifest["options"]?.pairs ?? []
        let schemaPairs = manifest["schema"]?.pairs ?? []
        let options = optionPairs.compactMap(\.key.scalarValue)
        let schema = schemaPairs.compactMap(\.key.scalarValue)
        #expect(!options.isEmpty)
        #expect(Set(options).subtracting(schema).isEmpty, "\(Set(options).subtracting(schema))")
        #expect(manifest["services"]?.items?.compactMap(\.scalarValue) == ["mqtt:want"])
    }

    /// The default options and Home Assistant's broker (with a login): the script writes a config
    /// `check` accepts, the password in a file of its own (0600) and not in the config, and the
    /// daemon it starts connects with those credentials, keeps its state in /data and stops on SIGTERM.
    @Test(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason))
    func theDefaultsAndHomeAssistantsBrokerMakeADaemonThatConnects() async throws {
        let password = "p4ss \"word\" with spaces"
        let broker = try await MosquittoBroker(users: ["addons": password])
        let manifest = try Self.manifest()
        let options = Self.json(try #require(manifest["options"]))
        let data = try AddonData(options: options, service: Self.service(port: broker.port, user: "addons", password: password))

        let log = "\(data.path)/run.log"
        let daemon = try ChildProcess(Self.runScript, [], outputFile: log, environment: data.environment(binary: Repository.binary))
        _ = await eventually { (data.text("run.log") ?? "").contains("connected to 127.0.0.1:\(broker.port)") || !daemon.isRunning }
        let started = data.text("run.log") ?? ""
        #expect(started.contains("broker: Home Assistant's MQTT service, 127.0.0.1:\(broker.port) as addons"), "\(started)")
        #expect(started.contains("connected to 127.0.0.1:\(broker.port)"), "\(started)")
        daemon.send(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(10)))
        #expect(daemon.exitCode == 0, "\(data.text("run.log") ?? "")")
        #expect(data.text("state.json")?.contains("flowbridge-state") == true, "the day is kept in /data")

        let config = try data.config
        #expect(config["mqtt"]?["username"] == "addons")
        #expect(config["mqtt"]?["password_file"] == .string("\(data.path)/mqtt-password"))
        #expect(data.text("mqtt-password") == password)
        let mode = try FileManager.default.attributesOfItem(atPath: "\(data.path)/mqtt-password")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(!(data.text("flowbridge.json") ?? "").contains(password) && !(data.text("run.log") ?? "").contains(password))
        let flow = try #require(config["widgets"]?["power"]?["flow"])
        #expect(flow["inputs"]?.arrayValue?.first?["total"] == ["counter": "solar_total"])
        #expect(flow["exchange"]?["total"] == ["counter": "grid_import"])
        #expect(flow["output"]?["rate"] == "balance" && flow["storage"]?["level"] == "battery_level")
        #expect(config["output"]?["mqtt"]?["home_assistant"] == true, "the sensors appear in Home Assistant by default")

        let check = try runFlowbridge(["check", "--config", "\(data.path)/flowbridge.json"])
        #expect(check.status == 0, "\(check.out)\(check.err)")
        #expect(check.out.contains("broker 127.0.0.1:\(broker.port)"), "\(check.out)")
        for slot in ["inputs[0] \"Solar\"", "output \"Home\"", "storage \"Battery\"", "exchange \"Grid\""] {
            #expect(check.out.contains(slot), "\(slot)")
        }
    }

    /// A broker of the options' own and a widget: they win over the service; a rate with commas is
    /// a sum or a difference, `daily:` the device's count of the day; the token goes to a file.
    @Test func optionsOfItsOwnBrokerAndAWidget() async throws {
        let options: JSONValue = [
            "sources": [
                ["name": "east", "topic": "solar/east"], ["name": "west", "topic": "solar/west"],
                ["name": "yield", "topic": "solar/yield", "unit": "kWh"],
                ["name": "import", "topic": "meter/in"], ["name": "export", "topic": "meter/out", "scale": 1000],
            ],
            "label": "Home", "inputs": [["name": "Roof", "rate": "east, west", "total": "daily:yield"]],
            "output": ["name": "House", "rate": "balance"], "storage": ["name": "", "rate": ""],
            "exchange": ["name": "Grid", "rate": "import, -export", "total": "import"],
            "mqtt_host": "broker.local", "mqtt_port": 8883, "mqtt_username": "flow", "mqtt_password": "pw",
            "push_url": "https://user:secret@widgets.example.com/api/v1/widgets/abc/content?key=1", "push_token": "t0ken",
            "timezone": "Europe/Berlin", "log_level": "debug",
        ]
        let data = try AddonData(options: options, service: Self.service(port: 1883, user: "addons", password: "no"))
        let run = try await Self.runScript(data)
        #expect(run.status == 0, "\(run.out)")
        #expect(run.out.contains("broker: broker.local:8883 as flow (mqtt_host)"), "\(run.out)")
        #expect(run.out.contains("pushes go to https://widgets.example.com/api/v1/widgets/abc/content\n"), "\(run.out)")
        #expect(run.out.contains("run --config \(data.path)/flowbridge.json --log-level debug"), "\(run.out)")
        #expect(!run.out.contains("secret") && !run.out.contains("t0ken"))

        let config = try data.config
        #expect(config["mqtt"] == ["host": "broker.local", "port": 8883, "username": "flow", "password_file": .string("\(data.path)/mqtt-password"),
                                   "client_id": "flowbridge-addon", "topic_prefix": "flowbridge"])
        #expect(config["timezone"] == "Europe/Berlin")
        let flow = try #require(config["widgets"]?["power"]?["flow"])
        #expect(flow["inputs"] == [["name": "Roof", "rate": ["east", "west"], "total": ["daily": "yield"]]])
        #expect(flow["exchange"] == ["name": "Grid", "rate": ["import", "-export"], "total": "import"])
        #expect(flow["storage"] == nil, "a slot without a rate is left out")
        #expect(config["widgets"]?["power"]?["push"] == ["url": options["push_url"]!, "token_file": .string("\(data.path)/widget-token")])
        #expect(data.text("widget-token") == "t0ken")
        #expect(config["sources"]?["export"] == ["topic": "meter/out", "scale": 1000])

        let check = try runFlowbridge(["check", "--config", "\(data.path)/flowbridge.json"])
        #expect(check.status == 0, "\(check.out)\(check.err)")
        #expect(check.out.contains("rate  = + east [solar/east, W] + west [solar/west, W]"), "\(check.out)")
        #expect(check.out.contains("rate  = + import [meter/in, W] − export [meter/out, W, × 1000]"), "\(check.out)")
    }

    /// No broker in the options and none from Home Assistant: a clear error, no daemon.
    @Test func noBrokerAnywhereIsSaid() async throws {
        let data = try AddonData(options: ["sources": [], "inputs": []], service: nil)
        let run = try await Self.runScript(data, token: false)
        #expect(run.status == 78)
        #expect(run.out.contains("Home Assistant offers no MQTT service (install the Mosquitto broker add-on) and mqtt_host is not set"), "\(run.out)")
        #expect(data.text("flowbridge.json") == nil)
    }
}

/// The container image (`deploy/Dockerfile`): its runtime stage installs the packages of what the
/// binary loads, and only those (`scripts/runtime-packages.sh`; `make image-check` runs it on the
/// release build, here the debug build less the Swift runtime it links).
@Suite(.enabled(if: MosquittoBroker.findExecutable("dpkg-query") != nil, "not a Debian machine: no dpkg to look packages up"))
struct ContainerImageTests {
    static let script = Repository.root.appendingPathComponent("scripts/runtime-packages.sh").path
    static let dockerfile = Repository.root.appendingPathComponent("deploy/Dockerfile").path

    static func check(_ dockerfile: String) async throws -> (status: Int32?, out: String) {
        let folder = TemporaryFolder()
        let log = folder.url.appendingPathComponent("out.log").path
        let process = try ChildProcess(script, ["--swift-runtime-linked", Repository.binary, dockerfile], outputFile: log)
        if !(await process.waitForExit(timeout: .seconds(60))) { process.send(SIGKILL) }
        return (process.exitCode, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test func theRuntimeStageInstallsWhatTheBinaryLoads() async throws {
        let result = try await Self.check(Self.dockerfile)
        #expect(result.status == 0, "\(result.out)")
        for line in ["libmosquitto.so.1: libmosquitto1, installed by the image", "libyaml-0.so.2: libyaml-0-2, installed by the image",
                     "libcurl.so.4: libcurl4, installed by the image", "libssl.so.3: libssl3, a dependency of what the image installs"] {
            #expect(result.out.contains(line), "\(line)\n\(result.out)")
        }
    }

    /// A runtime stage that lacks a library, or installs one nothing loads, is named.
    @Test func aMissingOrAnUnusedLibraryIsNamed() async throws {
        let folder = TemporaryFolder()
        let text = try String(contentsOfFile: Self.dockerfile, encoding: .utf8)
        #expect(text.contains("libyaml-0-2 libcurl4"))
        let broken = try folder.write("Dockerfile", text.replacingOccurrences(of: "libyaml-0-2 libcurl4", with: "libcurl4 libjq1"))
        let result = try await Self.check(broken)
        #expect(result.status == 1)
        #expect(result.out.contains("error: libyaml-0.so.2 comes from libyaml-0-2, which \(broken) does not install"), "\(result.out)")
        #expect(result.out.contains("error: \(broken) installs libjq1, which"), "\(result.out)")
    }
}
