import Testing
@testable import FleetMetrics

@Suite("Client counters")
struct ClientCountersTests {
    @Test("merging lanes sums every counter and every reason")
    func merge() {
        var laneA = ClientCounters()
        laneA.connectsAttempted = 10
        laneA.connectsSucceeded = 8
        laneA.recordConnectFailure(.refused)
        laneA.recordConnectFailure(.connackRefused(code: 0x87))
        laneA.recordDisconnect(.closedByPeer)
        laneA.published[.atLeastOnce] = 100
        laneA.acked[.atLeastOnce] = 99
        laneA.received[.atMostOnce] = 5
        laneA.arrived[.atMostOnce] = 6
        laneA.bytesOut = 1000
        laneA.ackTimeouts[.puback] = 1

        var laneB = ClientCounters()
        laneB.connectsAttempted = 5
        laneB.connectsSucceeded = 4
        laneB.recordConnectFailure(.refused)
        laneB.recordDisconnect(.ackTimeout(.pingresp))
        laneB.recordDisconnect(.closedByPeer, count: 2)
        laneB.reconnects = 3
        laneB.published[.exactlyOnce] = 7
        laneB.arrived[.atLeastOnce] = 2
        laneB.bytesIn = 300
        laneB.bytesOut = 24
        laneB.ackTimeouts[.pingresp] = 2
        laneB.ackTimeouts[.puback] = 4

        var run = ClientCounters()
        run.add(laneA)
        run.add(laneB)
        #expect(run.connectsAttempted == 15)
        #expect(run.connectsSucceeded == 12)
        #expect(run.connectsFailed == 3)
        #expect(run.connectFailures == [.refused: 2, .connackRefused(code: 0x87): 1])
        #expect(run.disconnects == [.closedByPeer: 3, .ackTimeout(.pingresp): 1])
        #expect(run.disconnectsTotal == 4)
        #expect(run.reconnects == 3)
        #expect(run.published == PerQoSCounts(qos0: 0, qos1: 100, qos2: 7))
        #expect(run.acked == PerQoSCounts(qos0: 0, qos1: 99, qos2: 0))
        #expect(run.received.total == 5)
        #expect(run.arrived == PerQoSCounts(qos0: 6, qos1: 2, qos2: 0))
        #expect(run.bytesIn == 300)
        #expect(run.bytesOut == 1024)
        #expect(run.ackTimeouts.puback == 5)
        #expect(run.ackTimeouts.pingresp == 2)
        #expect(run.ackTimeouts.total == 7)
    }

    @Test(
        "reasons have stable report names",
        arguments: [
            (ConnectFailureReason.refused, "refused"),
            (.timeout, "timeout"),
            (.socketError(errno: 99), "socket_error_99"),
            (.connackRefused(code: 0x87), "connack_refused_0x87"),
            (.connackRefused(code: 5), "connack_refused_0x05"),
            (.connackTimeout, "connack_timeout"),
        ])
    func connectFailureNames(reason: ConnectFailureReason, name: String) {
        #expect(reason.reportName == name)
    }

    @Test("disconnect reasons and latency kinds have stable report names")
    func otherNames() {
        #expect(DisconnectReason.serverDisconnect(reasonCode: 0x8e).reportName == "server_disconnect_0x8e")
        #expect(DisconnectReason.ackTimeout(.pingresp).reportName == "pingresp_timeout")
        #expect(LatencyKind.allCases.map(\.reportName) == [
            "tcp_connect", "tls_handshake", "ws_upgrade", "connect", "subscribe", "unsubscribe", "puback", "pubrec",
            "pubcomp", "end_to_end", "request_response", "schedule_lag", "pingresp", "puback_broker", "end_to_end_broker",
        ])
        #expect(DisconnectReason.networkDrop.reportName == "network_drop")
        #expect(DisconnectReason.networkOutage.reportName == "network_outage")
        #expect(LatencyKind(reportName: "end_to_end") == .endToEnd)
        #expect(LatencyKind(reportName: "nope") == nil)
    }
}

@Suite("Client counters: every counter reaches the sum")
struct ClientCountersEveryFieldTests {
    /// A value with every counter of the fleet-level kinds set, each to its own number.
    static func sample(_ base: UInt64) -> ClientCounters {
        var counters = ClientCounters()
        counters.foreignMessages = base + 1
        counters.retainedOnSubscribe = base + 2
        counters.droppedSlots = base + 3
        counters.abandonedPublishes = base + 4
        counters.unsentAtEnd = base + 5
        counters.unackedAtEnd = PerQoSCounts(qos1: base + 6, qos2: base + 7)
        counters.requestsSent = base + 8
        counters.responsesReceived = base + 9
        counters.responsesLate = base + 10
        counters.requestsAnswered = base + 11
        counters.requestsUnanswered = base + 12
        counters.churnSkipped = base + 13
        counters.offline = OfflineCounts(buffered: base + 14, flushed: base + 15, overflowed: base + 16)
        counters.lowWatermarkFallbacks = base + 17
        counters.lowWatermarkRearms = base + 18
        counters.neverConnected = base + 19
        counters.subscriptionsDowngraded = base + 20
        counters.subscriptionsRefused = base + 21
        counters.qos2AckedAsQoS1 = base + 22
        counters.recordTransportError("TLS handshake timeout", count: base + 23)
        counters.receiveCoalescingPauses = base + 24
        counters.receiveBatchingPauses = base + 25
        return counters
    }

