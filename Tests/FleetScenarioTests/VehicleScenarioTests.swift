import FleetJSON
import Testing
@testable import FleetScenario

/// The fleet keys of vehicle fleets (issue 15): `vehicle`, a publish stream's `offline`, `identities`, `tls.mint`.
@Suite("scenario: vehicle, offline, identities, tls.mint")
struct VehicleScenarioTests {
    @Test("a vehicle fleet decodes to exact values: generated roads, settings, offline buffer, minting")
    func decodes() throws {
        let scenario = try decodeFixture("""
            {"duration": "1s", "fleets": [{"name": "cars", "count": 3, "client_id": "car-{i}",
              "vehicle": {"route": {"generated": {"center": [48.137, 11.575], "radius_km": 1.5, "tunnels": "10%", "seed": 4}},
                          "top_speed_kmh": 120, "speed_factor": [0.9, 1.0],
                          "trips": {"drive": ["5m", "10m"], "park": "2m", "junction_stops": 0.5},
                          "battery": {"capacity_kwh": 75, "initial_soc": [0.5, 0.6]},
                          "gnss": {"noise_m": 0, "period": "2s"}},
              "tls": {"mint": {"ca_cert": "/x/ca.pem", "ca_key": "/x/ca.key"}},
              "publish": [{"topic": "t/{client_id}", "schedule": {"type": "rate", "per_second": 1},
                           "offline": {"buffer": 50, "overflow": "drop_newest"},
                           "payload": {"json": {"lat": "{vehicle.lat}", "on": "{vehicle.ignition}", "n": "at {vehicle.soc}"}}}]}]}
            """).get()
        let fleet = scenario.fleets[0]
        let vehicle = try #require(fleet.vehicle)
        #expect(vehicle.route == .generated(GeneratedRoads(centerLatitude: 48.137, centerLongitude: 11.575, radius: 1_500,
                                                          tunnelFraction: 0.1, seed: 4)))
        var expected = VehicleConfiguration()
        expected.topSpeedKmh = 120
        expected.speedFactor = 0.9...1.0
        expected.driveDuration = 300...600
        expected.parkDuration = 120...120
        expected.junctionStopProbability = 0.5
        expected.batteryCapacityKWh = 75
        expected.initialSoc = 0.5...0.6
        expected.gnssNoise = 0
        expected.gnssNoisePeriod = 2
        #expect(vehicle.configuration == expected)
        #expect((vehicle.network?.tunnelLength ?? 0) > 0)
        #expect(fleet.mint == CertificateMinting(caCertificate: "/x/ca.pem", caKey: "/x/ca.key"))
        #expect(fleet.publishes[0].offline == OfflineBuffering(buffer: 50, overflow: .dropNewest))
        // A lone vehicle field is a bare JSON value (a number, or true/false); inside text it is text.
        guard case .template(let template) = fleet.publishes[0].payload else { Issue.record("not a template"); return }
        #expect(template.segments == [
            .literal(Array(#"{"lat":"#.utf8)), .generator(.vehicle("lat"), inJSONString: false),
            .literal(Array(#","on":"#.utf8)), .generator(.vehicle("ignition"), inJSONString: false),
            .literal(Array(#","n":"at "#.utf8)), .generator(.vehicle("soc"), inJSONString: true),
            .literal(Array(#""}"#.utf8)),
        ])
    }

    static let brokenFixture = """
        {
          "duration": "1s",
          "fleets": [
            {"name": "a", "count": 2, "client_id": "a-{i}",
             "vehicle": {"route": {"generated": {"center": [48.1, 11.5], "radius_km": 0.1}}, "top_speed_kmh": 900},
             "publish": [{"topic": "t", "schedule": {"type": "rate", "per_second": 1},
                          "offline": {"buffer": 0, "overflow": "drop_middle"},
                          "payload": {"json": {"s": "{vehicle.speed}"}}}]},
            {"name": "b", "count": 1,
             "vehicle": {"route": {"generated": {"center": [48.1, 11.5], "radius_km": 2}}, "battery": {"reserve_soc": 0.001}},
             "publish": [{"topic": "v", "schedule": {"type": "rate", "per_second": 1}, "behind_schedule": "drop",
                          "offline": {"buffer": 10}, "payload": "{vehicle.lat}"}]},
            {"name": "c", "count": 1,
             "publish": [{"topic": "w", "schedule": {"type": "rate", "per_second": 1}, "payload": "{vehicle.soc}"}],
             "heartbeat": {"topic": "h", "interval": "1s", "payload": "{vehicle.lat}"}}
          ]
        }
        """

    @Test("every problem of vehicle keys at once, each at its file:line:column")
    func problems() {
        #expect(errorText(Self.brokenFixture) == """
            t.json:5:79: fleets[0].vehicle.route.generated.radius_km: must be at least one block (250.0 m), got 100.0 m
            t.json:5:103: fleets[0].vehicle.top_speed_kmh: must be greater than 0 and at most 500 km/h, got 900.0
            t.json:7:41: fleets[0].publish[0].offline.buffer: expected a number of messages from 1 to 10000000, got integer 0
            t.json:7:56: fleets[0].publish[0].offline.overflow: expected one of "drop_oldest", "drop_newest", got string "drop_middle"
            t.json:8:46: fleets[0].publish[0].payload.json.s: unknown generator '{vehicle.speed}'; expected one of: {client_id}, {i}, {fleet}, {seq}, {ts_ms}, {rand:LOW..HIGH}, {choice:a|b|c}, {uuid}, {vehicle.FIELD} (FIELD: lat, lon, heading, speed_kmh, odometer_km, soc, ignition, charging, in_tunnel)
            t.json:10:111: fleets[1].vehicle.battery.reserve_soc: must be at least 0.003 so the last 915 m of a trip fit in the reserve (60.0 kWh at 0.17 kWh/km), got 0.001
            t.json:12:19: fleets[1].publish[0].offline: an offline buffer sends its backlog after the reconnect; it cannot go with behind_schedule "drop"
            t.json:14:91: fleets[2].publish[0].payload: {vehicle.*} needs a "vehicle" key on the fleet (where its vehicles drive)
            t.json:15:63: fleets[2].heartbeat.payload: {vehicle.*} is for publish payloads only
            """)
    }
}
