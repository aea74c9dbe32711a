// Identity benchmark: how fast per-vehicle client certificates are minted from a test CA (EC P-256), what using
// one costs per connection, and how fast an identities CSV is read.
//
//   swift build -c release --product IdentityBenchmark
//   .build/release/IdentityBenchmark [certificates]
import Dispatch
import FleetBroker
import FleetScenario
import FleetTransport
import Glibc
import Synchronization

func now() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Resident memory of this process in bytes (/proc/self/statm, second field, in pages).
func residentBytes() -> Int {
    guard let file = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(file) }
    var size = 0, resident = 0
    guard withUnsafeMutablePointer(to: &size, { sizePointer in
        withUnsafeMutablePointer(to: &resident) { fscanf_pair(file, sizePointer, $0) }
    }) else { return 0 }
    return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func fscanf_pair(_ file: UnsafeMutablePointer<FILE>, _ a: UnsafeMutablePointer<Int>, _ b: UnsafeMutablePointer<Int>) -> Bool {
    var line = [CChar](repeating: 0, count: 256)
    guard fgets(&line, 256, file) != nil else { return false }
    let fields = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: " ")
    guard fields.count >= 2, let first = Int(fields[0]), let second = Int(fields[1]) else { return false }
    a.pointee = first
    b.pointee = second
    return true
}

func seconds(since start: UInt64) -> Double { Double(now() - start) / 1e9 }

func rounded(_ value: Double, _ decimals: Int) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (value * scale).rounded()
    let whole = Int(scaled / scale)
    guard decimals > 0 else { return "\(whole)" }
    let fraction = String(Int(scaled) % Int(scale))
    return "\(whole)." + String(repeating: "0", count: decimals - fraction.count) + fraction
}

let count = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 10_000

do {
    let certificates = try ThrowawayCertificates.make(label: "identity-bench")
    defer { certificates.remove() }
    let minter = try TLSCertificateMinter(caCertificateFile: certificates.caFile, caKeyFile: certificates.caKey)
    let names = (0..<count).map { "veh-\($0)" }

    let residentBefore = residentBytes()
    var start = now()
    let identities = try minter.mint(commonNames: names)
    var elapsed = seconds(since: start)
    let heap = residentBytes() - residentBefore
    let der = identities.reduce(0) { $0 + $1.certificateDER.count } / count
    print("mint, 1 thread:  \(count) certificates in \(rounded(elapsed, 2)) s = \(Int(Double(count) / elapsed))/s, \(rounded(elapsed / Double(count) * 1e6, 1)) µs each; \(heap / count) bytes of resident memory per identity (certificate DER \(der) bytes)")

    // Two threads (this machine has two cores): each mints half of the names.
    let failures = Atomic<Int>(0)
    start = now()
    DispatchQueue.concurrentPerform(iterations: 2) { part in
        do { _ = try minter.mint(commonNames: names[(part * count / 2)..<((part + 1) * count / 2)]) } catch { failures.add(1, ordering: .relaxed) }
    }
    elapsed = seconds(since: start)
    print("mint, 2 threads: \(count) certificates in \(rounded(elapsed, 2)) s = \(Int(Double(count) / elapsed))/s (failures: \(failures.load(ordering: .relaxed)))")
    start = now()
    for name in names.prefix(1000) { _ = try minter.mint(commonName: name) }
    print("mint(commonName:) one call at a time: \(rounded(seconds(since: start) / Double(min(count, 1000)) * 1e6, 1)) µs each")

    // Per connection: an SSL object presenting an identity (DER parsed for that connection) versus none.
    let context = try TLSClientContext(configuration: .init(caFile: certificates.caFile))
    start = now()
    for identity in identities.prefix(10_000) { _ = try context.makeConnection(serverName: "127.0.0.1", identity: identity) }
    let withIdentity = seconds(since: start) / Double(min(count, 10_000))
    start = now()
    for _ in 0..<min(count, 10_000) { _ = try context.makeConnection(serverName: "127.0.0.1") }
    let without = seconds(since: start) / Double(min(count, 10_000))
    // The per-client file pattern that exists (`tls.client_cert`/`client_key`): PEM files read for each connection.
    let pemFile = certificates.directory + "/bench.pem", keyFile = certificates.directory + "/bench.key"
    guard let pemHandle = fopen(pemFile, "w"), let keyHandle = fopen(keyFile, "w") else {
        print("error: cannot write \(pemFile)")
        exit(1)
    }
    fputs(identities[0].certificatePEM, pemHandle)
    fputs(identities[0].privateKeyPEM, keyHandle)
    fclose(pemHandle)
    fclose(keyHandle)
    let fromFiles = TLSClientCertificate(certificateFile: pemFile, privateKeyFile: keyFile)
    start = now()
    for _ in 0..<1000 { _ = try context.makeConnection(serverName: "127.0.0.1", clientCertificate: fromFiles) }
    let withFiles = seconds(since: start) / 1000
    print("connection setup: \(rounded(withIdentity * 1e6, 1)) µs with a minted identity, \(rounded(withFiles * 1e6, 1)) µs with PEM files per client, \(rounded(without * 1e6, 1)) µs without (SSL object only, no handshake)")

    // CSV: 100,000 records with quoted passwords.
    var text = "client_id,username,password\n"
    for index in 0..<100_000 { text += "veh-\(index),fleet-\(index % 10),\"pw,\(index)\"\"x\"\n" }
    let csv = Array(text.utf8)
    start = now()
    let table = try IdentityTable.parse(csv, file: "bench.csv")
    elapsed = seconds(since: start)
    print("identities CSV: \(table.records.count) records (\(csv.count / 1024) KiB) in \(rounded(elapsed * 1000, 1)) ms = \(Int(Double(table.records.count) / elapsed)) records/s")
} catch {
    print("error: \(error)")
    exit(1)
}
