import MQTTCodec

extension MQTTClientSession {
    /// Feeds every whole packet buffered in `decoder` to the session (the decoder's version and maximum
    /// packet size are set from the settings). A decode error closes the connection (`.closeConnection`,
    /// cause `.malformedPacket`). Stops early once the session is closing.
    public mutating func receive<Handler: MQTTSessionEventHandler>(
        from decoder: inout MQTTDecoder, now: UInt64, output: inout MQTTByteBuffer, events: inout Handler
    ) {
        decoder.version = settings.version
        decoder.maximumPacketSize = settings.decoderMaximumPacketSize
        while state == .awaitingConnAck || state == .connected {
            let view: MQTTPacketView?
            do {
                view = try decoder.nextView()
            } catch {
                receiveFailed(error, now: now, output: &output, events: &events)
                return
            }
            guard let view else { return }
            // Views carry absolute offsets into the decoder's storage: hand over all of it.
            decoder.buffer.withUnsafeBytes(in: 0..<decoder.buffer.capacity) { bytes in
                receive(view, in: bytes, now: now, output: &output, events: &events)
            }
        }
    }

    /// The engine's own decoding failed: closes with the error's reason code and message (5.0: DISCONNECT
    /// with that code is written first).
    public mutating func receiveFailed<Handler: MQTTSessionEventHandler>(
        _ error: MQTTDecodeError, now: UInt64, output: inout MQTTByteBuffer, events: inout Handler
    ) {
        close(.malformedPacket, error.reasonCode, "malformed packet from the server: \(error.message)",
              now: now, output: &output, events: &events)
    }

    /// Handles one packet. `bytes` are the bytes the view's absolute ranges point into (e.g. the engine's
    /// receive buffer from offset 0). PUBLISH and its acknowledgements, PINGRESP: no decoding, no allocation;
    /// CONNACK, SUBACK, UNSUBACK, DISCONNECT are decoded fully.
    public mutating func receive<Handler: MQTTSessionEventHandler>(
        _ view: MQTTPacketView, in bytes: UnsafeRawBufferPointer, now: UInt64, output: inout MQTTByteBuffer,
        events: inout Handler
    ) {
        switch state {
        case .disconnected, .closing: return
        case .awaitingConnAck:
            // A server sends nothing before CONNACK but AUTH, which this client never asks for (5.0 §3.1.4).
            guard view.type == .connAck else {
                violation(.protocolError, "\(view.type) received before CONNACK", now: now, output: &output, events: &events)
                return
            }
        case .connected: break
        }
        switch view.type {
        case .publish: receivePublish(view, in: bytes, now: now, output: &output, events: &events)
        case .pubAck: receiveCompletion(view, awaiting: .pubAck, now: now, output: &output, events: &events)
        case .pubComp: receiveCompletion(view, awaiting: .pubComp, now: now, output: &output, events: &events)
        case .pubRec: receivePubRec(view, now: now, output: &output, events: &events)
        case .pubRel: receivePubRel(view, now: now, output: &output)
        case .pingResp:
            if pingOutstanding {
                pingOutstanding = false
                events.sessionEvent(.pingResponse(sentAt: pingSentAt, receivedAt: now))
            } else {
                updateStatistics { $0.unexpectedAcknowledgements &+= 1 }
                events.sessionEvent(.unexpectedAcknowledgement(.pingResp, packetID: 0))
            }
        case .connAck, .subAck, .unsubAck, .disconnect:
            let packet: MQTTPacket
            do {
                packet = try MQTTDecoder.decode(view, in: bytes, version: settings.version)
            } catch {
                receiveFailed(error, now: now, output: &output, events: &events)
                return
            }
            switch packet {
            case .connAck(let connAck): receiveConnAck(connAck, now: now, output: &output, events: &events)
            case .subAck(let subAck):
                receiveRequestAck(.subAck, packetID: subAck.packetID, results: subAck.reasonCodes,
                                  now: now, output: &output, events: &events)
            case .unsubAck(let unsubAck):
                receiveRequestAck(.unsubAck, packetID: unsubAck.packetID, results: unsubAck.reasonCodes,
                                  now: now, output: &output, events: &events)
            case .disconnect(let disconnect):
                receiveDisconnect(disconnect, now: now, output: &output, events: &events)
            default: break
            }
        case .auth:
            violation(.protocolError, "AUTH received, but this client did not start enhanced authentication",
                      now: now, output: &output, events: &events)
        case .connect, .subscribe, .unsubscribe, .pingReq:
            violation(.protocolError, "\(view.type) is not a packet a server sends", now: now, output: &output,
                      events: &events)
        }
    }

