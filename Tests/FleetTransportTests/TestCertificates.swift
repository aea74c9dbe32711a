import Foundation

/// Certificates made at test time with the `openssl` command, once per test process: a CA, a server certificate
/// for 127.0.0.1 and localhost (subjectAltName) signed by it, a client certificate signed by it, and a second,
/// unrelated CA (the "wrong CA"). EC P-256 keys: quick to make and to handshake.
struct TestCertificates: Sendable {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    var clientCertificate: String { directory + "/client.pem" }
    var clientKey: String { directory + "/client.key" }
    var otherCAFile: String { directory + "/other-ca.pem" }

    static let shared: Result<TestCertificates, CertificateError> = Result { () throws(CertificateError) in try make() }

    struct CertificateError: Error, CustomStringConvertible {
        let description: String
    }

    static func get() throws -> TestCertificates { try shared.get() }

    private static func make() throws(CertificateError) -> TestCertificates {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let directory = base + "/fleetbench-certs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw CertificateError(description: "cannot create \(directory): \(error)")
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for (name, subject) in [("ca", "/CN=fleetbench test CA"), ("other-ca", "/CN=fleetbench unrelated CA")] {
            try run(
                ["req", "-x509"] + ec + [
                    "-keyout", "\(name).key", "-out", "\(name).pem", "-days", "2", "-subj", subject,
                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                ], in: directory)
        }
        try write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n", to: directory + "/server.ext")
        try write("extendedKeyUsage=clientAuth\n", to: directory + "/client.ext")
        for (name, subject, serial) in [("server", "/CN=localhost", "2"), ("client", "/CN=fleet-client-1", "3")] {
            try run(["req"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject], in: directory)
            try run(
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", serial,
                    "-days", "2", "-extfile", "\(name).ext", "-out", "\(name).pem",
                ], in: directory)
        }
        // mosquitto may drop privileges to another user; let it read the keys.
        for file in ["server.key", "client.key", "ca.key", "other-ca.key"] {
            chmod(directory + "/" + file, 0o644)
        }
        createdDirectory = directory
        // Static storage is never deinitialized: remove the files when the test process exits.
        atexit {
            if let directory = TestCertificates.createdDirectory { try? FileManager.default.removeItem(atPath: directory) }
        }
        return TestCertificates(directory: directory)
    }

    /// Written once, inside the one-time initialization of `shared`; read by the exit handler.
    nonisolated(unsafe) private static var createdDirectory: String?

    private static func write(_ text: String, to path: String) throws(CertificateError) {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw CertificateError(description: "cannot write \(path)")
        }
    }

    private static func run(_ arguments: [String], in directory: String) throws(CertificateError) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw CertificateError(description: "cannot run openssl: \(error)")
        }
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CertificateError(
                description: "openssl \(arguments.joined(separator: " ")) failed: \(String(decoding: output, as: UTF8.self))")
        }
    }
}
