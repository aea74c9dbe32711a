// General (allocation-free once the buffer is warm) encoding of every packet. Each packet computes its
// remaining length first, so the whole packet is reserved once and written through a cursor.

extension MQTTPacket {
    /// Bytes this packet takes on the wire in `version` (CONNECT uses its own version).
    public func encodedSize(version: MQTTProtocolVersion) -> Int {
        let body = remainingLength(version: version)
        return 1 + variableByteIntegerSize(body) + body
    }

    /// Appends the packet to `buffer` in `version` (CONNECT uses its own version). Strings and binary fields
    /// must be at most 65535 bytes; `MQTTTopicName`/`MQTTTopicFilter` check topics up front.
    public func encode(version: MQTTProtocolVersion, into buffer: inout MQTTByteBuffer) {
        let body = remainingLength(version: version)
        buffer.write(size: 1 + variableByteIntegerSize(body) + body) { cursor in
            cursor.byte(firstByte)  // §2.1.1 fixed header: type and flags
            cursor.variableByteInteger(body)  // §2.1.4 remaining length
            writeBody(version: version, to: &cursor)
        }
    }

    /// Convenience for tests and rare packets: the encoded bytes (allocates).
    public func encoded(version: MQTTProtocolVersion) -> [UInt8] {
        var buffer = MQTTByteBuffer(capacity: encodedSize(version: version))
        encode(version: version, into: &buffer)
        return buffer.readableBytes
    }

    /// Fixed header byte 1: type in the high nibble, flags in the low (5.0 §2.1.2-3).
    var firstByte: UInt8 {
        let flags: UInt8
        if case .publish(let publish) = self {
            flags = (publish.dup ? 0b1000 : 0) | publish.qos.rawValue << 1 | (publish.retain ? 1 : 0)
        } else {
            flags = type.requiredFlags ?? 0
        }
        return type.rawValue << 4 | flags
    }

    func remainingLength(version: MQTTProtocolVersion) -> Int {
        let v5 = version.hasProperties
        switch self {
        case .connect(let connect):
            return connect.remainingLength
        case .connAck(let connAck):
            return 2 + (v5 ? connAck.properties.encodedSectionSize : 0)
        case .publish(let publish):
            return 2 + publish.topic.utf8.count + (publish.qos == .atMostOnce ? 0 : 2)
                + (v5 ? publish.properties.encodedSectionSize : 0) + publish.payload.count
        case .pubAck(let ack), .pubRec(let ack), .pubRel(let ack), .pubComp(let ack):
            guard v5 else { return 2 }
            if ack.properties.isEmpty { return ack.reasonCode == .success ? 2 : 3 }
            return 3 + ack.properties.encodedSectionSize
        case .subscribe(let subscribe):
            return 2 + (v5 ? subscribe.properties.encodedSectionSize : 0)
                + subscribe.subscriptions.reduce(0) { $0 + 3 + $1.filter.utf8.count }
        case .subAck(let subAck):
            return 2 + (v5 ? subAck.properties.encodedSectionSize : 0) + subAck.reasonCodes.count
        case .unsubscribe(let unsubscribe):
            return 2 + (v5 ? unsubscribe.properties.encodedSectionSize : 0)
                + unsubscribe.filters.reduce(0) { $0 + 2 + $1.utf8.count }
        case .unsubAck(let unsubAck):
            guard v5 else { return 2 }
            return 2 + unsubAck.properties.encodedSectionSize + unsubAck.reasonCodes.count
        case .pingReq, .pingResp:
            return 0
        case .disconnect(let disconnect):
            return v5 ? Self.reasonAndPropertiesLength(disconnect.reasonCode, disconnect.properties) : 0
        case .auth(let auth):
            return Self.reasonAndPropertiesLength(auth.reasonCode, auth.properties)
        }
    }

    /// DISCONNECT and AUTH may omit a Success reason code with no properties (5.0 §3.14.2.1, §3.15.2.1).
    private static func reasonAndPropertiesLength(_ code: MQTTReasonCode, _ properties: [MQTTProperty]) -> Int {
        if properties.isEmpty { return code == .success ? 0 : 1 }
        return 1 + properties.encodedSectionSize
    }