    @Test("add sums the fleet-level counters field by field")
    func addsEveryField() {
        var run = ClientCounters()
        run.add(Self.sample(0))
        run.add(Self.sample(100))
        #expect(run.foreignMessages == 102)
        #expect(run.retainedOnSubscribe == 104)
        #expect(run.droppedSlots == 106)
        #expect(run.abandonedPublishes == 108)
        #expect(run.unsentAtEnd == 110)
        #expect(run.unackedAtEnd == PerQoSCounts(qos0: 0, qos1: 112, qos2: 114))
        #expect(run.requestsSent == 116)
        #expect(run.responsesReceived == 118)
        #expect(run.responsesLate == 120)
        #expect(run.requestsAnswered == 122)
        #expect(run.requestsUnanswered == 124)
        #expect(run.churnSkipped == 126)
        #expect(run.offline == OfflineCounts(buffered: 128, flushed: 130, overflowed: 132))
        #expect(run.lowWatermarkFallbacks == 134)
        #expect(run.lowWatermarkRearms == 136)
        #expect(run.neverConnected == 138)
        #expect(run.subscriptionsDowngraded == 140)
        #expect(run.subscriptionsRefused == 142)
        #expect(run.qos2AckedAsQoS1 == 144)
        #expect(run.transportErrors == ["TLS handshake timeout": 146])
        #expect(run.transportErrorsTotal == 146)
        #expect(run.receiveCoalescingPauses == 148)
        #expect(run.receiveBatchingPauses == 150)
        // Sent 116, 118 replies (more than sent: the sum never goes below 0), 120 of them late.
        #expect(run.requestsTimedOut == 120)
        // Adding a value to itself doubles it: no field is left out of add (a forgotten one would stay put).
        var twice = Self.sample(0)
        twice.add(Self.sample(0))
        var expected = ClientCounters()
        expected.add(Self.sample(0))
        expected.add(Self.sample(0))
        #expect(twice == expected)
        #expect(twice != Self.sample(0))
    }

    @Test("requests timed out are those without a reply plus late replies")
    func requestsTimedOut() {
        var counters = ClientCounters()
        counters.requestsSent = 50
        counters.responsesReceived = 47
        counters.responsesLate = 2
        #expect(counters.requestsTimedOut == 5)
    }

    @Test("transport error texts are bounded: the 33rd distinct text and later ones count as 'other transport error'")
    func transportErrorsBounded() {
        var lane = ClientCounters()
        for index in 0..<40 { lane.recordTransportError("error \(index)") }
        lane.recordTransportError("error 3", count: 2)
        #expect(lane.transportErrors.count == 33)
        #expect(lane.transportErrors["error 3"] == 3)
        #expect(lane.transportErrors["error 31"] == 1)
        #expect(lane.transportErrors["error 32"] == nil)
        #expect(lane.transportErrors[ClientCounters.otherTransportError] == 8)
        #expect(lane.transportErrorsTotal == 42)
        // Merged: the bound holds for the sum too, and nothing is lost from the total.
        var other = ClientCounters()
        other.recordTransportError("another text", count: 5)
        other.recordTransportError("error 0", count: 1)
        var run = lane
        run.add(other)
        #expect(run.transportErrors.count == 33)
        #expect(run.transportErrors["error 0"] == 2)
        #expect(run.transportErrors[ClientCounters.otherTransportError] == 13)
        #expect(run.transportErrorsTotal == 48)
    }
}

@Suite("Per-QoS container")
struct PerQoSTests {
    @Test("subscripts by QoS and by level reach the same field; add and total sum by level")
    func subscriptsAndSums() {
        var counts = PerQoSCounts()
        counts[.atLeastOnce] &+= 3
        counts[2] &+= 5
        counts.qos0 = 1
        #expect(counts == PerQoSCounts(qos0: 1, qos1: 3, qos2: 5))
        #expect(counts[1] == 3 && counts[.exactlyOnce] == 5)
        #expect(counts.levels == [1, 3, 5])
        #expect(counts.total == 9)
        counts.add(PerQoSCounts(qos0: 10, qos1: 20, qos2: 30))
        #expect(counts == PerQoSCounts(qos0: 11, qos1: 23, qos2: 35))

        var delivery = PerQoS(repeating: DeliveryCounts())
        delivery[.atLeastOnce].add(DeliveryCounts(expected: 4, received: 4, unique: 4, duplicated: 0, reordered: 0))
        delivery[2].add(DeliveryCounts(expected: 2, received: 1, unique: 1, duplicated: 0, reordered: 0))
        let total = delivery.sum(from: DeliveryCounts())
        #expect(total.expected == 6)
        #expect(total.received == 5)
        #expect(total.lost == 1)
        #expect(delivery.qos0 == DeliveryCounts())
    }
}
