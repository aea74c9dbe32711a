import FleetFuzzTargets

#if canImport(Glibc)
import Glibc
#endif

/// The target this process fuzzes, named by FLEETBENCH_FUZZ_TARGET (`scripts/fuzz` sets it): one binary holds
/// every target, so one instrumented build serves them all.
nonisolated(unsafe) private var selectedTarget: FuzzTarget?

private func target() -> FuzzTarget {
    if let selectedTarget { return selectedTarget }
    guard let raw = getenv("FLEETBENCH_FUZZ_TARGET"), let target = FuzzTarget(rawValue: String(cString: raw)) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        let message = "FLEETBENCH_FUZZ_TARGET must name one of: \(names)\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
    selectedTarget = target
    return target
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    target().run(UnsafeRawBufferPointer(start: data, count: count))
    return 0
}