    func writeBody(version: MQTTProtocolVersion, to cursor: inout MQTTWriteCursor) {
        let v5 = version.hasProperties
        switch self {
        case .connect(let connect):
            connect.writeBody(to: &cursor)
        case .connAck(let connAck):
            cursor.byte(connAck.sessionPresent ? 1 : 0)  // §3.2.2.1 acknowledge flags
            // §3.2.2.3 (3.1.1 return code) / §3.2.2.2 (5.0 reason code)
            cursor.byte(v5 ? connAck.reasonCode.rawValue : MQTTConnectReturnCode(connAck.reasonCode).rawValue)
            if v5 { connAck.properties.writeSection(to: &cursor) }  // §3.2.2.3
        case .publish(let publish):
            cursor.string(publish.topic)  // §3.3.2.1 topic name
            if publish.qos != .atMostOnce { cursor.uint16(publish.packetID) }  // §3.3.2.2
            if v5 { publish.properties.writeSection(to: &cursor) }  // §3.3.2.3
            cursor.bytes(publish.payload)  // §3.3.3 payload
        case .pubAck(let ack), .pubRec(let ack), .pubRel(let ack), .pubComp(let ack):
            cursor.uint16(ack.packetID)  // §3.4.2 packet identifier
            guard v5, !(ack.properties.isEmpty && ack.reasonCode == .success) else { return }
            cursor.byte(ack.reasonCode.rawValue)  // §3.4.2.1
            if !ack.properties.isEmpty { ack.properties.writeSection(to: &cursor) }  // §3.4.2.2
        case .subscribe(let subscribe):
            cursor.uint16(subscribe.packetID)  // §3.8.2
            if v5 { subscribe.properties.writeSection(to: &cursor) }  // §3.8.2.1
            for subscription in subscribe.subscriptions {  // §3.8.3 payload
                cursor.string(subscription.filter)
                let options = subscription.options
                if v5 {
                    cursor.byte(options.retainHandling.rawValue << 4 | (options.retainAsPublished ? 0b1000 : 0)
                        | (options.noLocal ? 0b100 : 0) | options.qos.rawValue)  // §3.8.3.1
                } else {
                    cursor.byte(options.qos.rawValue)  // 3.1.1 §3.8.3 requested QoS
                }
            }
        case .subAck(let subAck):
            cursor.uint16(subAck.packetID)  // §3.9.2
            if v5 { subAck.properties.writeSection(to: &cursor) }  // §3.9.2.1
            for code in subAck.reasonCodes { cursor.byte(code.rawValue) }  // §3.9.3
        case .unsubscribe(let unsubscribe):
            cursor.uint16(unsubscribe.packetID)  // §3.10.2
            if v5 { unsubscribe.properties.writeSection(to: &cursor) }  // §3.10.2.1
            for filter in unsubscribe.filters { cursor.string(filter) }  // §3.10.3
        case .unsubAck(let unsubAck):
            cursor.uint16(unsubAck.packetID)  // §3.11.2
            guard v5 else { return }
            unsubAck.properties.writeSection(to: &cursor)  // §3.11.2.1
            for code in unsubAck.reasonCodes { cursor.byte(code.rawValue) }  // §3.11.3
        case .pingReq, .pingResp:
            return
        case .disconnect(let disconnect):
            guard v5 else { return }
            Self.writeReasonAndProperties(disconnect.reasonCode, disconnect.properties, to: &cursor)
        case .auth(let auth):
            Self.writeReasonAndProperties(auth.reasonCode, auth.properties, to: &cursor)
        }
    }

    private static func writeReasonAndProperties(
        _ code: MQTTReasonCode, _ properties: [MQTTProperty], to cursor: inout MQTTWriteCursor
    ) {
        if properties.isEmpty && code == .success { return }
        cursor.byte(code.rawValue)
        if !properties.isEmpty { properties.writeSection(to: &cursor) }
    }
}

extension MQTTConnect {
    /// CONNECT flags byte (5.0 §3.1.2.3).
    var flags: UInt8 {
        var flags: UInt8 = cleanStart ? 0b10 : 0
        if let will {
            flags |= 0b100 | will.qos.rawValue << 3 | (will.retain ? 0b10_0000 : 0)
        }
        if password != nil { flags |= 0b100_0000 }
        if username != nil { flags |= 0b1000_0000 }
        return flags
    }

    var remainingLength: Int {
        let v5 = version.hasProperties
        var length = 2 + version.protocolName.utf8.count + 1 + 1 + 2  // §3.1.2.1-3, §3.1.2.10
        if v5 { length += properties.encodedSectionSize }
        length += 2 + clientID.utf8.count
        if let will {
            if v5 { length += will.properties.encodedSectionSize }
            length += 2 + will.topic.utf8.count + 2 + will.payload.count
        }
        if let username { length += 2 + username.utf8.count }
        if let password { length += 2 + password.count }
        return length
    }

    func writeBody(to cursor: inout MQTTWriteCursor) {
        cursor.string(version.protocolName)  // §3.1.2.1 protocol name
        cursor.byte(version.rawValue)  // §3.1.2.2 protocol level
        cursor.byte(flags)  // §3.1.2.3 connect flags
        cursor.uint16(keepAlive)  // §3.1.2.10 keep alive
        if version.hasProperties { properties.writeSection(to: &cursor) }  // 5.0 §3.1.2.11
        cursor.string(clientID)  // §3.1.3.1 client identifier
        if let will {
            if version.hasProperties { will.properties.writeSection(to: &cursor) }  // 5.0 §3.1.3.2
            cursor.string(will.topic)  // §3.1.3.3 will topic
            cursor.binary(will.payload)  // §3.1.3.4 will payload
        }
        if let username { cursor.string(username) }  // §3.1.3.5
        if let password { cursor.binary(password) }  // §3.1.3.6
    }
}
