import Foundation
import Testing
@testable import FleetCLI

/// A client that would receive one stream through a plain and a shared subscription, or through two groups, is
/// refused by `validate` and by `run` before anything connects: exit 65, the engine's message, located at the
/// fleet's subscriptions.
@Suite("validate and run refuse ambiguous delivery routes")
struct AmbiguousRouteValidateTests {
    static func scenario(subscriptions: String) -> String {
        """
        {"duration": "2s",
         "fleets": [
           {"name": "cars", "count": 1,
            "publish": [{"topic": "car/{i}/data", "qos": 1, "schedule": {"type": "rate", "per_second": 1}, "payload": {"size": 40}}]},
           {"name": "workers", "count": 2, "protocol": "5",
            "subscriptions": \(subscriptions)}
         ]}
        """
    }

    @Test("a plain and a shared filter of one client matching the same stream",
          arguments: [
            (#"[{"filter": "$share/g/car/+/data", "qos": 1}, {"filter": "car/#", "qos": 1}]"#,
             "client 'workers-0' of fleet 'workers' would receive topic 'car/0/data' through both its filter 'car/#' "
                + "and its shared subscription '$share/g/car/+/data': the copies cannot be told apart, so its deliveries "
                + "would be mis-counted; make each published topic match one subscription per client (narrow the plain "
                + "filter, or subscribe the group from other clients)"),
            (#"[{"filter": "$share/g/car/+/data", "qos": 1}, {"filter": "$share/h/car/0/#", "qos": 1}]"#,
             "client 'workers-0' of fleet 'workers' would receive topic 'car/0/data' through both its shared "
                + "subscription '$share/g/car/+/data' and its shared subscription '$share/h/car/0/#': the copies cannot "
                + "be told apart, so its deliveries would be mis-counted; make each published topic match one "
                + "subscription per client (narrow the plain filter, or subscribe the group from other clients)"),
          ])
    func refused(subscriptions: String, message: String) throws {
        let directory = RunEndToEndTests.temporaryDirectory("ambiguous")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/ambiguous.json"
        try Self.scenario(subscriptions: subscriptions).write(toFile: file, atomically: true, encoding: .utf8)
        let expected = "\(file):6:22: fleets[1].subscriptions: \(message)\n"
        let validate = try RunEndToEndTests.run(["validate", file])
        #expect(validate.status == 65)
        #expect(validate.error == expected + "1 of 1 scenario file invalid\n", "\(validate.error)")
        #expect(!validate.output.contains("valid"))
        let run = try RunEndToEndTests.run(["run", file, "--out", directory + "/out", "--quiet"])
        #expect(run.status == 65)
        #expect(run.error == expected, "\(run.error)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/out"))
        let capacity = FleetCommandLineTests.run(["capacity", file, "--vary", "fleets.workers.count=2..4",
                                                  "--until", "delivery.qos1.lost == 0", "--out", directory + "/cap"])
        #expect(capacity.code == .invalidScenario)
        #expect(capacity.error == expected, "\(capacity.error)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/cap"))
    }

    @Test("disjoint plain and shared filters of one client are valid")
    func disjointAccepted() throws {
        let directory = RunEndToEndTests.temporaryDirectory("disjoint")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/disjoint.json"
        try Self.scenario(subscriptions: #"[{"filter": "$share/g/car/+/data", "qos": 1}, {"filter": "ops/#", "qos": 1}]"#)
            .write(toFile: file, atomically: true, encoding: .utf8)
        let validate = try RunEndToEndTests.run(["validate", file])
        #expect(validate.status == 0, "\(validate.error)")
        #expect(validate.output.hasPrefix("\(file): valid\n"))
    }
}
