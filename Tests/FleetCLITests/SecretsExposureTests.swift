@testable import FleetBroker
@testable import FleetCLI
import Foundation
import Testing

/// Credentials for real systems: the password a run logs in with must appear in no output and no file of the
/// results folder, whether it came from the environment or was written into the scenario.
@Suite("secrets stay secret", .serialized)
struct SecretsExposureTests {
    static let user = "fleet-user"
    static let password = "Pw-7f3c9e1d-hunter2"

    /// A mosquitto that refuses anonymous clients and knows one user.
    static func passwordProtectedBroker(_ directory: String) throws -> MosquittoBroker {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let passwordFile = directory + "/passwd"
        try MosquittoPasswordFile.create(at: passwordFile, user: user, password: password)
        var configuration = MosquittoConfiguration()
        configuration.passwordFile = passwordFile
        return try MosquittoBroker(configuration: configuration)
    }

    /// Three publishers and one subscriber, all logging in with `credentials` (a JSON object's text).
    static func scenario(credentials: String) -> String {
        """
        {
          "duration": "2s",
          "fleets": [
            {"name": "cars", "count": 3, "client_id": "car-{i}", "protocol": "5", "credentials": \(credentials),
             "publish": [{"name": "position", "topic": "cars/{client_id}", "qos": 1,
                          "schedule": {"type": "interval", "every": "200ms"}, "payload": {"size": 32}}]},
            {"name": "watch", "count": 1, "client_id": "watch", "protocol": "5", "credentials": \(credentials),
             "subscriptions": [{"filter": "cars/+", "qos": 1}]}
          ],
          "thresholds": ["connections.failed == 0", "delivery.qos1.lost == 0"]
        }
        """
    }

    static func run(_ arguments: [String], environment: [String: String]) throws -> RunEndToEndTests.Outcome {
        try RunEndToEndTests.run(arguments, environment: environment)
    }