    // MARK: CONNACK

    mutating func receiveConnAck<Handler: MQTTSessionEventHandler>(
        _ connAck: MQTTConnAck, now: UInt64, output: inout MQTTByteBuffer, events: inout Handler
    ) {
        guard state == .awaitingConnAck else {
            violation(.protocolError, "CONNACK received twice", now: now, output: &output, events: &events)
            return
        }
        guard connAck.reasonCode.isSuccess else {
            state = .closing
            events.sessionEvent(.connectionRefused(connAck.reasonCode, reasonString: reasonString(connAck.properties)))
            return
        }
        if connAck.sessionPresent, settings.cleanStart {
            // 3.1.1 §3.2.2.2, 5.0 §3.2.2.1.1: a clean start never finds a session.
            violation(.protocolError, "CONNACK has Session Present set although the client asked for a clean start",
                      now: now, output: &output, events: &events)
            return
        }
        brokerReceiveMaximum = 65535
        brokerMaximumPacketSize = 0
        brokerTopicAliasMaximum = 0
        brokerMaximumQoS = .exactlyOnce
        for property in connAck.properties {  // 5.0 §3.2.2.3
            switch property {
            case .receiveMaximum(let value): brokerReceiveMaximum = value
            case .maximumPacketSize(let value): brokerMaximumPacketSize = value
            case .topicAliasMaximum(let value): brokerTopicAliasMaximum = value
            case .maximumQoS(let value): brokerMaximumQoS = value == 0 ? .atMostOnce : .atLeastOnce
            case .serverKeepAlive(let value): keepAliveSeconds = value
            case .assignedClientIdentifier(let value): clientID = value
            default: break
            }
        }
        state = .connected
        events.sessionEvent(.connected(sessionPresent: connAck.sessionPresent))
        if connAck.sessionPresent {
            retransmit(now: now, output: &output, events: &events)
        } else {
            // The broker has no session: our in-flight messages and its QoS 2 state are gone (§4.1).
            dropInFlight(events: &events)
            inboundAwaitingRelease.removeAll()
            if settings.resubscribesWhenSessionLost { resubscribe(now: now, output: &output) }
        }
    }

    /// §4.4: PUBLISH again with DUP=1 for messages awaiting PUBACK/PUBREC, PUBREL for those awaiting
    /// PUBCOMP, in their original order. Deadlines restart now; `sentAt` keeps the first send.
    mutating func retransmit<Handler: MQTTSessionEventHandler>(
        now: UInt64, output: inout MQTTByteBuffer, events: inout Handler
    ) {
        var index = outbound.head
        while index < outbound.slots.count {
            let slot = outbound.slots[index]
            guard let awaiting = slot.awaiting else { index += 1; continue }
            if awaiting == .pubComp {
                output.writePublishAck(.pubRel, packetID: slot.packetID, version: settings.version)
                updateStatistics { $0.retransmittedReleases &+= 1 }
            } else if slot.storedCount > 0 {
                let range = slot.storedOffset..<(slot.storedOffset + slot.storedCount)
                outbound.storedBytes.withUnsafeBytes { stored in
                    let source = UnsafeRawBufferPointer(rebasing: stored[range])
                    _ = output.writeWithUnsafeMutableBytes(minimumWritableBytes: source.count) { target in
                        target.copyMemory(from: source)
                        target[0] |= 0b1000  // §3.3.1.1 DUP
                        return source.count
                    }
                }
                updateStatistics { $0.retransmittedPublishes &+= 1 }
            } else {
                // No copy was kept (keepsPublishesForRetransmission is off): give it up.
                dropSlot(at: index, awaiting: awaiting, events: &events)
                index += 1
                continue
            }
            outbound.slots[index].stageSentAt = now
            outbound.slots[index].timeoutReported = false
            index += 1
        }
        outbound.deadlineIsCurrent = false
        lastPacketSentAt = now
    }

