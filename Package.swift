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
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CYAML", pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]),
        .target(name: "FlowCore"),
        .target(name: "Mosquitto", dependencies: ["CMosquitto"]),
        .target(name: "Delivery", dependencies: ["FlowCore"]),
        .target(name: "Rendering", dependencies: ["FlowCore"]),
        .target(name: "Discovery", dependencies: ["FlowCore"]),
        .target(name: "Daemon", dependencies: ["FlowCore", "CYAML", "Mosquitto", "Delivery", "Rendering", "Discovery"]),
        .executableTarget(name: "flowbridge", dependencies: ["Daemon"]),
        .target(name: "TestSupport", dependencies: ["FlowCore"], path: "Tests/TestSupport"),
        .testTarget(name: "FlowCoreTests", dependencies: ["FlowCore", "TestSupport"]),
        .testTarget(name: "DaemonTests", dependencies: ["Daemon", "Discovery", "FlowCore", "TestSupport"]),
        .testTarget(name: "DeliveryTests", dependencies: ["Delivery", "FlowCore", "TestSupport"]),
        .testTarget(name: "MosquittoTests", dependencies: ["Mosquitto", "TestSupport"]),
        .testTarget(name: "RenderingTests", dependencies: ["Rendering", "FlowCore"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery", "FlowCore"]),
    ]
)
