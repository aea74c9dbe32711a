import MQTTCodec

extension MQTTClientSession {
    /// The earliest time `checkDeadlines` has something to do (an acknowledgement deadline or a PINGREQ
    /// due), or nil. The engine keeps one timer per session (or one wheel slot) at this time and asks again
    /// after every call into the session. O(1) except after the earliest in-flight message was acknowledged,
    /// when the in-flight window is scanned once.
    public mutating func nextDeadline() -> UInt64? {
        let timeouts = settings.timeouts
        switch state {
        case .awaitingConnAck:
            return connAckTimeoutReported ? nil : connectSentAt &+ timeouts.connAck
        case .connected:
            var earliest = outbound.isEmpty ? UInt64.max : outbound.earliestDeadline(timeouts)
            if pingOutstanding, !pingTimeoutReported {
                earliest = min(earliest, pingSentAt &+ timeouts.pingResp)
            }
            if let due = keepAliveDue { earliest = min(earliest, due) }
            for request in pendingRequests where !request.timeoutReported {
                earliest = min(earliest, request.sentAt &+ timeouts.timeout(for: request.kind))
            }
            return earliest == .max ? nil : earliest
        case .disconnected, .closing:
            return nil
        }
    }

    /// When the next PINGREQ is due: Keep Alive seconds after the last packet written (§3.1.2.10), unless a
    /// PINGREQ is still awaiting its PINGRESP.
    var keepAliveDue: UInt64? {
        guard keepAliveSeconds > 0, !pingOutstanding || pingTimeoutReported else { return nil }
        return lastPacketSentAt &+ UInt64(keepAliveSeconds) &* 1_000_000_000
    }

    /// Reports every deadline that passed by `now` once (`.ackTimeout`), then follows `onAckTimeout`
    /// (`.close`: one `.closeConnection`); writes PINGREQ when Keep Alive is due.
    public mutating func checkDeadlines<Handler: MQTTSessionEventHandler>(
        now: UInt64, output: inout MQTTByteBuffer, events: inout Handler
    ) {
        let timeouts = settings.timeouts
        var firstMissed: MQTTAckKind?
        switch state {
        case .awaitingConnAck:
            let deadline = connectSentAt &+ timeouts.connAck
            if !connAckTimeoutReported, now >= deadline {
                connAckTimeoutReported = true
                report(MQTTAckTimeout(kind: .connAck, packetID: 0, tag: 0, sentAt: connectSentAt, deadline: deadline),
                       events: &events)
                firstMissed = .connAck
            }
        case .connected:
            if pingOutstanding, !pingTimeoutReported, now >= pingSentAt &+ timeouts.pingResp {
                pingTimeoutReported = true
                report(MQTTAckTimeout(kind: .pingResp, packetID: 0, tag: 0, sentAt: pingSentAt,
                                      deadline: pingSentAt &+ timeouts.pingResp), events: &events)
                firstMissed = firstMissed ?? .pingResp
            }
            for index in pendingRequests.indices where !pendingRequests[index].timeoutReported {
                let request = pendingRequests[index]
                let deadline = request.sentAt &+ timeouts.timeout(for: request.kind)
                if now >= deadline {
                    pendingRequests[index].timeoutReported = true
                    report(MQTTAckTimeout(kind: request.kind, packetID: request.packetID, tag: 0,
                                          sentAt: request.sentAt, deadline: deadline), events: &events)
                    firstMissed = firstMissed ?? request.kind
                }
            }
            if !outbound.isEmpty, now >= outbound.earliestDeadline(timeouts) {
                var index = outbound.head
                while index < outbound.slots.count {
                    let slot = outbound.slots[index]
                    if let kind = slot.awaiting, !slot.timeoutReported {
                        let deadline = slot.stageSentAt &+ timeouts.timeout(for: kind)
                        if now >= deadline {
                            outbound.slots[index].timeoutReported = true
                            report(MQTTAckTimeout(kind: kind, packetID: slot.packetID, tag: slot.tag,
                                                  sentAt: slot.stageSentAt, deadline: deadline), events: &events)
                            firstMissed = firstMissed ?? kind
                        }
                    }
                    index += 1
                }
                outbound.deadlineIsCurrent = false
            }
        case .disconnected, .closing:
            return
        }
        if let kind = firstMissed, settings.onAckTimeout == .close {
            // No DISCONNECT: the peer is presumed unresponsive, and a 5.0 normal DISCONNECT would also make the
            // broker discard the will, which a dead connection must not.
            state = .closing
            events.sessionEvent(.closeConnection(MQTTSessionCloseReason(
                cause: .ackTimeout(kind), reasonCode: .unspecifiedError,
                message: "no \(kind) within \(timeouts.timeout(for: kind) / 1_000_000) ms")))
            return
        }
        if state == .connected, let due = keepAliveDue, now >= due {
            output.writePingReq()
            pingOutstanding = true
            pingTimeoutReported = false
            pingSentAt = now
            lastPacketSentAt = now
            updateStatistics { $0.pingsSent &+= 1 }
        }
    }

    mutating func report<Handler: MQTTSessionEventHandler>(_ timeout: MQTTAckTimeout, events: inout Handler) {
        updateStatistics { $0.countTimeout(timeout.kind) }
        events.sessionEvent(.ackTimeout(timeout))
    }
}