    mutating func dropInFlight<Handler: MQTTSessionEventHandler>(events: inout Handler) {
        var index = outbound.head
        while index < outbound.slots.count {
            if let awaiting = outbound.slots[index].awaiting { dropSlot(at: index, awaiting: awaiting, events: &events) }
            index += 1
        }
    }

    mutating func dropSlot<Handler: MQTTSessionEventHandler>(at index: Int, awaiting: MQTTAckKind, events: inout Handler) {
        let slot = outbound.slots[index]
        let deadline = slot.stageSentAt &+ settings.timeouts.timeout(for: awaiting)
        outbound.free(at: index, deadline: deadline)
        updateStatistics { $0.droppedPublishes &+= 1 }
        events.sessionEvent(.publishDropped(MQTTDroppedPublish(
            packetID: slot.packetID, qos: slot.qos, awaiting: awaiting, intendedAt: slot.intendedAt, tag: slot.tag)))
    }

    mutating func resubscribe(now: UInt64, output: inout MQTTByteBuffer) {
        for index in subscriptionGroups.indices {
            let group = subscriptionGroups[index]
            let packetID = writeSubscribe(group.subscriptions, properties: group.properties, now: now, into: &output)
            subscriptionGroups[index].packetID = packetID
        }
    }

    // MARK: SUBACK, UNSUBACK, DISCONNECT

    mutating func receiveRequestAck<Handler: MQTTSessionEventHandler>(
        _ kind: MQTTAckKind, packetID: UInt16, results: [MQTTReasonCode], now: UInt64,
        output: inout MQTTByteBuffer, events: inout Handler
    ) {
        guard let index = pendingRequests.firstIndex(where: { $0.packetID == packetID && $0.kind == kind }) else {
            updateStatistics { $0.unexpectedAcknowledgements &+= 1 }
            events.sessionEvent(.unexpectedAcknowledgement(kind == .subAck ? .subAck : .unsubAck, packetID: packetID))
            return
        }
        let filterCount = pendingRequests[index].filterCount
        var results = results
        if kind == .unsubAck, !settings.version.hasProperties { results = Array(repeating: .success, count: filterCount) }
        guard results.count == filterCount else {
            // 5.0 §3.9.3 / §3.11.3: one reason code per topic filter, in order.
            violation(.protocolError, "\(kind) carries \(results.count) reason code\(results.count == 1 ? "" : "s") "
                        + "for \(filterCount) topic filter\(filterCount == 1 ? "" : "s")",
                      now: now, output: &output, events: &events)
            return
        }
        pendingRequests.remove(at: index)
        // The last one answered: its storage goes (a vehicle subscribes once, then keeps it for nothing).
        if pendingRequests.isEmpty { pendingRequests = [] }
        if kind == .subAck {
            // Refused filters are not re-subscribed later.
            if let group = subscriptionGroups.firstIndex(where: { $0.packetID == packetID }) {
                for (subscription, result) in zip(subscriptionGroups[group].subscriptions, results)
                    where !result.isSuccess || result.rawValue < subscription.options.qos.rawValue
                {
                    events.sessionEvent(.subscriptionNotGranted(
                        filter: subscription.filter, requested: subscription.options.qos, result: result))
                }
                var kept: [MQTTSubscription] = []
                for (subscription, result) in zip(subscriptionGroups[group].subscriptions, results) where result.isSuccess {
                    kept.append(subscription)
                }
                if kept.isEmpty || !keepsSubscriptions {
                    subscriptionGroups.remove(at: group)
                    // The last one gone: its storage goes too (a vehicle subscribes once).
                    if subscriptionGroups.isEmpty { subscriptionGroups = [] }
                } else if kept.count != subscriptionGroups[group].subscriptions.count {
                    subscriptionGroups[group].subscriptions = kept
                }
            }
            events.sessionEvent(.subscribed(packetID: packetID, results: results))
        } else {
            events.sessionEvent(.unsubscribed(packetID: packetID, results: results))
        }
    }

