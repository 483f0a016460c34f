// swift-tools-version:6.0
import PackageDescription

/// flowbridge: MQTT energy meters → flow widget merge-patches.
/// No package dependencies: only the toolchain's modules and Debian's C libraries (see Makefile).
let package = Package(
    name: "flowbridge",
    products: [
        .library(name: "FlowCore", targets: ["FlowCore"]),
        .executable(name: "flowbridge", targets: ["flowbridge"]),
    ],
    targets: [
        .systemLibrary(
            name: "CMosquitto", pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]),
        // libcurl's headers only: the library is loaded when a widget API sink starts (see shim.h).
        // Debian: libcurl4-openssl-dev.
        .systemLibrary(name: "CCurl"),
        .systemLibrary(
            name: "CYAML", pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        // The window's HTTP listener. Debian: libmicrohttpd-dev.
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .target(name: "FlowCore"),
        // The one place that starts threads, each named for what it does.
        // timerfd's header (libc's): Swift's Glibc module leaves it out.
        .systemLibrary(name: "CTimerFD"),
        .target(name: "Threads", dependencies: ["CTimerFD"]),
        .target(name: "Mosquitto", dependencies: ["CMosquitto", "FlowCore", "Threads"]),
        .target(name: "Delivery", dependencies: ["FlowCore", "CCurl", "Threads"]),
        .target(name: "Rendering", dependencies: ["FlowCore"]),
        .target(name: "Simulator", dependencies: ["FlowCore", "Mosquitto"]),
        .target(name: "Discovery", dependencies: ["FlowCore"]),
        // What the daemon takes from Linux: files, the log, the zone database, sd_notify, exit statuses.
        .target(name: "Platform", dependencies: ["FlowCore"]),
        // The day's state file: atomic saves, one owner, what a damaged file is.
        .target(name: "Persistence", dependencies: ["FlowCore", "Platform"]),
        // The day book: closed slots and days in SQLite, read back by period, priced again.
        .target(name: "DayBook", dependencies: ["FlowCore", "CSQLite"]),
        // The window: a read-only HTTP listener, the status page, /metrics, the JSON API.
        .target(name: "Window", dependencies: ["FlowCore", "Rendering", "Platform", "CMicroHTTPD"]),
        // The config language: YAML, the reader that names key and line, one loader per section.
        .target(name: "Configuration", dependencies: ["FlowCore", "CYAML", "Platform", "Persistence", "Mosquitto", "Delivery", "Window"]),
        // The daemon's parts as services with one start and one stop order.
        .target(name: "Runtime", dependencies: ["FlowCore", "DayBook", "Platform", "Persistence", "Configuration", "Mosquitto", "Delivery", "Rendering", "Threads", "Window"]),
        // One type per command, each with its own options.
        .target(name: "Commands", dependencies: ["FlowCore", "DayBook", "Platform", "Persistence", "Configuration", "Runtime", "Mosquitto", "Delivery", "Rendering", "Simulator", "Discovery", "Window"]),
        .executableTarget(name: "flowbridge", dependencies: ["Commands", "Platform", "Threads"]),
        .target(name: "TestSupport", dependencies: ["FlowCore", "Mosquitto", "Threads"], path: "Tests/TestSupport"),
        // Replays in-process, for the tests of every module that reads a replay's documents.
        .target(name: "ReplaySupport", dependencies: ["Commands", "Configuration", "FlowCore", "Platform"], path: "Tests/ReplaySupport"),
        // The widget service as tests meet it: a real HTTP(S) server that can be told to fail.
        .systemLibrary(name: "COpenSSL", path: "Tests/COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .executableTarget(name: "WidgetStandIn", dependencies: ["FlowCore", "COpenSSL", "Threads"], path: "Tests/WidgetStandIn"),
        // Fuzz targets (`make fuzz`): each property once, run by libFuzzer with -sanitize=fuzzer
        // -DFUZZING, by its executable as a corpus replay otherwise, and by FuzzTests.
        .systemLibrary(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"),
        .target(name: "FuzzChecks", dependencies: ["FlowCore", "Configuration", "CLibFuzzer"], path: "Fuzz/FuzzChecks"),
        .executableTarget(name: "PayloadDecoderFuzzer", dependencies: ["FuzzChecks"], path: "Fuzz/PayloadDecoderFuzzer"),
        .executableTarget(name: "ConfigFuzzer", dependencies: ["FuzzChecks"], path: "Fuzz/ConfigFuzzer"),
        .executableTarget(name: "MergePatchFuzzer", dependencies: ["FuzzChecks"], path: "Fuzz/MergePatchFuzzer"),
        .testTarget(name: "FlowCoreTests", dependencies: ["FlowCore", "TestSupport"]),
        .testTarget(name: "PlatformTests", dependencies: ["Platform", "FlowCore", "ReplaySupport", "TestSupport", "Threads"]),
        .testTarget(name: "PersistenceTests", dependencies: ["Persistence", "Platform", "Configuration", "Runtime", "Commands", "FlowCore", "ReplaySupport", "TestSupport"]),
        .testTarget(name: "ConfigurationTests", dependencies: ["Configuration", "Platform", "Persistence", "Runtime", "Commands", "Delivery", "FlowCore", "ReplaySupport", "TestSupport"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "DayBook", "Window", "Platform", "Persistence", "Configuration", "Commands", "Mosquitto", "Delivery", "FlowCore", "ReplaySupport", "TestSupport"]),
        .testTarget(name: "CommandsTests", dependencies: ["Commands", "DayBook", "Platform", "Persistence", "Configuration", "Runtime", "Mosquitto", "Discovery", "FlowCore", "Rendering", "Simulator", "ReplaySupport", "TestSupport"]),
        // What `deploy/` ships: the Home Assistant add-on and the container image.
        .testTarget(name: "DeploymentTests", dependencies: ["Commands", "Platform", "Persistence", "Configuration", "Runtime", "FlowCore", "Rendering", "TestSupport"]),
        // The window: its access rules, routes, lifetime counters and config (its runs with a real Prometheus and Chromium: RuntimeTests).
        .testTarget(name: "WindowTests", dependencies: ["Window", "Runtime", "DayBook", "Platform", "Persistence", "Configuration", "Commands", "Mosquitto", "Delivery", "FlowCore", "Rendering", "ReplaySupport", "TestSupport"]),
        .testTarget(name: "DayBookTests", dependencies: ["DayBook", "FlowCore", "Platform", "TestSupport"]),
        .testTarget(name: "DeliveryTests", dependencies: ["Delivery", "FlowCore", "Mosquitto", "TestSupport"]),
        .testTarget(name: "MosquittoTests", dependencies: ["Mosquitto", "FlowCore", "TestSupport", "Threads"]),
        .testTarget(name: "RenderingTests", dependencies: ["Rendering", "FlowCore", "TestSupport"]),
        .testTarget(name: "SimulatorTests", dependencies: ["Simulator", "FlowCore", "TestSupport"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery", "FlowCore"]),
        .testTarget(name: "FuzzTests", dependencies: ["FuzzChecks"]),
    ]
)
