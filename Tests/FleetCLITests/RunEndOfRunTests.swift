import FleetEngine
import FleetJSON
import FleetMetrics
import FleetScenario
import Testing
@testable import FleetCLI

/// The runner's side of the end of a run and of its verdicts: the scenario's drain, per-fleet deadlines and
/// the saturation check.
@Suite("run: drain, deadlines per fleet, saturation")
struct RunEndOfRunTests {
    static func scenario(_ text: String) throws -> Scenario {
        try Scenario.decode(document: try JSONDocument.parse(text: text, file: "t.json"), defaultName: "t")
    }

    static let twoFleets = """
        {"duration": "5s", "fleets": [
          {"name": "a", "count": 1, "ack_timeouts": {"puback": "2s", "connect": "3s"},
           "publish": [{"topic": "a", "qos": 1, "schedule": {"type": "rate", "per_second": 1}, "payload": {"size": 40}}]},
          {"name": "b", "count": 1, "ack_timeouts": {"puback": "30s", "connack": "5s"}}
        ]}
        """

    @Test("the drain defaults to the longest PUBACK/PUBREC/PUBCOMP timeout of the fleets; `drain` sets it")
    func drainDefault() throws {
        let scenario = try Self.scenario(Self.twoFleets)
        #expect(scenario.drainDuration == .seconds(30))
        let configuration = try ScenarioMapping.engineConfiguration(scenario, brokers: [], seed: 1)
        #expect(configuration.drainTimeout == 30_000_000_000)
        let given = try Self.scenario(#"{"duration": "5s", "drain": "1500ms", "fleets": [{"name": "a", "count": 1}]}"#)
        #expect(given.drainDuration == TimeSpan(nanoseconds: 1_500_000_000))
        let plain = try Self.scenario(#"{"duration": "5s", "fleets": [{"name": "a", "count": 1}]}"#)
        #expect(plain.drainDuration == .seconds(15))
    }

    @Test("the ready timeout is 30 s unless the scenario's `ready_timeout` sets it; it reaches the engine")
    func readyTimeoutSetting() throws {
        let plain = try Self.scenario(#"{"duration": "5s", "fleets": [{"name": "a", "count": 1}]}"#)
        #expect(plain.readyTimeout == nil)
        #expect(try ScenarioMapping.engineConfiguration(plain, brokers: [], seed: 1).readyTimeout == 30_000_000_000)
        let given = try Self.scenario(#"{"duration": "5s", "ready_timeout": "90s", "fleets": [{"name": "a", "count": 1}]}"#)
        #expect(given.readyTimeout == .seconds(90))
        #expect(try ScenarioMapping.engineConfiguration(given, brokers: [], seed: 1).readyTimeout == 90_000_000_000)
        let zero = try Self.scenario(#"{"duration": "5s", "ready_timeout": "0s", "fleets": [{"name": "a", "count": 1}]}"#)
        #expect(try ScenarioMapping.engineConfiguration(zero, brokers: [], seed: 1).readyTimeout == 0)
    }

    @Test("a ready_timeout that is not a duration is refused with file:line:column")
    func readyTimeoutRefused() throws {
        let text = """
            {"duration": "5s",
             "ready_timeout": "soon",
             "fleets": [{"name": "a", "count": 1}]}
            """
        #expect(throws: ScenarioError(diagnostics: [ScenarioDiagnostic(
            location: "t.json:2:19", path: JSONPath.root.appending("ready_timeout"),
            message: "expected a duration such as \"250ms\", \"30s\" or \"5m\", got string \"soon\" (expected a number at character 1, found 's')")])) {
            try Self.scenario(text)
        }
        #expect(throws: ScenarioError.self) {
            try Self.scenario(#"{"duration": "5s", "ready_timeout": 30, "fleets": [{"name": "a", "count": 1}]}"#)
        }
    }

    @Test("ack_timeouts.connect reaches the engine as the fleet's connect timeout")
    func connectTimeoutMapped() throws {
        let configuration = try ScenarioMapping.engineConfiguration(try Self.scenario(Self.twoFleets), brokers: [], seed: 1)
        #expect(configuration.fleets[0].connectTimeout == 3_000_000_000)
        #expect(configuration.fleets[1].connectTimeout == 12_000_000_000)
        #expect(configuration.fleets[1].session.timeouts.connAck == 5_000_000_000)
    }

    @Test("each fleet's deadlines are its own; the top-level ones are the longest of the fleets'")
    func deadlinesPerFleet() throws {
        let scenario = try Self.scenario(Self.twoFleets)
        #expect(RunCommand.ackTimeoutSeconds(scenario.fleets[0])[.puback] == 2)
        #expect(RunCommand.ackTimeoutSeconds(scenario.fleets[1])[.puback] == 30)
        #expect(RunCommand.ackTimeoutSeconds(scenario.fleets[1])[.connack] == 5)
        let top = RunCommand.ackTimeoutSeconds(scenario)
        #expect(top[.puback] == 30)
        #expect(top[.connack] == 12)
    }

    @Test("saturation: the generator's own lag counts, with or without reconnects; schedule lag from waits does not")
    func saturationLag() {
        var result = EngineResult()
        result.counters.reconnects = 3
        // Messages held back by an outage: 2 s of schedule lag, but sent as soon as their client could.
        for _ in 0..<100 { result.latency.record(.scheduleLag, from: .intended, microseconds: 2_000_000) }
        for _ in 0..<100 { result.generatorLag.record(50) }
        #expect(RunCommand.saturation(result: result, publishingCPUSeconds: 0.1, publishSeconds: 10, lanes: 1) == [])
        // The lane itself was 40 ms late on most messages: saturated, reconnects or not.
        for _ in 0..<1_000 { result.generatorLag.record(40_000) }
        #expect(RunCommand.saturation(result: result, publishingCPUSeconds: 0.1, publishSeconds: 10, lanes: 1) == [
            "generator lag p99 40.0 ms is above 10 ms: messages left later than planned although their clients could send",
        ])
    }

    @Test("saturation: CPU is judged over the publishing phase only")
    func saturationCPU() {
        let result = EngineResult()
        // 1.9 s of CPU in 2 s of publishing on one lane: saturated, however long connecting and draining took.
        #expect(RunCommand.saturation(result: result, publishingCPUSeconds: 1.9, publishSeconds: 2, lanes: 1) == [
            "fleetbench used 95 % of 1 cores while publishing (bound 90 %)",
        ])
        #expect(RunCommand.saturation(result: result, publishingCPUSeconds: 1.0, publishSeconds: 2, lanes: 1) == [])
    }
}
