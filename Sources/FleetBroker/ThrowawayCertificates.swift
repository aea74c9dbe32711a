import Foundation

/// A throwaway certificate authority made with the `openssl` command: a CA, a server certificate for 127.0.0.1
/// and localhost (subjectAltName) signed by it, and optionally a client certificate signed by it and a second,
/// unrelated CA (a "wrong CA" for tests). EC P-256 keys: quick to make and to handshake.
///
/// Used for the embedded broker's TLS listener (`fleetbench run` with mqtts/wss fleets and no broker named),
/// by tests and by benchmarks. Files live in a fresh temporary directory; `remove()` deletes it.
public struct ThrowawayCertificates: Sendable {
    public let directory: String
    public var caFile: String { directory + "/ca.pem" }
    /// The CA's private key (unencrypted PEM), for minting more certificates from this CA.
    public var caKey: String { directory + "/ca.key" }
    public var serverCertificate: String { directory + "/server.pem" }
    public var serverKey: String { directory + "/server.key" }
    /// Present when made with `clientCertificate: true`.
    public var clientCertificate: String { directory + "/client.pem" }
    public var clientKey: String { directory + "/client.key" }
    /// Present when made with `unrelatedCA: true`: a CA that signed none of the above.
    public var otherCAFile: String { directory + "/other-ca.pem" }
    public var otherCAKey: String { directory + "/other-ca.key" }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static func make(
        clientCertificate: Bool = false, unrelatedCA: Bool = false, label: String = "certs"
    ) throws(Failure) -> ThrowawayCertificates {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let directory = base + "/fleetbench-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let certificates = ThrowawayCertificates(directory: directory)
        do throws(Failure) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw Failure(description: "cannot create \(directory): \(error)")
            }
            let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            var authorities = [("ca", "/CN=fleetbench throwaway CA")]
            if unrelatedCA { authorities.append(("other-ca", "/CN=fleetbench unrelated CA")) }
            for (name, subject) in authorities {
                try openssl(["req", "-x509"] + ec + [
                    "-keyout", "\(name).key", "-out", "\(name).pem", "-days", "2", "-subj", subject,
                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                ], in: directory)
            }
            try write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n", to: directory + "/server.ext")
            var leaves = [("server", "/CN=localhost", "2")]
            if clientCertificate {
                try write("extendedKeyUsage=clientAuth\n", to: directory + "/client.ext")
                leaves.append(("client", "/CN=fleet-client-1", "3"))
            }
            for (name, subject, serial) in leaves {
                try openssl(["req"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject], in: directory)
                try openssl([
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", serial,
                    "-days", "2", "-extfile", "\(name).ext", "-out", "\(name).pem",
                ], in: directory)
            }
            // mosquitto may drop privileges to another user and must still read its key.
            for name in ["server", "client"] where FileManager.default.fileExists(atPath: directory + "/\(name).key") {
                chmod(directory + "/\(name).key", 0o644)
            }
        } catch {
            certificates.remove()
            throw error
        }
        return certificates
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func write(_ text: String, to path: String) throws(Failure) {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw Failure(description: "cannot write \(path)")
        }
    }

    private static func openssl(_ arguments: [String], in directory: String) throws(Failure) {
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
            throw Failure(description: "cannot run /usr/bin/openssl (install the openssl package): \(error)")
        }
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) failed: \(String(decoding: output, as: UTF8.self))")
        }
    }
}
