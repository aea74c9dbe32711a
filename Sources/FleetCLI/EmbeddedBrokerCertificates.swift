import Foundation

/// A throwaway CA and a server certificate for 127.0.0.1 and localhost, made with the `openssl` command at the
/// start of a run whose fleets ask the embedded mosquitto for mqtts:// or wss://. The clients verify the
/// broker against this CA (verification stays on); the directory is removed when the run ends.
struct EmbeddedBrokerCertificates {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func make() throws -> EmbeddedBrokerCertificates {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let directory = base + "/fleetbench-broker-certs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificates = EmbeddedBrokerCertificates(directory: directory)
        do {
            try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n".utf8)
                .write(to: URL(fileURLWithPath: directory + "/server.ext"))
            // EC P-256: quick to generate and to handshake.
            let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            try openssl(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                                                 "-subj", "/CN=fleetbench throwaway CA",
                                                 "-addext", "basicConstraints=critical,CA:TRUE"], in: directory)
            try openssl(["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"],
                        in: directory)
            try openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "1",
                         "-days", "2", "-extfile", "server.ext", "-out", "server.pem"], in: directory)
            // mosquitto may drop privileges to another user and must still read its key.
            chmod(certificates.serverKey, 0o644)
        } catch {
            certificates.remove()
            throw error
        }
        return certificates
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func openssl(_ arguments: [String], in directory: String) throws {
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
            throw Failure(description: "cannot run openssl for the embedded broker's certificates: \(error)")
        }
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments.first ?? "") failed: \(String(decoding: output, as: UTF8.self))")
        }
    }
}