    mutating func receiveDisconnect<Handler: MQTTSessionEventHandler>(
        _ disconnect: MQTTDisconnect, now: UInt64, output: inout MQTTByteBuffer, events: inout Handler
    ) {
        guard settings.version.hasProperties else {
            // Before 5.0 only the client sends DISCONNECT (3.1.1 §3.14).
            violation(.protocolError, "DISCONNECT received from the server, which \(settings.version) does not allow",
                      now: now, output: &output, events: &events)
            return
        }
        state = .closing
        events.sessionEvent(.serverDisconnected(disconnect.reasonCode, reasonString: reasonString(disconnect.properties)))
    }

    func reasonString(_ properties: [MQTTProperty]) -> String? {
        for property in properties { if case .reasonString(let text) = property { return text } }
        return nil
    }

    // MARK: Publish acknowledgements

    /// PUBACK (QoS 1 done) or PUBCOMP (QoS 2 done).
    mutating func receiveCompletion<Handler: MQTTSessionEventHandler>(
        _ view: MQTTPacketView, awaiting kind: MQTTAckKind, now: UInt64, output: inout MQTTByteBuffer,
        events: inout Handler
    ) {
        guard let index = outbound.index(of: view.packetID), outbound.slots[index].awaiting == kind else {
            if kind == .pubAck, let index = outbound.index(of: view.packetID), outbound.slots[index].awaiting == .pubRec {
                // The broker ran a QoS 2 message as QoS 1: no PUBREC or PUBCOMP will follow.
                let slot = outbound.slots[index]
                outbound.free(at: index, deadline: slot.stageSentAt &+ settings.timeouts.pubRec)
                events.sessionEvent(.publishAcknowledgedAtLowerQoS(MQTTPublishAcknowledgement(
                    kind: .pubAck, packetID: slot.packetID, intendedAt: slot.intendedAt, sentAt: slot.sentAt,
                    receivedAt: now, tag: slot.tag, reasonCode: view.reasonCode)))
                return
            }
            updateStatistics { $0.unexpectedAcknowledgements &+= 1 }
            events.sessionEvent(.unexpectedAcknowledgement(view.type, packetID: view.packetID))
            return
        }
        let slot = outbound.slots[index]
        outbound.free(at: index, deadline: slot.stageSentAt &+ settings.timeouts.timeout(for: kind))
        if kind == .pubAck { updateStatistics { $0.acknowledgedQoS1 &+= 1 } } else { updateStatistics { $0.acknowledgedQoS2 &+= 1 } }
        events.sessionEvent(.publishAcknowledged(MQTTPublishAcknowledgement(
            kind: kind, packetID: slot.packetID, intendedAt: slot.intendedAt, sentAt: slot.sentAt, receivedAt: now,
            tag: slot.tag, reasonCode: view.reasonCode)))
    }

