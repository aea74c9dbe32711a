import FleetBroker
import Foundation
import Testing

/// A client that never gets connected fails the run unless a threshold on connections.* accepts it. The
/// broker: mosquitto with one user and no anonymous access; one fleet has the password, one does not.
@Suite("fleetbench run: clients that never connected", .serialized)
struct NeverConnectedRunTests {
    /// mosquitto with the user `alice` / `secret` only, and the directory holding its password file.
    static func broker() throws -> (MosquittoBroker, String) {
        let directory = RunEndToEndTests.temporaryDirectory("passwords")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/passwords"
        try MosquittoPasswordFile.create(at: file, user: "alice", password: "secret")
        var configuration = MosquittoConfiguration()
        configuration.passwordFile = file
        return (try MosquittoBroker(configuration: configuration), directory)
    }

    static let scenario = """
        {
          "duration": "1s",
          "fleets": [
            {"name": "right", "count": 1, "client_id": "right-{i}", "protocol": "3.1.1",
             "credentials": {"username": "alice", "password": "secret"},
             "publish": [{"name": "p", "topic": "t/{client_id}", "qos": 1,
                          "schedule": {"type": "interval", "every": "100ms"}, "payload": {"size": 32}}]},
            {"name": "wrong", "count": 2, "client_id": "wrong-{i}", "protocol": "3.1.1",
             "credentials": {"username": "alice", "password": "guess"}}
          ]
        }
        """

    @Test("2 of 3 clients refused: FAILED, exit 99, counted in report.json and the summary; a threshold accepts it")
    func neverConnected() throws {
        let (broker, directory) = try Self.broker()
        defer {
            broker.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let scenarioPath = directory + "/refused.json"
        try Self.scenario.write(toFile: scenarioPath, atomically: true, encoding: .utf8)
        let out = directory + "/out-failed"
        let failed = try RunEndToEndTests.run(["run", scenarioPath, "--broker", broker.url, "--out", out, "--quiet"])
        #expect(failed.status == 99, "\(failed.error)")
        #expect(failed.output.contains("refused: FAILED after "))
        #expect(failed.output.contains("                failed connack_refused_0x87 (Not authorized): 2"))
        #expect(failed.output.contains("                never connected: 2 clients"))
        #expect(failed.error.contains("fleetbench: 2 clients never got connected; add a threshold on connections.* "
            + "(e.g. \"connections.never_connected <= N\") to accept that"))
        let report = try RunEndToEndTests.report(in: out)
        #expect(report["passed"] as? Bool == false)
        let connections = try #require(report["connections"] as? [String: Any])
        #expect(connections["never_connected"] as? Int == 2)
        #expect(connections["failed_by_reason"] as? [String: Int] == ["connack_refused_0x87": 2])

        let accepted = directory + "/out-accepted"
        let passed = try RunEndToEndTests.run([
            "run", scenarioPath, "--broker", broker.url, "--out", accepted, "--quiet",
            "--set", #"thresholds=["connections.never_connected <= 2"]"#,
        ])
        #expect(passed.status == 0, "\(passed.error)")
        #expect(passed.output.contains("refused: PASSED after "))
        #expect(try RunEndToEndTests.report(in: accepted)["passed"] as? Bool == true)
    }
}
