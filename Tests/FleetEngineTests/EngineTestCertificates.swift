import Foundation

/// A CA, a server certificate for 127.0.0.1 and localhost signed by it, and an unrelated CA, made once per test
/// process with the `openssl` command (EC P-256: quick to make and to handshake). Removed at exit.
struct EngineTestCertificates: Sendable {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    var otherCAFile: String { directory + "/other-ca.pem" }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let shared: Result<EngineTestCertificates, Failure> = Result { () throws(Failure) in try make() }

    static func get() throws -> EngineTestCertificates { try shared.get() }

    nonisolated(unsafe) private static var createdDirectory: String?

    private static func make() throws(Failure) -> EngineTestCertificates {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let directory = base + "/fleetbench-engine-certs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n".utf8)
                .write(to: URL(fileURLWithPath: directory + "/server.ext"))
        } catch {
            throw Failure(description: "cannot prepare \(directory): \(error)")
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for (name, subject) in [("ca", "/CN=fleetbench engine test CA"), ("other-ca", "/CN=fleetbench unrelated CA")] {
            try openssl(["req", "-x509"] + ec + ["-keyout", "\(name).key", "-out", "\(name).pem", "-days", "2",
                                                 "-subj", subject, "-addext", "basicConstraints=critical,CA:TRUE"],
                        in: directory)
        }
        try openssl(["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], in: directory)
        try openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "2",
                     "-days", "2", "-extfile", "server.ext", "-out", "server.pem"], in: directory)
        chmod(directory + "/server.key", 0o644)  // mosquitto may drop privileges to another user
        createdDirectory = directory
        atexit {
            if let directory = EngineTestCertificates.createdDirectory { try? FileManager.default.removeItem(atPath: directory) }
        }
        return EngineTestCertificates(directory: directory)
    }

    private static func openssl(_ arguments: [String], in directory: String) throws(Failure) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch { throw Failure(description: "cannot run openssl: \(error)") }
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) failed: \(String(decoding: output, as: UTF8.self))")
        }
    }
}