    /// Every file under `directory` (recursively) with its bytes.
    static func files(under directory: String) throws -> [(path: String, bytes: Data)] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: directory))
        var files: [(String, Data)] = []
        for case let relative as String in enumerator {
            let path = directory + "/" + relative
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append((relative, try Data(contentsOf: URL(fileURLWithPath: path))))
            }
        }
        return files.sorted { $0.0 < $1.0 }
    }

    /// Where `secret` shows: the names of the streams and files holding it.
    static func exposures(of secret: String, in outcome: RunEndToEndTests.Outcome, resultsFolder: String) throws -> [String] {
        var found: [String] = []
        if outcome.output.contains(secret) { found.append("stdout") }
        if outcome.error.contains(secret) { found.append("stderr") }
        let needle = Data(secret.utf8)
        for file in try files(under: resultsFolder) where file.bytes.range(of: needle) != nil {
            found.append(file.path)
        }
        return found
    }

    @Test("a password from the environment logs in and shows nowhere: output, report.json, HTML, JUnit, hlog")
    func environmentPasswordLogsInAndIsNeverWritten() throws {
        let work = RunEndToEndTests.temporaryDirectory("secrets-env")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let broker = try Self.passwordProtectedBroker(work + "/broker")
        defer { broker.stop() }
        let scenarioPath = work + "/logged-in.json"
        try Self.scenario(credentials: #"{"username": "${FB_TEST_USER}", "password": "${FB_TEST_PASS}"}"#)
            .write(toFile: scenarioPath, atomically: true, encoding: .utf8)
        let results = work + "/results"
        let environment = ["FB_TEST_USER": Self.user, "FB_TEST_PASS": Self.password]

        let outcome = try Self.run(["run", scenarioPath, "--broker", broker.url, "--out", results], environment: environment)
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        let files = try Self.files(under: results).map(\.path)
        #expect(files == ["junit.xml", "latency.hlog", "report.html", "report.json", "timeline.csv"])
        let report = try RunEndToEndTests.report(in: results)
        let connections = try #require(report["connections"] as? [String: Any])
        #expect(connections["failed"] as? Int == 0)
        #expect(try Self.exposures(of: Self.password, in: outcome, resultsFolder: results) == [])
        // The report keeps the reference, which names the variable and not its value.
        let reportText = try String(contentsOfFile: results + "/report.json", encoding: .utf8)
        #expect(reportText.contains("${FB_TEST_PASS}"))

        // Re-rendering and validating read the same inputs: nothing leaks there either.
        let rerendered = try Self.run(["report", results], environment: environment)
        #expect(rerendered.status == 0, "\(rerendered.error)")
        #expect(try Self.exposures(of: Self.password, in: rerendered, resultsFolder: results) == [])
        let validated = try Self.run(["validate", scenarioPath], environment: environment)
        #expect(validated.status == 0, "\(validated.error)")
        #expect(!validated.output.contains(Self.password) && !validated.error.contains(Self.password))
    }

    @Test("the broker enforces the password: a wrong one fails the run and is not shown either")
    func wrongPasswordIsRefusedAndNotShown() throws {
        let work = RunEndToEndTests.temporaryDirectory("secrets-wrong")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let broker = try Self.passwordProtectedBroker(work + "/broker")
        defer { broker.stop() }
        let scenarioPath = work + "/wrong.json"
        try Self.scenario(credentials: #"{"username": "${FB_TEST_USER}", "password": "${FB_TEST_PASS}"}"#)
            .write(toFile: scenarioPath, atomically: true, encoding: .utf8)
        let results = work + "/results"
        let wrong = "Wrong-\(Self.password)"
        let outcome = try Self.run(["run", scenarioPath, "--broker", broker.url, "--out", results, "--duration", "1s"],
                                   environment: ["FB_TEST_USER": Self.user, "FB_TEST_PASS": wrong])
        // No client got in: a runtime failure (exit 1), with the results still written.
        #expect(outcome.status == 1, "\(outcome.output)\n\(outcome.error)")
        let report = try RunEndToEndTests.report(in: results)
        let connections = try #require(report["connections"] as? [String: Any])
        #expect(connections["failed"] as? Int == 4)
        #expect(try Self.exposures(of: wrong, in: outcome, resultsFolder: results) == [])
    }

    @Test("a password written into the scenario is masked in the report and shown nowhere")
    func literalPasswordIsMasked() throws {
        let work = RunEndToEndTests.temporaryDirectory("secrets-literal")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let broker = try Self.passwordProtectedBroker(work + "/broker")
        defer { broker.stop() }
        let scenarioPath = work + "/literal.json"
        try Self.scenario(credentials: #"{"username": "\#(Self.user)", "password": "\#(Self.password)"}"#)
            .write(toFile: scenarioPath, atomically: true, encoding: .utf8)
        let results = work + "/results"
        let outcome = try Self.run(["run", scenarioPath, "--broker", broker.url, "--out", results], environment: [:])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        #expect(try Self.exposures(of: Self.password, in: outcome, resultsFolder: results) == [])
        let reportText = try String(contentsOfFile: results + "/report.json", encoding: .utf8)
        #expect(reportText.contains("\"password\": \"********\"") || reportText.contains("\"password\":\"********\""))
    }

    @Test("--metrics-listen: a port alone binds loopback; an address binds where it says")
    func metricsAddressDefaultsToLoopback() throws {
        for text in ["9464", ":9464"] {
            let command = try #require(try RunCommand.parse(["s.json", "--metrics-listen", text]))
            #expect(command.metricsAddress?.description == "127.0.0.1:9464")
            #expect(command.metricsAddress?.isLoopback == true)
        }
        let everywhere = try #require(try RunCommand.parse(["s.json", "--metrics-listen", "0.0.0.0:9464"]))
        #expect(everywhere.metricsAddress?.description == "0.0.0.0:9464")
        #expect(everywhere.metricsAddress?.isLoopback == false)
        #expect(throws: UsageError.self) { try RunCommand.parse(["s.json", "--metrics-listen", "0"]) }
    }

    @Test("metrics on a non-loopback address: the run says they are reachable from other machines; on loopback it does not")
    func metricsBeyondLoopbackAreAnnounced() throws {
        let work = RunEndToEndTests.temporaryDirectory("secrets-metrics")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenarioPath = work + "/quiet.json"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        try """
            {"duration": "1s", "fleets": [{"name": "idle", "count": 1, "client_id": "idle", "protocol": "5"}]}
            """.write(toFile: scenarioPath, atomically: true, encoding: .utf8)
        let everywherePort = try LoopbackPort.free()
        let everywhere = try Self.run(["run", scenarioPath, "--out", work + "/a", "--metrics-listen", "0.0.0.0:\(everywherePort)"],
                                      environment: [:])
        #expect(everywhere.status == 0, "\(everywhere.error)")
        #expect(everywhere.output.contains("metrics: http://0.0.0.0:\(everywherePort)/metrics"))
        #expect(everywhere.error.contains(
            "fleetbench: warning: metrics at http://0.0.0.0:\(everywherePort)/metrics are reachable from other machines, "
                + "without authentication (only a loopback address keeps them local)"))

        let localPort = try LoopbackPort.free()
        let local = try Self.run(["run", scenarioPath, "--out", work + "/b", "--metrics-listen", "\(localPort)"], environment: [:])
        #expect(local.status == 0, "\(local.error)")
        #expect(local.output.contains("metrics: http://127.0.0.1:\(localPort)/metrics"))
        #expect(!local.error.contains("reachable from other machines"))
    }
}
