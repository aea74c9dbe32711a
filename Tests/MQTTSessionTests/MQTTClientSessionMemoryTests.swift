import MQTTCodec
import Testing
@testable import MQTTSession

/// What an idle vehicle's session keeps between messages (docs/scaling.md, "Per GiB").
@Suite("MQTTClientSession: storage an idle session keeps")
struct MQTTClientSessionMemoryTests {
    @Test("a clean-start session keeps no retransmission copy: the QoS 1 PUBLISH is written, acknowledged, and nothing was stored")
    func cleanStartKeepsNoCopy() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, cleanStart: true))
        harness.connected(connAck: connAckV3)
        #expect(harness.publish("t", [7], qos: .atLeastOnce, at: 1) == .sent(packetID: 1))
        #expect(harness.sent() == [0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x01, 0x07])
        #expect(harness.session.outbound.slots.count == 1)
        #expect(harness.session.outbound.slots[0].storedCount == 0)
        #expect(harness.session.outbound.storedBytes.capacity == 0)
        harness.feed([0x40, 0x02, 0x00, 0x01], at: 2)  // PUBACK 1
        #expect(harness.session.inFlightCount == 0)
        #expect(harness.session.outbound.storedBytes.capacity == 0)
    }

    @Test("a session that can be resumed keeps the PUBLISH and sends it again with DUP after a reconnect")
    func persistentSessionKeepsCopy() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, cleanStart: false))
        harness.connected(connAck: connAckV3)
        #expect(harness.publish("t", [7], qos: .atLeastOnce, at: 1) == .sent(packetID: 1))
        #expect(harness.sent() == [0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x01, 0x07])
        #expect(harness.session.outbound.storedBytes == [0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x01, 0x07])
        harness.lose(at: 2)
        harness.connect(at: 3)
        _ = harness.sent()  // CONNECT
        harness.feed([0x20, 0x02, 0x01, 0x00], at: 4)  // CONNACK, session present
        #expect(harness.sent() == [0x3A, 0x06, 0x00, 0x01, 0x74, 0x00, 0x01, 0x07])  // the same PUBLISH with DUP
    }

    @Test("the SUBACK that answers the last pending request frees the request table")
    func subAckFreesRequests() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        #expect(harness.session.subscribe([MQTTSubscription(filter: "a", qos: .atLeastOnce)], now: 1,
                                          into: &harness.output) == .sent(packetID: 1))
        #expect(harness.session.subscribe([MQTTSubscription(filter: "b", qos: .atLeastOnce)], now: 1,
                                          into: &harness.output) == .sent(packetID: 2))
        harness.feed([0x90, 0x03, 0x00, 0x01, 0x01], at: 2)  // SUBACK 1, granted QoS 1
        #expect(harness.session.pendingRequests.map(\.packetID) == [2])
        harness.feed([0x90, 0x03, 0x00, 0x02, 0x01], at: 3)
        #expect(harness.session.pendingRequests.capacity == 0)
        #expect(harness.session.subscriptions.map(\.filter) == ["a", "b"])
    }

    @Test("a topic name keeps only its bytes; its name is made from them")
    func topicNameIsBytes() throws {
        let topic = try MQTTTopicName("vehicles/veh-000001/telemetry")
        #expect(topic.utf8 == Array("vehicles/veh-000001/telemetry".utf8))
        #expect(topic.name == "vehicles/veh-000001/telemetry")
        #expect(MemoryLayout<MQTTTopicName>.size == 8)
        #expect(try MQTTTopicName("é/ü") == MQTTTopicName("é/ü"))
        #expect(try MQTTTopicName("é/ü").name == "é/ü")
    }

    @Test("a session that keeps no statistics holds no storage for them and counts nothing; one that keeps them counts")
    func statisticsOnlyWhenKept() {
        var quiet = Harness(MQTTSessionSettings(version: .v3_1_1), keepsStatistics: false)
        var counting = Harness(MQTTSessionSettings(version: .v3_1_1))
        for index in 0..<2 {
            var harness = index == 0 ? quiet : counting
            harness.connected(connAck: connAckV3)
            #expect(harness.publish("t", [7], qos: .atLeastOnce, at: 1) == .sent(packetID: 1))
            harness.feed([0x40, 0x02, 0x00, 0x01], at: 2)  // PUBACK 1
            if index == 0 { quiet = harness } else { counting = harness }
        }
        #expect(quiet.session.statisticsStorage.capacity == 0)
        #expect(quiet.session.statistics.published(.atLeastOnce) == 0)
        #expect(quiet.session.statistics.acknowledgedQoS1 == 0)
        #expect(counting.session.statisticsStorage.count == 1)
        #expect(counting.session.statistics.published(.atLeastOnce) == 1)
        #expect(counting.session.statistics.acknowledgedQoS1 == 1)
    }

    @Test("the session's size inline: what every idle vehicle carries before any storage")
    func sessionSize() {
        // 192 before the small fields (state, the CONNACK timeout flag) were declared beside the others.
        #expect(MemoryLayout<MQTTClientSession>.size == 176)
        #expect(MemoryLayout<MQTTSessionStatistics>.size == 88)
    }
}
