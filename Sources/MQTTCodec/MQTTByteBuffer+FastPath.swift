// The engine's per-message encoders: PUBLISH from borrowed parts with the payload written in place, and the
// tiny fixed acknowledgements. No allocation once the buffer has the capacity.

extension MQTTByteBuffer {
    /// Bytes of a PUBLISH built from parts (fixed header included).
    @inlinable public static func publishSize(
        topicByteCount: Int, qos: MQTTQoS, version: MQTTProtocolVersion, propertiesByteCount: Int, payloadCount: Int
    ) -> Int {
        let body = publishRemainingLength(topicByteCount: topicByteCount, qos: qos, version: version,
                                          propertiesByteCount: propertiesByteCount, payloadCount: payloadCount)
        return 1 + variableByteIntegerSize(body) + body
    }

    @inlinable static func publishRemainingLength(
        topicByteCount: Int, qos: MQTTQoS, version: MQTTProtocolVersion, propertiesByteCount: Int, payloadCount: Int
    ) -> Int {
        2 + topicByteCount + (qos == .atMostOnce ? 0 : 2)
            + (version.hasProperties ? variableByteIntegerSize(propertiesByteCount) + propertiesByteCount : 0)
            + payloadCount
    }

    /// Appends a PUBLISH whose payload `writePayload` writes directly into the buffer (exactly `payloadCount`
    /// bytes: e.g. a per-message header with sequence number and timestamp, then filler). `properties` is only
    /// written in 5.0; `packetID` only for QoS 1 and 2.
    @inlinable public mutating func writePublish(
        topic: MQTTTopicName, packetID: UInt16, qos: MQTTQoS, retain: Bool = false, dup: Bool = false,
        version: MQTTProtocolVersion, properties: MQTTEncodedProperties = .empty,
        payloadCount: Int, payload writePayload: (UnsafeMutableRawBufferPointer) -> Void
    ) {
        topic.utf8.withUnsafeBytes { topicBytes in
            properties.bytes.withUnsafeBytes { propertyBytes in
                writePublish(topic: topicBytes, packetID: packetID, qos: qos, retain: retain, dup: dup,
                             version: version, properties: propertyBytes, payloadCount: payloadCount,
                             payload: writePayload)
            }
        }
    }

    /// Appends a PUBLISH with a payload copied from `payload`.
    @inlinable public mutating func writePublish(
        topic: MQTTTopicName, packetID: UInt16, qos: MQTTQoS, retain: Bool = false, dup: Bool = false,
        version: MQTTProtocolVersion, properties: MQTTEncodedProperties = .empty, payload: UnsafeRawBufferPointer
    ) {
        writePublish(topic: topic, packetID: packetID, qos: qos, retain: retain, dup: dup, version: version,
                     properties: properties, payloadCount: payload.count) { target in
            target.copyMemory(from: payload)
        }
    }

    /// Lowest-level PUBLISH writer: topic bytes must already be valid (non-empty UTF-8, no wildcard, no U+0000,
    /// at most 65535 bytes); `properties` is an encoded property list without its length.
    @inlinable public mutating func writePublish(
        topic: UnsafeRawBufferPointer, packetID: UInt16, qos: MQTTQoS, retain: Bool, dup: Bool,
        version: MQTTProtocolVersion, properties: UnsafeRawBufferPointer,
        payloadCount: Int, payload writePayload: (UnsafeMutableRawBufferPointer) -> Void
    ) {
        let body = Self.publishRemainingLength(
            topicByteCount: topic.count, qos: qos, version: version, propertiesByteCount: properties.count,
            payloadCount: payloadCount)
        write(size: 1 + variableByteIntegerSize(body) + body) { cursor in
            // §3.3.1 fixed header: type 3, DUP, QoS, RETAIN
            cursor.byte(0x30 | (dup ? 0b1000 : 0) | qos.rawValue << 1 | (retain ? 1 : 0))
            cursor.variableByteInteger(body)  // §2.1.4 remaining length
            cursor.uint16(UInt16(truncatingIfNeeded: topic.count))  // §3.3.2.1 topic name
            cursor.bytes(topic)
            if qos != .atMostOnce { cursor.uint16(packetID) }  // §3.3.2.2 packet identifier
            if version.hasProperties {  // 5.0 §3.3.2.3 properties
                cursor.variableByteInteger(properties.count)
                cursor.bytes(properties)
            }
            writePayload(UnsafeMutableRawBufferPointer(start: cursor.pointer, count: payloadCount))  // §3.3.3
            cursor.pointer += payloadCount
        }
    }

    /// Appends PUBACK, PUBREC, PUBREL or PUBCOMP (any other `type` is written as PUBACK). In 5.0 a non-success
    /// reason code adds one byte; Success is omitted (5.0 §3.4.2.1).
    @inlinable public mutating func writePublishAck(
        _ type: MQTTPacketType, packetID: UInt16, reasonCode: MQTTReasonCode = .success,
        version: MQTTProtocolVersion
    ) {
        let firstByte: UInt8
        switch type {
        case .pubRec: firstByte = 0x50
        case .pubRel: firstByte = 0x62  // §3.6.1 flags 0b0010
        case .pubComp: firstByte = 0x70
        default: firstByte = 0x40
        }
        let withReason = version.hasProperties && reasonCode != .success
        write(size: withReason ? 5 : 4) { cursor in
            cursor.byte(firstByte)
            cursor.byte(withReason ? 3 : 2)
            cursor.uint16(packetID)
            if withReason { cursor.byte(reasonCode.rawValue) }
        }
    }

    /// Appends PINGREQ (§3.12): 0xC0 0x00.
    @inlinable public mutating func writePingReq() {
        write(size: 2) { cursor in
            cursor.byte(0xC0)
            cursor.byte(0)
        }
    }

    /// Appends PINGRESP (§3.13): 0xD0 0x00.
    @inlinable public mutating func writePingResp() {
        write(size: 2) { cursor in
            cursor.byte(0xD0)
            cursor.byte(0)
        }
    }
}
