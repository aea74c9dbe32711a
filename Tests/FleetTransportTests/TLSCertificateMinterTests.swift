import FleetBroker
import FleetTransport
import Dispatch
import Foundation
import Synchronization
import Testing
import FleetTestSupport

/// Runs the `openssl` command (an oracle independent of the code under test); returns its exit status and output.
func runOpenSSL(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

/// Writes an identity's PEM files into `directory` as NAME.pem and NAME.key.
func write(_ identity: TLSClientIdentity, to directory: String, name: String) throws -> (certificate: String, key: String) {
    let certificate = directory + "/\(name).pem"
    let key = directory + "/\(name).key"
    try identity.certificatePEM.write(toFile: certificate, atomically: true, encoding: .utf8)
    try identity.privateKeyPEM.write(toFile: key, atomically: true, encoding: .utf8)
    return (certificate, key)
}

@Suite("TLSCertificateMinter: per-vehicle client certificates from a test CA")
struct TLSCertificateMinterTests {
    @Test("minted certificates verify against the CA for client use and carry the name, key and extensions asked for")
    func verifiesWithOpenSSL() throws {
        let certificates = try TestCertificates.get()
        let minter = try TLSCertificateMinter(caCertificateFile: certificates.caFile, caKeyFile: certificates.caKey, validity: 86_400)
        let directory = certificates.directory + "/minted-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var serials: Set<String> = []
        for index in 0..<3 {
            let name = "vehicle-\(index)"
            let identity = try minter.mint(commonName: name)
            #expect(identity.commonName == name)
            #expect(identity.privateKeyDER.count == 138)  // PKCS #8 of a P-256 key with its public point
            #expect(identity.certificateDER.count > 400 && identity.certificateDER.count < 600)
            let files = try write(identity, to: directory, name: name)
            let verify = try runOpenSSL(["verify", "-CAfile", certificates.caFile, "-purpose", "sslclient", files.certificate])
            #expect(verify.status == 0)
            #expect(verify.output == "\(files.certificate): OK\n")
            let text = try runOpenSSL(["x509", "-in", files.certificate, "-noout", "-subject", "-issuer", "-serial",
                                       "-ext", "basicConstraints,keyUsage,extendedKeyUsage"]).output
            #expect(text.hasPrefix("subject=CN = \(name)\nissuer=CN = fleetbench throwaway CA\nserial="))
            #expect(text.hasSuffix("""
                X509v3 Basic Constraints: critical
                    CA:FALSE
                X509v3 Key Usage: critical
                    Digital Signature
                X509v3 Extended Key Usage: 
                    TLS Web Client Authentication

                """))
            serials.insert(String(text.split(separator: "\n")[2]))
            // The key belongs to the certificate: both give the same public key.
            let fromCertificate = try runOpenSSL(["x509", "-in", files.certificate, "-noout", "-pubkey"]).output
            let fromKey = try runOpenSSL(["pkey", "-in", files.key, "-pubout"]).output
            #expect(fromCertificate == fromKey && fromKey.hasPrefix("-----BEGIN PUBLIC KEY-----"))
            let curve = try runOpenSSL(["pkey", "-in", files.key, "-noout", "-text"]).output
            #expect(curve.contains("ASN1 OID: prime256v1"))
        }
        #expect(serials.count == 3)
    }

    @Test("200 identities minted on two threads at once all verify, each with its own key and serial")
    func concurrentBatches() throws {
        let certificates = try TestCertificates.get()
        let minter = try TLSCertificateMinter(caCertificateFile: certificates.caFile, caKeyFile: certificates.caKey)
        let names = (0..<200).map { "veh-\($0)" }
        let halves = Mutex<[Int: Result<[TLSClientIdentity], TLSError>]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { half in
            let result = Result { () throws(TLSError) in try minter.mint(commonNames: names[(half * 100)..<(half * 100 + 100)]) }
            halves.withLock { $0[half] = result }
        }
        let identities = try halves.withLock { try ($0[0]!.get() + $0[1]!.get()) }
        #expect(identities.map(\.commonName) == names)
        let directory = certificates.directory + "/minted-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var files: [String] = []
        for identity in identities { files.append(try write(identity, to: directory, name: identity.commonName).certificate) }
        let verify = try runOpenSSL(["verify", "-CAfile", certificates.caFile, "-purpose", "sslclient"] + files)
        #expect(verify.status == 0)
        #expect(verify.output == files.map { "\($0): OK\n" }.joined())
        #expect(Set(identities.map(\.privateKeyDER)).count == 200)
        #expect(Set(identities.map { Array($0.certificateDER[15..<31]) }).count == 200)  // the 16-octet serials
    }

    @Test("a certificate minted by another CA does not verify against this one")
    func otherCAFailsVerification() throws {
        let certificates = try TestCertificates.get()
        let minter = try TLSCertificateMinter(caCertificateFile: certificates.otherCAFile, caKeyFile: certificates.otherCAKey)
        let directory = certificates.directory + "/minted-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try write(try minter.mint(commonName: "stranger"), to: directory, name: "stranger")
        let verify = try runOpenSSL(["verify", "-CAfile", certificates.caFile, files.certificate])
        #expect(verify.status != 0)
        #expect(verify.output.contains("unable to get local issuer certificate"))
    }

    @Test("a mosquitto requiring client certificates accepts minted identities and sees each common name as the username")
    func brokerSeesIdentities() throws {
        let certificates = try TestCertificates.get()
        let acl = certificates.directory + "/acl-\(UUID().uuidString)"
        // Each identity may use only its own subtree: the broker's authorization rests on the certificate's name.
        try "pattern readwrite vehicles/%u/#\n".write(toFile: acl, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: acl) }
        var configuration = MosquittoConfiguration()
        configuration.tlsListener = MosquittoTLSListener(
            caFile: certificates.caFile, certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey,
            requireClientCertificate: true)
        configuration.extraLines = ["use_identity_as_username true", "acl_file \(acl)"]
        let broker = try MosquittoBroker(configuration: configuration)
        defer { broker.stop() }
        let tlsPort = try #require(broker.tlsPort)
        let minter = try TLSCertificateMinter(caCertificateFile: certificates.caFile, caKeyFile: certificates.caKey)
        let context = try TLSClientContext(configuration: .init(caFile: certificates.caFile))
        var clients: [LayeredTestClient] = []
        for index in 1...3 {
            let identity = try minter.mint(commonName: "vehicle-00\(index)")
            let client = try LayeredTestClient.connect(port: tlsPort, tls: context, identity: identity)
            // The client id differs from the certificate's name, so a username in the log can only come from it.
            try client.sendMQTT(MQTTTestBytes.connect(clientID: "client-\(index)"))
            #expect(try client.receivePackets(1) == [MQTTTestBytes.connack])
            // The ACL admits a client only to vehicles/<its username>/#: the message comes back only if the broker
            // took the certificate's common name as the username.
            let own = "vehicles/vehicle-00\(index)/cmd"
            try client.sendMQTT(MQTTTestBytes.subscribe(topic: own, qos: 1, packetID: 1))
            #expect(try client.receivePackets(1) == [MQTTTestBytes.suback(packetID: 1, qos: 1)])
            try client.sendMQTT(MQTTTestBytes.publish(topic: own, payload: Array("allowed".utf8), qos: 1, packetID: 2))
            let delivered = MQTTTestBytes.publish(topic: own, payload: Array("allowed".utf8), qos: 1, packetID: 1)
            #expect(try client.receive(until: [MQTTTestBytes.puback(2), delivered]).count == 2)
            try client.sendMQTT(MQTTTestBytes.puback(1))
            clients.append(client)
        }
        // vehicle-003 publishing into vehicle-001's subtree is acknowledged and dropped (MQTT 3.1.1 has no way to
        // say no): vehicle-001's next message from itself arrives with the next packet id, nothing before it.
        let own = "vehicles/vehicle-001/cmd"
        try clients[2].sendMQTT(MQTTTestBytes.publish(topic: own, payload: Array("denied".utf8), qos: 1, packetID: 3))
        #expect(try clients[2].receivePackets(1) == [MQTTTestBytes.puback(3)])
        try clients[0].sendMQTT(MQTTTestBytes.publish(topic: own, payload: Array("again".utf8), qos: 1, packetID: 3))
        let answers = try clients[0].receivePackets(2)
        #expect(Set(answers) == [MQTTTestBytes.puback(3), MQTTTestBytes.publish(topic: own, payload: Array("again".utf8), qos: 1, packetID: 2)])
        for client in clients { try client.sendMQTT(MQTTTestBytes.disconnect) }
        let log = try String(contentsOfFile: broker.logPath, encoding: .utf8)
        for index in 1...3 {
            #expect(log.contains(" as client-\(index) (p2, c1, k60, u'vehicle-00\(index)')."))
        }
    }

    @Test("the broker refuses an identity minted by a CA it does not trust")
    func brokerRefusesStranger() throws {
        let certificates = try TestCertificates.get()
        let (broker, _) = try startBroker(requireClientCertificate: true)
        let stranger = try TLSCertificateMinter(caCertificateFile: certificates.otherCAFile, caKeyFile: certificates.otherCAKey)
            .mint(commonName: "stranger")
        let context = try TLSClientContext(configuration: .init(caFile: certificates.caFile, minimumVersion: .tls12, maximumVersion: .tls12))
        let error = #expect(throws: TLSError.self) {
            _ = try LayeredTestClient.connect(port: try #require(broker.tlsPort), tls: context, identity: stranger)
        }
        #expect(error?.kind == .protocolAlert)
        #expect(error?.description == "protocol alert: tlsv1 alert unknown ca")
    }

    @Test("bad CA files and names are refused with the reason")
    func refusals() throws {
        let certificates = try TestCertificates.get()
        let encrypted = certificates.directory + "/encrypted-\(UUID().uuidString).key"
        defer { try? FileManager.default.removeItem(atPath: encrypted) }
        #expect(try runOpenSSL(["pkey", "-in", certificates.caKey, "-aes256", "-passout", "pass:secret", "-out", encrypted]).status == 0)
        let cases: [(String, String, String)] = [
            ("/nonexistent/ca.pem", certificates.caKey, "cannot read CA certificate /nonexistent/ca.pem: No such file or directory"),
            (certificates.caKey, certificates.caKey, "no PEM certificate in \(certificates.caKey): no start line"),
            (certificates.caFile, certificates.otherCAKey, "the CA key \(certificates.otherCAKey) does not belong to the CA certificate \(certificates.caFile)"),
            (certificates.serverCertificate, certificates.serverKey, "\(certificates.serverCertificate) is not a CA certificate (it lacks basicConstraints CA:TRUE)"),
            (certificates.caFile, encrypted, "no usable PEM private key in \(encrypted): bad decrypt (encrypted keys are not supported: give the test CA's key unencrypted)"),
        ]
        for (certificate, key, message) in cases {
            #expect(throws: TLSError(.configuration, message)) {
                try TLSCertificateMinter(caCertificateFile: certificate, caKeyFile: key)
            }
        }
        let minter = try TLSCertificateMinter(caCertificateFile: certificates.caFile, caKeyFile: certificates.caKey)
        let long = String(repeating: "v", count: 65)
        #expect(throws: TLSError(.configuration, "a certificate's common name must have 1 to 64 characters, got 65: \"\(long)\"")) {
            try minter.mint(commonName: long)
        }
        #expect(throws: TLSError(.configuration, "a certificate's common name must have 1 to 64 characters, got 0: \"\"")) {
            try minter.mint(commonName: "")
        }
        #expect(try minter.mint(commonName: "véhicule-ü").commonName == "véhicule-ü")
    }
}