    /// PUBREC: write PUBREL and wait for PUBCOMP (§4.3.3); a failure code (5.0, >= 0x80) ends the flow.
    mutating func receivePubRec<Handler: MQTTSessionEventHandler>(
        _ view: MQTTPacketView, now: UInt64, output: inout MQTTByteBuffer, events: inout Handler
    ) {
        guard let index = outbound.index(of: view.packetID) else {
            updateStatistics { $0.unexpectedAcknowledgements &+= 1 }
            events.sessionEvent(.unexpectedAcknowledgement(.pubRec, packetID: view.packetID))
            return
        }
        let slot = outbound.slots[index]
        switch slot.awaiting {
        case .pubRec:
            let oldDeadline = slot.stageSentAt &+ settings.timeouts.pubRec
            if view.reasonCode.isSuccess {
                output.writePublishAck(.pubRel, packetID: slot.packetID, version: settings.version)
                lastPacketSentAt = now
                outbound.advance(at: index, to: .pubComp, now: now, oldDeadline: oldDeadline,
                                 newDeadline: now &+ settings.timeouts.pubComp)
            } else {
                outbound.free(at: index, deadline: oldDeadline)
                updateStatistics { $0.acknowledgedQoS2 &+= 1 }
            }
            events.sessionEvent(.publishAcknowledged(MQTTPublishAcknowledgement(
                kind: .pubRec, packetID: slot.packetID, intendedAt: slot.intendedAt, sentAt: slot.sentAt,
                receivedAt: now, tag: slot.tag, reasonCode: view.reasonCode)))
        case .pubComp:
            // Our PUBREL may have crossed a repeated PUBREC: answer it again (§4.3.3 allows resending).
            output.writePublishAck(.pubRel, packetID: slot.packetID, version: settings.version)
            lastPacketSentAt = now
        default:
            updateStatistics { $0.unexpectedAcknowledgements &+= 1 }
            events.sessionEvent(.unexpectedAcknowledgement(.pubRec, packetID: view.packetID))
        }
    }

    /// PUBREL for an inbound QoS 2 message: forget its identifier and write PUBCOMP. An unknown identifier
    /// still gets PUBCOMP (5.0: Packet Identifier not found), since our earlier PUBCOMP may have been lost.
    mutating func receivePubRel(_ view: MQTTPacketView, now: UInt64, output: inout MQTTByteBuffer) {
        var reason = MQTTReasonCode.success
        if let index = inboundAwaitingRelease.firstIndex(of: view.packetID) {
            inboundAwaitingRelease.swapAt(index, inboundAwaitingRelease.count - 1)
            inboundAwaitingRelease.removeLast()
        } else {
            reason = .packetIdentifierNotFound
        }
        output.writePublishAck(.pubComp, packetID: view.packetID, reasonCode: reason, version: settings.version)
        lastPacketSentAt = now
    }

    // MARK: Inbound PUBLISH

