import Testing
@testable import FleetScenario

@Suite("The plan printed by validate")
struct ScenarioPlanTests {
    @Test("the quickstart plan lists fleets, rates and the timeline")
    func quickstartPlan() throws {
        let plan = ScenarioPlan(try Scenario.load(path: scenariosFolder + "/quickstart.json"))
        #expect(plan.totalClients == 11)
        #expect(plan.totalPublishRate == 20)
        #expect(plan.render() == """
            scenario quickstart: Ten sensors publish QoS 1 JSON readings twice a second to one dashboard for 10 seconds: the smallest useful run.
              brokers: embedded mosquitto on 127.0.0.1
              duration: 10s, 11 clients, 20 msg/s published, 20 msg/s delivered when all are connected
              fleet sensors: 10 clients, MQTT 5
                publish readings -> demo/sensors/{client_id} qos 1: 2/s per client, 20 msg/s total, 1 subscriber each
              fleet dashboard: 1 client, MQTT 5
              at 0s: ramp_up for 1s
              at 1s: steady for 9s
            """)
    }

    @Test("rates of every schedule kind, requests and heartbeats add up")
    func rates() throws {
        let scenario = try decodeFixture("""
            {"duration": "1m", "fleets": [
              {"name": "a", "count": 4, "protocol": "5",
               "publish": [
                 {"topic": "t/1", "schedule": {"type": "burst", "count": 10, "every": "5s"}, "payload": "x"},
                 {"topic": "t/2", "schedule": {"type": "poisson", "per_second": 0.5}, "payload": "x"},
                 {"topic": "t/3", "schedule": {"type": "on_connect"}, "payload": "x"}
               ],
               "requests": [{"target_fleet": "b", "topic": "c/{target_client_id}", "schedule": {"type": "interval", "every": "250ms"},
                             "payload": "go", "response_topic": "r/{client_id}"}],
               "heartbeat": {"topic": "hb/{client_id}", "interval": "30s", "payload": "up"}},
              {"name": "b", "count": 2, "respond": {"topic": "c/{client_id}"}}
            ]}
            """).get()
        let plan = ScenarioPlan(scenario)
        #expect(plan.fleets[0].streams.map(\.totalRate) == [8, 2, 0, 16, 4.0 / 30])
        #expect(ScenarioPlan.rate(4.0 / 30) == "0.133")
        #expect(plan.fleets[0].streams.map(\.fanOut) == [0, 0, 0, nil, 0])
        #expect(plan.totalPublishRate == 26 + 4.0 / 30)
    }

    @Test("fan-out counts the subscribers whose expanded filters match the first publisher's topic")
    func fanOut() throws {
        let plan = ScenarioPlan(try Scenario.load(path: scenariosFolder + "/ota-broadcast.json"))
        #expect(plan.fleets[1].streams[0].fanOut == 5000)
        #expect(plan.totalDeliveryRate == 500)
        let chat = ScenarioPlan(try Scenario.load(path: scenariosFolder + "/chat-room.json"))
        // Everyone in a room, the sender included, receives each message of that room.
        #expect(chat.fleets.map { $0.streams[0].fanOut } == [25, 10])
    }
}
