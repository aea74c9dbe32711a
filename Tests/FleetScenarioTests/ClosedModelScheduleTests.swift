import Testing
@testable import FleetScenario

@Suite("scenario: the closed-model schedule {\"type\": \"max\"}")
struct ClosedModelScheduleTests {
    static func fixture(_ schedule: String, limit: String = "") -> String {
        """
        {"duration": "5s", "fleets": [{"name": "a", "count": 2,
          "publish": [{"name": "flood", "topic": "t", "qos": 1, "schedule": \(schedule)\(limit), "payload": {"size": 8}}]}]}
        """
    }

    @Test("max decodes with an optional limit; its plan says closed model and has no rate")
    func decodes() throws {
        let scenario = try decodeFixture(Self.fixture(#"{"type": "max"}"#, limit: #", "limit": 1000"#)).get()
        let stream = scenario.fleets[0].publishes[0]
        #expect(stream.schedule == .max)
        #expect(stream.schedule.isClosedModel)
        #expect(stream.limit == 1000)
        #expect(stream.schedule.messagesPerSecond == 0)
        let plan = ScenarioPlan(scenario)
        #expect(plan.fleets[0].streams[0].closedModel)
        #expect(plan.render().contains(
            "    publish flood -> t qos 1: max (closed model: as fast as the window or socket allows), 0 subscribers each"))
        #expect(plan.render().contains(
            "  duration: 5s, 2 clients, 0 msg/s published plus closed-model streams, 0 msg/s delivered when all are connected\n"))
    }

    @Test("a rate or timing key beside max is an error at its line and column", arguments: [
        (#"{"type": "max", "per_second": 100}"#,
         "t.json:2:85: fleets[0].publish[0].schedule.per_second: unknown key 'per_second'; expected one of: type"),
        (#"{"type": "maxx"}"#,
         #"t.json:2:78: fleets[0].publish[0].schedule.type: expected one of "interval", "rate", "poisson", "burst", "on_connect", "max", got string "maxx"; did you mean 'max'?"#),
    ])
    func rejects(schedule: String, message: String) {
        #expect(errorText(Self.fixture(schedule)) == message)
    }
}
