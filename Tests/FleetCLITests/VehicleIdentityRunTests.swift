@testable import FleetBroker
import Foundation
import Testing

/// Per-vehicle identities against a mosquitto that wants both a client certificate signed by its CA
/// (`require_certificate true`) and a user name with its password: the scenario's `identities` CSV gives each
/// vehicle its client id and credentials, `tls.mint` mints each one's certificate at start.
@Suite("identities and minted certificates, end to end", .serialized)
struct VehicleIdentityRunTests {
    static let vehicles = 4

    /// Users known to the broker: veh-0..veh-3 and the backend.
    static func broker(_ directory: String, certificates: ThrowawayCertificates) throws -> MosquittoBroker {
        let passwordFile = directory + "/passwd"
        try MosquittoPasswordFile.create(at: passwordFile, users: (0..<vehicles).map { ("user-\($0)", "pw-\($0)-secret") }
                                         + [("backend", "backend-pw")])
        var configuration = MosquittoConfiguration()
        configuration.passwordFile = passwordFile
        configuration.tlsListener = MosquittoTLSListener(
            caFile: certificates.caFile, certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey,
            requireClientCertificate: true)
        return try MosquittoBroker(configuration: configuration)
    }

    static func scenario(port: UInt16, certificates: ThrowawayCertificates, identities: String) -> String {
        """
        {
          "duration": "2s",
          "brokers": [{"url": "mqtts://127.0.0.1:\(port)", "tls": {"ca_file": "\(certificates.caFile)", "sni": "localhost"}}],
          "fleets": [
            {"name": "cars", "count": \(vehicles), "protocol": "5", "identities": "\(identities)",
             "tls": {"mint": {"ca_cert": "\(certificates.caFile)", "ca_key": "\(certificates.caKey)"}},
             "publish": [{"name": "position", "topic": "cars/{client_id}", "qos": 1,
                          "schedule": {"type": "interval", "every": "200ms"}, "payload": {"size": 32}}]},
            {"name": "backend", "count": 1, "client_id": "backend", "protocol": "5",
             "credentials": {"username": "backend", "password": "backend-pw"},
             "tls": {"mint": {"ca_cert": "\(certificates.caFile)", "ca_key": "\(certificates.caKey)"}},
             "subscriptions": [{"filter": "cars/+", "qos": 1}]}
          ],
          "thresholds": ["connections.failed == 0", "delivery.qos1.lost == 0"]
        }
        """
    }

    @Test("each vehicle logs in with its own row and a minted certificate; a wrong password in one row fails that vehicle only")
    func identitiesAndMint() throws {
        let directory = RunEndToEndTests.temporaryDirectory("identities")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificates = try ThrowawayCertificates.make(label: "identities")
        defer { certificates.remove() }
        let broker = try Self.broker(directory, certificates: certificates)
        defer { broker.stop() }
        let port = try #require(broker.tlsPort)

        // Every row right: everything connects, every message arrives.
        let rows = (0..<Self.vehicles).map { "veh-\($0),user-\($0),pw-\($0)-secret" }
        try ("client_id,username,password\n" + rows.joined(separator: "\n") + "\n")
            .write(toFile: directory + "/ids.csv", atomically: true, encoding: .utf8)
        try Self.scenario(port: port, certificates: certificates, identities: directory + "/ids.csv")
            .write(toFile: directory + "/good.json", atomically: true, encoding: .utf8)
        let good = try RunEndToEndTests.run(["run", directory + "/good.json", "--out", directory + "/good", "--quiet"])
        #expect(good.status == 0, "\(good.output)\n\(good.error)\n\(broker.logTail())")
        let report = try RunEndToEndTests.report(in: directory + "/good")
        let connections = try #require(report["connections"] as? [String: Any])
        #expect(connections["succeeded"] as? Int == Self.vehicles + 1)
        // The broker saw the client ids of the file.
        let log = (try? String(contentsOfFile: broker.logPath, encoding: .utf8)) ?? ""
        for index in 0..<Self.vehicles { #expect(log.contains("veh-\(index)"), "veh-\(index) not in the broker's log") }

        // Row 2 with a wrong password: exactly that vehicle is refused.
        var wrong = rows
        wrong[2] = "veh-2,user-2,not-the-password"
        try ("client_id,username,password\n" + wrong.joined(separator: "\n") + "\n")
            .write(toFile: directory + "/wrong.csv", atomically: true, encoding: .utf8)
        try Self.scenario(port: port, certificates: certificates, identities: directory + "/wrong.csv")
            .write(toFile: directory + "/wrong.json", atomically: true, encoding: .utf8)
        let refused = try RunEndToEndTests.run(["run", directory + "/wrong.json", "--out", directory + "/wrong", "--quiet"])
        #expect(refused.status != 0)
        let refusedReport = try RunEndToEndTests.report(in: directory + "/wrong")
        let refusedConnections = try #require(refusedReport["connections"] as? [String: Any])
        #expect(refusedConnections["succeeded"] as? Int == Self.vehicles)
        #expect(refusedConnections["never_connected"] as? Int == 1)
    }

    @Test("a bad identities file is refused with its file:line:column, located at the fleet's key")
    func badIdentitiesFile() throws {
        let directory = RunEndToEndTests.temporaryDirectory("bad-identities")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "client_id,username,pasword\nveh-0,a,b\n".write(toFile: directory + "/ids.csv", atomically: true, encoding: .utf8)
        try """
        {
          "duration": "1s",
          "fleets": [
            {"name": "cars", "count": 1,
             "identities": "ids.csv"}
          ]
        }
        """.write(toFile: directory + "/s.json", atomically: true, encoding: .utf8)
        let outcome = try RunEndToEndTests.run(["validate", directory + "/s.json"])
        #expect(outcome.status == 65)
        let text = outcome.output + outcome.error
        #expect(text.contains("\(directory)/s.json:5:20: fleets[0].identities: the identities file has problems:"), "\(text)")
        #expect(text.contains("\(directory)/ids.csv:1:"), "\(text)")
    }
}
