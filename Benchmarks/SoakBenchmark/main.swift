// Soak benchmark: runs `fleetbench run` on the vehicle-telemetry pattern against its embedded mosquitto (stock
// configuration) and samples the fleetbench process from outside every 10 s: resident memory (/proc/PID/status
// VmRSS) and open descriptors (/proc/PID/fd). Prints every sample, then, over the samples after the run's first
// minute (from its first connect) but the last (which may fall in the disconnect): the RSS spread (max - min, as % of the mean), the descriptor range, the RSS slope (least squares) and
// the RSS a 1-hour run would reach at that slope.
//
//   swift build -c release --product fleetbench --product SoakBenchmark
//   ulimit -n 20000
//   .build/release/SoakBenchmark [--vehicles 15000] [--duration 10m] [--connect-rate 500] [--interval 10]
//
// The vehicles fleet's connect rate (its ramp stage too) is raised from the scenario's 200/s so that the fleet is
// connected well within the first minute; everything else is the scenario as shipped.
import Foundation
import Glibc

struct Options {
    var vehicles = 15_000
    var duration = "10m"
    var connectRate = 500
    var interval = 10.0
    var binary = ".build/release/fleetbench"
    var out = "/tmp/fleetbench-soak-\(getpid())"
}

func parseOptions() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst().makeIterator()
    while let argument = arguments.next() {
        guard let value = arguments.next() else { fatalError("\(argument) needs a value") }
        switch argument {
        case "--vehicles": options.vehicles = Int(value)!
        case "--duration": options.duration = value
        case "--connect-rate": options.connectRate = Int(value)!
        case "--interval": options.interval = Double(value)!
        case "--binary": options.binary = value
        case "--out": options.out = value
        default: fatalError("unknown option \(argument)")
        }
    }
    return options
}

/// VmRSS of `pid` in bytes, nil when the process is gone.
func residentBytes(_ pid: Int32) -> UInt64? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        if fields.count >= 2, let kilobytes = UInt64(fields[1]) { return kilobytes * 1024 }
    }
    return nil
}

/// Entries of /proc/PID/fd, nil when the process is gone.
func openDescriptors(_ pid: Int32) -> Int? {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
}

func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

let options = parseOptions()
var limit = rlimit()
getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
if Int(limit.rlim_cur) < options.vehicles + 200 {
    print("warning: ulimit -n is \(limit.rlim_cur); \(options.vehicles) vehicles need about \(options.vehicles + 200)")
}
let arguments = [
    "run", "scenarios/vehicle-telemetry.json", "--duration", options.duration,
    "--set", "fleets.vehicles.count=\(options.vehicles)",
    "--set", "fleets.vehicles.connect_rate=\(options.connectRate)",
    "--set", "stages.1.rate=\(options.connectRate)",
    "--out", options.out, "--quiet",
]
print("command: \(options.binary) \(arguments.joined(separator: " "))")
let process = Process()
process.executableURL = URL(fileURLWithPath: options.binary)
process.arguments = arguments
var environment = ProcessInfo.processInfo.environment
environment["PATH"] = (environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin"
process.environment = environment
try process.run()
let pid = process.processIdentifier
let start = monotonicSeconds()
var samples: [(t: Double, rss: UInt64, fds: Int)] = []
print("   t_s    rss_MiB   fds")
var next = start + options.interval
while process.isRunning {
    let now = monotonicSeconds()
    if now < next {
        usleep(useconds_t(min(next - now, 0.2) * 1e6))
        continue
    }
    next += options.interval
    guard let rss = residentBytes(pid), let fds = openDescriptors(pid) else { break }
    let t = now - start
    samples.append((t, rss, fds))
    print(String(format: "%6.0f %10.1f %5d", t, Double(rss) / 1_048_576, fds))
    fflush(nil)
}
process.waitUntilExit()
print("fleetbench exit status \(process.terminationStatus); results in \(options.out)")

// The run's clock starts at its first connect, which comes after the scenario is loaded and the broker started
// (tens of seconds for 15,000 clients): the first minute is counted from the first sample whose descriptor count
// rose above the process's start.
let connectStart = samples.first(where: { $0.fds > (samples.first?.fds ?? 0) + 16 })?.t ?? 0
print(String(format: "connecting began before t = %.0f s; figures from t >= %.0f s", connectStart, connectStart + 60))
let steady = samples.filter { $0.t >= connectStart + 60 }
guard steady.count >= 2 else {
    print("fewer than two samples after the first minute: no figures")
    exit(1)
}
// The last sample may fall in the drain and disconnect, when connections close: report it but leave it out.
let measured = steady.count > 3 ? Array(steady.dropLast()) : steady
let rss = measured.map { Double($0.rss) }
let mean = rss.reduce(0, +) / Double(rss.count)
let spread = (rss.max()! - rss.min()!) / mean * 100
let times = measured.map(\.t)
let meanT = times.reduce(0, +) / Double(times.count)
var covariance = 0.0, variance = 0.0
for (t, value) in zip(times, rss) {
    covariance += (t - meanT) * (value - mean)
    variance += (t - meanT) * (t - meanT)
}
let slope = variance > 0 ? covariance / variance : 0  // bytes per second
let atHour = mean + slope * (3600 - meanT)
let fds = measured.map(\.fds)
print(String(format: "samples after the first minute: %d (t %.0f..%.0f s)", measured.count, times.first!, times.last!))
print(String(format: "RSS after the first minute: min %.1f MiB, max %.1f MiB, mean %.1f MiB, spread %.2f %% of the mean",
             rss.min()! / 1_048_576, rss.max()! / 1_048_576, mean / 1_048_576, spread))
print(String(format: "RSS slope: %.1f KiB/min; at that slope a 1-hour run ends at %.1f MiB (%+.1f MiB over the mean)",
             slope * 60 / 1024, atHour / 1_048_576, (atHour - mean) / 1_048_576))
print("descriptors after the first minute: min \(fds.min()!), max \(fds.max()!), first \(fds.first!), last \(fds.last!)")
print("verdict: RSS spread \(spread <= 5 ? "<=" : ">") 5 %, descriptors \(fds.last! <= fds.first! ? "did not grow" : "grew")")
