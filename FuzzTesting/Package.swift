// swift-tools-version:6.0
// libFuzzer entry point for fleetbench's fuzz targets. A package of its own, built by `scripts/fuzz` with
// `--sanitize=fuzzer --sanitize=address`, so neither the instrumented build nor its time reaches the main package.
import PackageDescription

let package = Package(
    name: "FleetFuzzing",
    dependencies: [.package(name: "fleetbench", path: "..")],
    targets: [
        .executableTarget(
            name: "FleetFuzzer",
            dependencies: [.product(name: "FleetFuzzTargets", package: "fleetbench")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
    ],
    swiftLanguageModes: [.v6]
)