    mutating func receivePublish<Handler: MQTTSessionEventHandler>(
        _ view: MQTTPacketView, in bytes: UnsafeRawBufferPointer, now: UInt64, output: inout MQTTByteBuffer,
        events: inout Handler
    ) {
        guard view.packetRange.upperBound <= bytes.count else {
            receiveFailed(.truncated(.publish, field: "packet"), now: now, output: &output, events: &events)
            return
        }
        let qos = view.qos
        if view.dup { updateStatistics { $0.duplicatesReceived &+= 1 } }

        var alias: UInt16 = 0
        if view.hasProperty(.topicAlias) {  // 5.0 §3.3.2.3.4
            alias = topicAliasValue(in: bytes, view.propertiesRange)
            guard alias != 0, alias <= settings.topicAliasMaximum else {
                violation(.topicAliasInvalid,
                          "PUBLISH Topic Alias \(alias) is outside 1...\(settings.topicAliasMaximum), the client's Topic Alias Maximum",
                          now: now, output: &output, events: &events)
                return
            }
            let slot = Int(alias) - 1
            if !view.topicRange.isEmpty {
                while inboundAliases.count <= slot { inboundAliases.append([]) }
                inboundAliases[slot] = Array(UnsafeRawBufferPointer(rebasing: bytes[view.topicRange]))
            } else if slot >= inboundAliases.count || inboundAliases[slot].isEmpty {
                violation(.protocolError, "PUBLISH uses Topic Alias \(alias), which this connection has not set",
                          now: now, output: &output, events: &events)
                return
            }
        }

        if qos == .exactlyOnce {
            // §4.3.3: until PUBREL, a PUBLISH with the same identifier is the same message: PUBREC again,
            // deliver nothing.
            if inboundAwaitingRelease.contains(view.packetID) {
                updateStatistics { $0.duplicatesSuppressed &+= 1 }
                output.writePublishAck(.pubRec, packetID: view.packetID, version: settings.version)
                lastPacketSentAt = now
                return
            }
            if settings.version.hasProperties, inboundAwaitingRelease.count >= Int(settings.receiveMaximum) {
                violation(.receiveMaximumExceeded,
                          "the server sent more than \(settings.receiveMaximum) unacknowledged QoS 2 PUBLISH",
                          now: now, output: &output, events: &events)
                return
            }
            inboundAwaitingRelease.append(view.packetID)
        }

        updateStatistics { $0.countReceived(qos) }
        let message = MQTTReceivedMessage(
            topicRange: view.topicRange, payloadRange: view.payloadRange, qos: qos, retain: view.retain,
            dup: view.dup, packetID: view.packetID, topicAlias: alias)
        let payload = UnsafeRawBufferPointer(rebasing: bytes[view.payloadRange])
        if view.topicRange.isEmpty, alias != 0 {
            inboundAliases[Int(alias) - 1].withUnsafeBytes { topic in
                events.messageReceived(message, topic: topic, payload: payload)
            }
        } else {
            events.messageReceived(message, topic: UnsafeRawBufferPointer(rebasing: bytes[view.topicRange]),
                                   payload: payload)
        }
        switch qos {
        case .atMostOnce: return
        case .atLeastOnce: output.writePublishAck(.pubAck, packetID: view.packetID, version: settings.version)
        case .exactlyOnce: output.writePublishAck(.pubRec, packetID: view.packetID, version: settings.version)
        }
        lastPacketSentAt = now
    }

    /// The Topic Alias value in a PUBLISH property list the codec already validated; 0 if absent.
    func topicAliasValue(in bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt16 {
        var index = range.lowerBound
        let end = min(range.upperBound, bytes.count)
        func twoBytes(_ at: Int) -> Int { at + 1 < end ? Int(bytes[at]) << 8 | Int(bytes[at + 1]) : 0 }
        while index < end {
            guard let identifier = MQTTPropertyIdentifier(rawValue: bytes[index]) else { return 0 }
            index += 1
            switch identifier.valueType {
            case .byte: index += 1
            case .twoByteInteger:
                if identifier == .topicAlias { return UInt16(truncatingIfNeeded: twoBytes(index)) }
                index += 2
            case .fourByteInteger: index += 4
            case .variableByteInteger:
                while index < end, bytes[index] & 0x80 != 0 { index += 1 }
                index += 1
            case .utf8String, .binaryData: index += 2 + twoBytes(index)
            case .utf8StringPair:
                index += 2 + twoBytes(index)
                index += 2 + twoBytes(index)
            }
        }
        return 0
    }

    // MARK: Closing

    /// A broker packet breaks the protocol: DISCONNECT with `code` (5.0), then `.closeConnection`.
    mutating func violation<Handler: MQTTSessionEventHandler>(
        _ code: MQTTReasonCode, _ message: String, now: UInt64, output: inout MQTTByteBuffer, events: inout Handler
    ) {
        close(.protocolViolation, code, message, now: now, output: &output, events: &events)
    }

    mutating func close<Handler: MQTTSessionEventHandler>(
        _ cause: MQTTCloseCause, _ code: MQTTReasonCode, _ message: String, now: UInt64,
        output: inout MQTTByteBuffer, events: inout Handler
    ) {
        guard state != .closing, state != .disconnected else { return }
        if settings.version.hasProperties {
            // 5.0 §4.13.1: tell the server why before closing.
            MQTTPacket.disconnect(MQTTDisconnect(reasonCode: code)).encode(version: settings.version, into: &output)
            lastPacketSentAt = now
        }
        state = .closing
        events.sessionEvent(.closeConnection(MQTTSessionCloseReason(cause: cause, reasonCode: code, message: message)))
    }
}
