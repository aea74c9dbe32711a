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

    @Test("a session that keeps no subscriptions forgets a SUBSCRIBE at its SUBACK (naming the refused filter first) and re-subscribes nothing")
    func subscriptionsNotKept() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1), keepsSubscriptions: false)
        harness.connected(connAck: connAckV3)
        let filters = [MQTTSubscription(filter: "a", qos: .atLeastOnce), MQTTSubscription(filter: "b", qos: .atLeastOnce)]
        #expect(harness.session.subscribe(filters, now: 1, into: &harness.output) == .sent(packetID: 1))
        #expect(harness.sent() == [0x82, 0x0A, 0x00, 0x01, 0x00, 0x01, 0x61, 0x01, 0x00, 0x01, 0x62, 0x01])
        #expect(harness.session.subscriptions.map(\.filter) == ["a", "b"])  // until the SUBACK
        _ = harness.takeEvents()
        harness.feed([0x90, 0x04, 0x00, 0x01, 0x80, 0x01], at: 2)  // SUBACK 1: "a" refused, "b" granted QoS 1
        #expect(harness.takeEvents() == [
            .subscriptionNotGranted(filter: "a", requested: .atLeastOnce, result: .unspecifiedError),
            .subscribed(packetID: 1, results: [.unspecifiedError, .grantedQoS1]),
        ])
        #expect(harness.session.subscriptions.isEmpty)
        #expect(harness.session.subscriptionGroups.capacity == 0)
        harness.lose(at: 3)
        harness.connect(at: 4)
        _ = harness.sent()  // CONNECT
        harness.feed([0x20, 0x02, 0x00, 0x00], at: 5)  // CONNACK, no session
        #expect(harness.sent() == [])  // its owner subscribes again, not the session

        // A SUBSCRIBE the connection lost before its SUBACK is forgotten too.
        #expect(harness.session.subscribe(filters, now: 6, into: &harness.output) == .sent(packetID: 2))
        harness.lose(at: 7)
        #expect(harness.session.subscriptionGroups.capacity == 0)

        // One that keeps them sends what was granted again.
        var keeping = Harness(MQTTSessionSettings(version: .v3_1_1))
        keeping.connected(connAck: connAckV3)
        _ = keeping.session.subscribe(filters, now: 1, into: &keeping.output)
        keeping.feed([0x90, 0x04, 0x00, 0x01, 0x80, 0x01], at: 2)
        keeping.lose(at: 3)
        keeping.connect(at: 4)
        _ = keeping.sent()
        keeping.feed([0x20, 0x02, 0x00, 0x00], at: 5)
        #expect(keeping.sent() == [0x82, 0x06, 0x00, 0x02, 0x00, 0x01, 0x62, 0x01])
    }

    @Test("in-flight slot arrays are lent by a pool: taken by the first message in flight, given back by the last ack")
    func windowStorageLent() {
        let pool = MQTTWindowStoragePool(maximumFree: 1)
        var first = Harness(MQTTSessionSettings(version: .v3_1_1), windowStorage: pool)
        var second = Harness(MQTTSessionSettings(version: .v3_1_1), windowStorage: pool)
        first.connected(connAck: connAckV3)
        second.connected(connAck: connAckV3)
        #expect(first.publish("t", [7], qos: .atLeastOnce, at: 1) == .sent(packetID: 1))
        #expect(first.sent() == [0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x01, 0x07])
        #expect(first.session.outbound.slots.count == 1)
        let firstStorage = first.session.outbound.slots.withUnsafeBufferPointer { $0.baseAddress }
        #expect(second.publish("u", [8], qos: .atLeastOnce, at: 1) == .sent(packetID: 1))
        #expect(pool.freeCount == 0)  // both made their own: nothing was idle
        first.feed([0x40, 0x02, 0x00, 0x01], at: 2)  // PUBACK 1: the first window is empty, its array goes back
        #expect(first.session.inFlightCount == 0)
        #expect(first.session.outbound.slots.capacity == 0)
        #expect(pool.freeCount == 1)
        second.feed([0x40, 0x02, 0x00, 0x01], at: 2)  // the pool is full (1): this array is freed
        #expect(second.session.outbound.slots.capacity == 0)
        #expect(pool.freeCount == 1)
        // The next message in flight takes the idle array (the first window's): the window works as before.
        _ = second.sent()
        #expect(second.publish("u", [9], qos: .atLeastOnce, at: 3) == .sent(packetID: 2))
        #expect(second.sent() == [0x32, 0x06, 0x00, 0x01, 0x75, 0x00, 0x02, 0x09])
        #expect(pool.freeCount == 0)
        #expect(second.session.outbound.slots.count == 1)
        #expect(second.session.outbound.slots.withUnsafeBufferPointer { $0.baseAddress } == firstStorage)
        second.feed([0x40, 0x02, 0x00, 0x02], at: 4)
        #expect(second.session.inFlightCount == 0 && pool.freeCount == 1)

        // Without a pool the window keeps its array between messages.
        var own = Harness(MQTTSessionSettings(version: .v3_1_1))
        own.connected(connAck: connAckV3)
        _ = own.publish("t", [7], qos: .atLeastOnce, at: 1)
        own.feed([0x40, 0x02, 0x00, 0x01], at: 2)
        #expect(own.session.inFlightCount == 0)
        #expect(own.session.outbound.slots.capacity >= 1)
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
        // 192 before the small fields (state, the CONNACK timeout flag) were declared beside the others; the
        // `keepsSubscriptions` flag fits beside them.
        #expect(MemoryLayout<MQTTClientSession>.size == 176)
        #expect(MemoryLayout<MQTTSessionStatistics>.size == 88)
    }
}
