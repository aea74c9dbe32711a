// swift-tools-version:6.0
// fleetbench: load-testing MQTT brokers and simulating vehicle fleets.
// No outside Swift packages: C libraries come from Debian through system-library targets.
import PackageDescription

/// The per-message path's modules in release builds: no dynamic exclusivity checks. The lane keeps its clients,
/// wheel and metrics in stored properties of a class, and every access to them paid a runtime check (a
/// thread-local lookup and an access-set insert); docs/performance.md, "Send and ack path" has the profile.
/// Debug builds, which run the tests, keep the checks.
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "fleetbench",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "fleetbench", targets: ["fleetbench"]),
        // For FuzzTesting/, a package of its own so the fuzzer-instrumented build stays out of this one.
        .library(name: "FleetFuzzTargets", targets: ["FleetFuzzTargets"]),
    ],
    targets: [
        // MARK: C libraries (Debian -dev packages) and the Linux shim
        .systemLibrary(
            name: "CJansson", path: "Sources/CJansson", pkgConfig: "jansson",
            providers: [.apt(["libjansson-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        // epoll, eventfd and timerfd are not exported by Glibc's Swift overlay; part of libc (no package).
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        .systemLibrary(
            name: "CURing", path: "Sources/CURing", pkgConfig: "liburing",
            providers: [.apt(["liburing-dev"])]),
        // A lane's io_uring over liburing (batched end-of-turn writes), behind a small C interface.
        .target(name: "CLaneRing", dependencies: ["CURing"], path: "Sources/CLaneRing"),
        // Counts malloc calls so benchmarks can print allocations per operation.
        .target(name: "CAllocCounter", path: "Sources/CAllocCounter"),

        // MARK: Pure layers (no Foundation, Dispatch or Glibc)
        .target(name: "MQTTCodec", swiftSettings: hotPath),
        .target(name: "MQTTSession", dependencies: ["MQTTCodec"], swiftSettings: hotPath),
        .target(name: "FleetMetrics", dependencies: ["MQTTCodec"], swiftSettings: hotPath),
        // The one payload template compiler: generators, JSON-string escaping; the scenario layer compiles with it,
        // the engine renders what it compiled.
        .target(name: "FleetPayload"),

        // MARK: Layers with I/O or C libraries
        .target(name: "FleetJSON", dependencies: ["CJansson"]),
        .target(name: "FleetTransport", dependencies: ["CLinux", "COpenSSL", "CLaneRing"], swiftSettings: hotPath),
        .target(name: "FleetScenario", dependencies: ["FleetJSON", "MQTTCodec", "FleetMetrics", "FleetPayload", "FleetVehicle"]),
        // The vehicle model behind `{vehicle.*}`: roads (GeoJSON or generated), trips, battery, GNSS error.
        // Pure arithmetic over immutable roads; libm is its only system import.
        .target(name: "FleetVehicle", dependencies: ["FleetJSON"]),
        .target(
            name: "FleetEngine",
            dependencies: ["MQTTCodec", "MQTTSession", "FleetTransport", "FleetMetrics", "FleetPayload", "FleetVehicle",
                           "CLinux"],
            swiftSettings: hotPath),
        .target(name: "FleetReports", dependencies: ["FleetMetrics", "FleetJSON", "MQTTCodec", "CZlib"]),
        .target(
            name: "FleetCLI",
            dependencies: ["FleetEngine", "FleetScenario", "FleetPayload", "FleetReports", "FleetMetrics", "FleetBroker",
                           "FleetJSON", "FleetVehicle", "FleetTransport", "MQTTCodec", "MQTTSession", "COpenSSL"]),
        .executableTarget(name: "fleetbench", dependencies: ["FleetCLI"]),
        // Starts and stops mosquitto: the embedded broker of `fleetbench run`, tests and benchmarks.
        .target(name: "FleetBroker", dependencies: ["CLinux"]),

        // MARK: Fuzzing: the bodies of the libFuzzer targets (FuzzTesting/), replayed over the corpora by the tests
        .target(
            name: "FleetFuzzTargets",
            dependencies: ["MQTTCodec", "MQTTSession", "FleetTransport", "FleetScenario", "FleetReports", "FleetJSON",
                           "FleetMetrics"]),

        // MARK: Test support: a scriptable fake broker for faults a real broker will not produce, a thread without io_uring
        .target(name: "FleetTestSupport", dependencies: ["MQTTCodec", "FleetBroker", "CSeccomp"]),
        // Forbids io_uring on one thread (a seccomp filter), for the tests of the send(2) fallback.
        .target(name: "CSeccomp", path: "Sources/CSeccomp"),

        // MARK: Benchmarks (swift run -c release <name>)
        .executableTarget(
            name: "CodecBenchmark", dependencies: ["MQTTCodec", "CAllocCounter"],
            path: "Benchmarks/CodecBenchmark"),
        .executableTarget(
            name: "SessionBenchmark", dependencies: ["MQTTSession", "MQTTCodec", "CAllocCounter"],
            path: "Benchmarks/SessionBenchmark"),
        .executableTarget(
            name: "MetricsBenchmark", dependencies: ["FleetMetrics", "FleetReports", "CAllocCounter"],
            path: "Benchmarks/MetricsBenchmark"),
        .executableTarget(
            name: "VehicleBenchmark", dependencies: ["FleetVehicle", "CAllocCounter"],
            path: "Benchmarks/VehicleBenchmark"),
        .executableTarget(
            name: "IdentityBenchmark", dependencies: ["FleetTransport", "FleetScenario", "FleetBroker"],
            path: "Benchmarks/IdentityBenchmark"),
        .executableTarget(
            name: "PayloadBenchmark", dependencies: ["FleetEngine", "FleetVehicle", "CAllocCounter"],
            path: "Benchmarks/PayloadBenchmark"),
        .executableTarget(
            name: "EngineBenchmark",
            dependencies: ["FleetEngine", "FleetBroker", "FleetMetrics", "MQTTCodec", "CAllocCounter", "FleetVehicle",
                           "FleetCLI", "FleetScenario"],
            path: "Benchmarks/EngineBenchmark"),
        // Runs the fleetbench binary and samples its RSS and descriptors from outside (no library dependencies).
        .executableTarget(name: "SoakBenchmark", path: "Benchmarks/SoakBenchmark"),

        // MARK: Tests
        .testTarget(name: "MQTTCodecTests", dependencies: ["MQTTCodec", "FleetTestSupport"]),
        .testTarget(name: "MQTTSessionTests", dependencies: ["MQTTSession", "MQTTCodec"]),
        .testTarget(name: "FleetMetricsTests", dependencies: ["FleetMetrics", "FleetTestSupport"]),
        .testTarget(name: "FleetJSONTests", dependencies: ["FleetJSON"]),
        .testTarget(name: "FleetTransportTests", dependencies: ["FleetTransport", "FleetBroker", "FleetTestSupport"]),
        .testTarget(name: "FleetEngineTests", dependencies: ["FleetEngine", "FleetMetrics", "FleetPayload", "FleetTestSupport", "FleetBroker", "FleetVehicle"]),
        .testTarget(name: "FleetScenarioTests", dependencies: ["FleetScenario", "FleetMetrics", "MQTTCodec", "FleetTestSupport"]),
        .testTarget(name: "FleetVehicleTests", dependencies: ["FleetVehicle", "FleetJSON"]),
        .testTarget(name: "FleetReportsTests", dependencies: ["FleetReports", "FleetMetrics", "FleetTestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(name: "FleetCLITests", dependencies: ["FleetCLI", "FleetReports", "FleetMetrics", "FleetBroker", "FleetVehicle", "FleetTestSupport"]),
        .testTarget(name: "FleetFuzzTargetsTests", dependencies: ["FleetFuzzTargets"]),
        // Real-broker tests of the codec: every client packet type sent over a plain socket to mosquitto.
        .testTarget(name: "BrokerTests", dependencies: ["MQTTCodec", "FleetTestSupport", "FleetBroker", "FleetEngine",
                                                 "FleetMetrics", "MQTTSession", "FleetTransport", "FleetVehicle"]),
    ],
    swiftLanguageModes: [.v6]
)
