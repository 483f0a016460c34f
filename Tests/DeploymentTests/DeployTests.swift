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

    /// The add-on's /data: options.json, and the Supervisor's answer at services/mqtt; and its
    /// config folder (`config/`, Home Assistant's addon_config), with a flowbridge.yaml when given.
    struct AddonData {
        let folder = TemporaryFolder()
        var path: String { folder.url.path }
        var configFolder: String { "\(path)/config" }

        init(options: JSONValue, service: JSONValue?, flowbridgeYAML: String? = nil) throws {
            _ = try folder.write("options.json", options.description)
            try FileManager.default.createDirectory(atPath: configFolder, withIntermediateDirectories: true)
            if let flowbridgeYAML { _ = try folder.write("config/flowbridge.yaml", flowbridgeYAML) }
            if let service {
                try FileManager.default.createDirectory(at: folder.url.appendingPathComponent("services"), withIntermediateDirectories: true)
                _ = try folder.write("services/mqtt", service.description)
            }
        }

        /// The run script's environment, `binary` standing for the daemon.
        func environment(binary: String, token: Bool = true) -> [String: String] {
            [
                "FLOWBRIDGE_OPTIONS": "\(path)/options.json", "FLOWBRIDGE_DATA": path, "SUPERVISOR_API": "file://\(path)",
                "FLOWBRIDGE_ADDON_CONFIG": configFolder, "FLOWBRIDGE_EXAMPLES": Repository.root.appendingPathComponent("Config/examples").path,
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
        #expect(manifest["map"]?.items?.compactMap(\.scalarValue) == ["addon_config:rw"], "flowbridge.yaml in the add-on's config folder")
        #expect(manifest["version"]?.scalarValue == Flowbridge.version)
    }

    /// Home Assistant builds the add-on on the device: every architecture it claims is built from
    /// images that exist for it (Debian's slim image, the official Swift image for the build
    /// stage), from source, and no file names an image nobody publishes.
    @Test func theAddonBuildsFromImagesThatExist() throws {
        let manifest = try Self.manifest()
        let build = try YAMLDocument.parse(String(contentsOf: Self.folder.appendingPathComponent("build.yaml"), encoding: .utf8))
        let architectures = manifest["arch"]?.items?.compactMap(\.scalarValue) ?? []
        #expect(architectures == ["amd64", "aarch64"])
        for architecture in architectures {
            #expect(build["build_from"]?[architecture]?.scalarValue == "debian:bookworm-slim", "\(architecture)")
        }
        #expect(build["args"]?["PACKAGE_FROM"]?.scalarValue == "source" && build["args"]?["SOURCE"]?.scalarValue == "src")
        #expect(manifest["image"] == nil, "no published image to name")
        let dockerfile = try String(contentsOf: Repository.root.appendingPathComponent("deploy/Dockerfile"), encoding: .utf8)
        let images = dockerfile.split(separator: "\n").filter { $0.hasPrefix("ARG ") && $0.contains("IMAGE=") || $0.hasPrefix("ARG BUILD_FROM=") }
        #expect(images == ["ARG SWIFT_IMAGE=swift:6.3.1-bookworm", "ARG BUILD_FROM=debian:bookworm-slim"])
        for file in ["config.yaml", "build.yaml", "DOCS.md", "addon.Dockerfile"] {
            let text = try String(contentsOf: Self.folder.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("ghcr.io"), "\(file)")
        }
    }

    /// `make addon` (packaging/addon.sh): the folder Home Assistant builds: the manifest, the run
    /// script, the Dockerfile made of deploy/Dockerfile and the add-on's own lines, the sources.
    @Test func makeAddonWritesTheFolderHomeAssistantBuilds() async throws {
        let folder = TemporaryFolder()
        let out = folder.url.appendingPathComponent("flowbridge").path
        let result = try runProgram(Repository.root.appendingPathComponent("packaging/addon.sh").path, [out])
        #expect(result.status == 0, "\(result.out)\(result.err)")
        let dockerfile = try String(contentsOfFile: "\(out)/Dockerfile", encoding: .utf8)
        let image = try String(contentsOf: Repository.root.appendingPathComponent("deploy/Dockerfile"), encoding: .utf8)
        let own = try String(contentsOf: Self.folder.appendingPathComponent("addon.Dockerfile"), encoding: .utf8)
        #expect(dockerfile == image + "\n" + own)
        for file in ["config.yaml", "build.yaml", "DOCS.md", "run.sh", "src/Package.swift", "src/Makefile", "src/packaging/deb.sh", "src/Sources/flowbridge/main.swift"] {
            #expect(FileManager.default.fileExists(atPath: "\(out)/\(file)"), "\(file)")
        }
        #expect(FileManager.default.isExecutableFile(atPath: "\(out)/run.sh"))
        #expect(!FileManager.default.fileExists(atPath: "\(out)/src/.build"), "no build products")
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
        #expect(run.out.contains("check --config \(data.path)/flowbridge.json"), "check runs at every start\n\(run.out)")
        #expect(FileManager.default.fileExists(atPath: "\(data.configFolder)/examples/opendtu.yaml"), "the device examples, to start a flowbridge.yaml from")
        #expect(run.out.contains("device examples copied to \(data.configFolder)/examples"), "\(run.out)")
    }

    /// What the options cannot say (two inverters summed, a tariff, a bar, Victron's keepalive),
    /// written in flowbridge.yaml in the add-on's config folder: used as written, Home Assistant's
    /// broker and the state in /data added at its end; check's report is in the log before the
    /// daemon starts, and the daemon connects with the Supervisor's credentials.
    @Test(.enabled(if: MosquittoBroker.isAvailable, MosquittoBroker.skipReason))
    func aFlowbridgeYAMLInTheConfigFolderCarriesTheWholeLanguage() async throws {
        let broker = try await MosquittoBroker(users: ["addons": "secret"])
        let yaml = """
            # Two roofs, a battery, a grid meter with an import counter; priced, with a bar.
            keepalive:
              - {topic: R/c0619ab1d2e3/keepalive, interval: 30s}
            sources:
              east:    {topic: solar/east}
              west:    {topic: solar/west}
              grid:    {topic: meter/power}
              grid_in: {topic: meter/import, unit: kWh}
              battery: {topic: battery/power}
              soc:     {topic: battery/soc, unit: "%"}
            widgets:
              power:
                template: flow
                flow:
                  inputs: [{name: Roof, rate: [east, west], total: integrate}]
                  storage: {name: Battery, rate: battery, level: soc}
                  exchange: {name: Grid, rate: grid, total: {counter: grid_in}}
                  output: {name: Home, rate: balance}
              bar:
                template: progress
                progress: {of: battery}
            tariff:
              currency: EUR
              import: {price: 0.30}
              export: {price: 0.08}
            output:
              mqtt: {home_assistant: true}
            # The add-on's window is on 8099; a test takes a port the system picks, so that it
            # never meets another process on 8099.
            http: {listen: "127.0.0.1:0", ingress: true}
            """
        let data = try AddonData(options: ["sources": [], "inputs": [], "log_level": "info"],
                                 service: Self.service(port: broker.port, user: "addons", password: "secret"), flowbridgeYAML: yaml)
        let log = "\(data.path)/run.log"
        let daemon = try ChildProcess(Self.runScript, [], outputFile: log, environment: data.environment(binary: Repository.binary))
        _ = await eventually { (data.text("run.log") ?? "").contains("connected to 127.0.0.1:\(broker.port)") || !daemon.isRunning }
        daemon.send(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(10)))
        let out = data.text("run.log") ?? ""
        #expect(daemon.exitCode == 0, "\(out)")
        #expect(out.contains("config: \(data.configFolder)/flowbridge.yaml, as \(data.path)/flowbridge.yaml with the broker and the state in \(data.path) added at its end"), "\(out)")
        let checked = try #require(out.range(of: "config OK: 6 sources, 2 widgets"), "check's report is in the log\n\(out)")
        let started = try #require(out.range(of: "connected to 127.0.0.1:\(broker.port)"), "\(out)")
        #expect(checked.lowerBound < started.lowerBound, "check runs before the daemon")
        #expect(data.text("state.json")?.contains("flowbridge-state") == true, "the day is kept in /data")

        let written = try #require(data.text("flowbridge.yaml"))
        #expect(written.hasPrefix(yaml), "the file as written, the add-on's lines after it")
        #expect(written.contains("\nmqtt: {\"host\":\"127.0.0.1\",\"port\":\(broker.port),\"username\":\"addons\",\"password_file\":\"\(data.path)/mqtt-password\""), "\(written)")
        #expect(written.contains("\nstate_file: \"\(data.path)/state.json\""), "\(written)")
        #expect(!written.contains("secret"))
        #expect(!FileManager.default.fileExists(atPath: "\(data.path)/flowbridge.json"), "the options are not written")
    }

    /// A flowbridge.yaml check refuses: its error, with the key and the file's own line, is in the
    /// log, and the daemon does not start. A file with its own mqtt: needs no broker from Home
    /// Assistant and gets none added.
    @Test func aFlowbridgeYAMLThatCheckRefusesStopsTheStart() async throws {
        let yaml = """
            mqtt: {host: broker.local}
            sources:
              solar: {topic: solar/power}
            widgets:
              power:
                template: flow
                flow:
                  inputs: [{name: Solar, rate: sun}]
            """
        let data = try AddonData(options: ["sources": [], "inputs": []], service: nil, flowbridgeYAML: yaml)
        let run = try await Self.runScript(data, binary: Repository.binary, token: false)
        #expect(run.status == 78, "\(run.out)")
        #expect(run.out.contains("\(data.path)/flowbridge.yaml: line 8: widgets.power.flow.inputs[0].rate: unknown source 'sun'"),
                "the key, and the line the file has it on\n\(run.out)")
        #expect(run.out.contains("flowbridge check refused the config (above); the daemon is not started"), "\(run.out)")
        #expect(!run.out.contains("broker:"), "no broker looked up for a file with its own\n\(run.out)")
        #expect(data.text("flowbridge.yaml")?.contains("\nmqtt: {") == false)
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

/// The Debian package's dependencies (`make deb`, packaging/deb.sh): what the binary loads, and
/// only that, comes from a package the .deb depends on, a dependency of one, or every Debian system
/// (`scripts/runtime-packages.sh`, which `make deb` runs on the release build and its package; here
/// on the debug build, less the Swift runtime it links, and a package that holds only its control
/// file). The container image installs the package, so the same check covers it.
@Suite(.enabled(if: MosquittoBroker.findExecutable("dpkg-deb") != nil, "not a Debian machine: no dpkg to look packages up"))
struct PackageDependencyTests {
    static let script = Repository.root.appendingPathComponent("scripts/runtime-packages.sh").path
    /// What packaging/deb.sh makes the release package depend on on Debian bookworm.
    static let depends = "libc6 (>= 2.35), libgcc-s1 (>= 3.3), libmosquitto1 (>= 1.6), libstdc++6 (>= 11), libsqlite3-0, libmicrohttpd12, libyaml-0-2, libcurl4 (>= 7.88.1), tzdata, procps"

    /// A package of nothing but its control file, depending on `depends`.
    static func package(depends: String, in folder: TemporaryFolder) throws -> String {
        let root = folder.url.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("DEBIAN"), withIntermediateDirectories: true)
        _ = try folder.write("root/DEBIAN/control", """
            Package: flowbridge
            Version: 0.1.0
            Architecture: all
            Maintainer: flowbridge maintainers <maintainers@flowbridge.invalid>
            Depends: \(depends)
            Description: home energy meters on MQTT to a phone flow widget

            """)
        let deb = folder.url.appendingPathComponent("flowbridge.deb").path
        let build = try runProgram(try #require(MosquittoBroker.findExecutable("dpkg-deb")), ["--root-owner-group", "--build", root.path, deb])
        #expect(build.status == 0, "\(build.out)\(build.err)")
        return deb
    }

    static func check(_ arguments: [String]) async throws -> (status: Int32?, out: String) {
        let folder = TemporaryFolder()
        let log = folder.url.appendingPathComponent("out.log").path
        let process = try ChildProcess(script, arguments, outputFile: log)
        if !(await process.waitForExit(timeout: .seconds(60))) { process.send(SIGKILL) }
        return (process.exitCode, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test func thePackageDependsOnWhatTheBinaryLoads() async throws {
        let folder = TemporaryFolder()
        let deb = try Self.package(depends: Self.depends, in: folder)
        let result = try await Self.check(["--swift-runtime-linked", Repository.binary, deb])
        #expect(result.status == 0, "\(result.out)")
        for line in ["libmosquitto.so.1: libmosquitto1, a dependency of the package", "libyaml-0.so.2: libyaml-0-2, a dependency of the package",
                     "libcurl.so.4: libcurl4, a dependency of the package", "libssl.so.3: libssl3, a dependency of what the package depends on",
                     "tzdata: a dependency of the package, not a library"] {
            #expect(result.out.contains(line), "\(line)\n\(result.out)")
        }
    }

    /// libcurl is opened with dlopen, which dpkg-shlibdeps cannot see: `--opened` names it, for
    /// packaging/deb.sh to add its package's dependency.
    @Test func theLibraryOpenedWithDlopenIsNamed() async throws {
        let result = try await Self.check(["--opened", Repository.binary])
        #expect(result.status == 0, "\(result.out)")
        let names = result.out.split(separator: "\n").map { $0.split(separator: " ").first.map(String.init) ?? "" }
        #expect(names == ["libcurl.so.4"], "\(result.out)")
    }

    /// A package that lacks a library, or depends on one nothing loads, is named.
    @Test func aMissingOrAnUnusedLibraryIsNamed() async throws {
        let folder = TemporaryFolder()
        #expect(Self.depends.contains("libyaml-0-2, libcurl4"))
        let deb = try Self.package(depends: Self.depends.replacingOccurrences(of: "libyaml-0-2, libcurl4", with: "libjq1, libcurl4"), in: folder)
        let result = try await Self.check(["--swift-runtime-linked", Repository.binary, deb])
        #expect(result.status == 1)
        #expect(result.out.contains("error: libyaml-0.so.2 comes from libyaml-0-2, which \(deb) does not depend on"), "\(result.out)")
        #expect(result.out.contains("error: \(deb) depends on libjq1, which"), "\(result.out)")
    }
}
