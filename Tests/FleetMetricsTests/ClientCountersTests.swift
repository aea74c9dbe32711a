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
