import FleetMetrics
import MQTTCodec
import MQTTSession

/// A request a responder received, waiting for the session call to return. Ranges index `Lane.replyArena`.
struct PendingReply {
    var responseTopic: Range<Int>?
    var correlationData: Range<Int>?
    var payload: Range<Int>
}

/// The responder side of request/response.
extension Lane {
    /// Keeps what a reply needs from a request (its payload, 5.0 Response Topic and Correlation Data).
    func queueReply(payload: UnsafeRawBufferPointer, properties: UnsafeRawBufferPointer) {
        var reply = PendingReply(payload: 0..<0)
        if properties.count > 0 {
            let found = Self.findRequestProperties(properties)
            if let topic = found.responseTopic {
                let start = replyArena.count
                replyArena.append(contentsOf: UnsafeRawBufferPointer(rebasing: properties[topic]))
                reply.responseTopic = start..<replyArena.count
            }
            if let correlation = found.correlationData {
                let start = replyArena.count
                replyArena.append(contentsOf: UnsafeRawBufferPointer(rebasing: properties[correlation]))
                reply.correlationData = start..<replyArena.count
            }
        }
        let start = replyArena.count
        replyArena.append(contentsOf: payload)
        reply.payload = start..<replyArena.count
        pendingReplies.append(reply)
    }

    /// Publishes the replies queued during the last session call of `client`.
    func sendReplies(_ client: Int) {
        let fleet = clients[client].fleet
        let runtime = fleets[fleet]
        let qos = runtime.configuration.responder?.qos ?? .atMostOnce
        for reply in pendingReplies {
            var topic: MQTTTopicName?
            if let range = reply.responseTopic {
                topic = try? MQTTTopicName(String(decoding: replyArena[range], as: UTF8.self))
            } else if !runtime.replyTopics.isEmpty {
                topic = runtime.replyTopics[clients[client].indexInFleet]
            }
            guard let topic else {
                metrics.fleets[fleet].counters.requestsUnanswered += 1
                continue
            }
            // 5.0 §4.10.2: the response carries the request's Correlation Data unchanged.
            let properties = reply.correlationData.map {
                MQTTEncodedProperties([.correlationData(Array(replyArena[$0]))])
            } ?? .empty
            let result = replyArena.withUnsafeBytes { arena in
                clients[client].session.publish(
                    topic: topic, qos: qos, properties: properties,
                    payload: UnsafeRawBufferPointer(rebasing: arena[reply.payload]), intendedAt: now, tag: 0,
                    now: now, into: &scratch)
            }
            if case .sent = result {
                metrics.fleets[fleet].counters.requestsAnswered += 1
                metrics.fleets[fleet].counters.published[qos] += 1
            } else {
                metrics.fleets[fleet].counters.requestsUnanswered += 1
            }
        }
        pendingReplies.removeAll(keepingCapacity: true)
        replyArena.removeAll(keepingCapacity: true)
        stage(client)
    }

    /// The connection closed during the call: the queued requests stay unanswered.
    func dropReplies(_ client: Int) {
        metrics.fleets[clients[client].fleet].counters.requestsUnanswered += UInt64(pendingReplies.count)
        pendingReplies.removeAll(keepingCapacity: true)
        replyArena.removeAll(keepingCapacity: true)
    }

    /// Ranges of the Response Topic (0x08) and Correlation Data (0x09) values in a PUBLISH property list
    /// (5.0 §3.3.2.3), bounds-checked: a list that does not parse yields what was found before the problem.
    static func findRequestProperties(_ bytes: UnsafeRawBufferPointer)
        -> (responseTopic: Range<Int>?, correlationData: Range<Int>?)
    {
        var responseTopic: Range<Int>?
        var correlationData: Range<Int>?
        var offset = 0
        func lengthPrefixed(at start: Int) -> Range<Int>? {
            guard start + 2 <= bytes.count else { return nil }
            let length = Int(bytes[start]) << 8 | Int(bytes[start + 1])
            guard start + 2 + length <= bytes.count else { return nil }
            return (start + 2)..<(start + 2 + length)
        }
        while offset < bytes.count {
            // Property identifiers are Variable Byte Integers; every defined one fits in a single byte.
            guard bytes[offset] < 0x80, let identifier = MQTTPropertyIdentifier(rawValue: bytes[offset]) else { break }
            offset += 1
            switch identifier.valueType {
            case .byte: offset += 1
            case .twoByteInteger: offset += 2
            case .fourByteInteger: offset += 4
            case .variableByteInteger:
                var used = 0
                while offset < bytes.count, used < 4, bytes[offset] & 0x80 != 0 {
                    offset += 1
                    used += 1
                }
                offset += 1
            case .utf8String, .binaryData:
                guard let value = lengthPrefixed(at: offset) else { return (responseTopic, correlationData) }
                if identifier == .responseTopic { responseTopic = value }
                if identifier == .correlationData { correlationData = value }
                offset = value.upperBound
            case .utf8StringPair:
                guard let name = lengthPrefixed(at: offset), let value = lengthPrefixed(at: name.upperBound) else {
                    return (responseTopic, correlationData)
                }
                offset = value.upperBound
            }
        }
        return (responseTopic, correlationData)
    }
}
