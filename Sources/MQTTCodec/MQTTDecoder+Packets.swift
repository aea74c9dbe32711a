// Full (allocating) decoding of a framed packet into `MQTTPacket`, for tests, the fake broker and rare packets.

extension MQTTDecoder {
    /// Decodes the packet `view` describes from `bytes` (the same bytes the view was made from).
    public static func decode(
        _ view: MQTTPacketView, in bytes: UnsafeRawBufferPointer, version: MQTTProtocolVersion
    ) throws(MQTTDecodeError) -> MQTTPacket {
        guard view.packetRange.upperBound <= bytes.count, view.packetRange.lowerBound >= 0 else {
            throw .truncated(view.type, field: "packet")
        }
        let v5 = version.hasProperties
        var cursor = MQTTReadCursor(bytes: bytes, range: view.bodyRange, type: view.type)
        switch view.type {
        case .connect:
            return .connect(try decodeConnect(&cursor))
        case .connAck:
            let flags = try cursor.byte("acknowledge flags")  // §3.2.2.1
            if flags & 0xFE != 0 { throw .invalidConnAckFlags(flags) }
            let code = try cursor.byte(v5 ? "reason code" : "return code")  // §3.2.2.2 / 3.1.1 §3.2.2.3
            let reason: MQTTReasonCode
            if v5 {
                guard let decoded = MQTTReasonCode(rawValue: code), decoded.isAllowed(in: .connAck) else {
                    throw .invalidReasonCode(code, .connAck)
                }
                reason = decoded
            } else {
                guard let decoded = MQTTConnectReturnCode(rawValue: code) else { throw .invalidReasonCode(code, .connAck) }
                reason = decoded.reasonCode
            }
            if flags != 0, reason != .success { throw .invalidConnAckFlags(flags) }  // §3.2.2.1.1
            var properties: [MQTTProperty] = []
            if v5 { _ = try cursor.properties(.connAck, collect: true, into: &properties) }
            try cursor.expectEnd()
            return .connAck(MQTTConnAck(sessionPresent: flags == 1, reasonCode: reason, properties: properties))
        case .publish:
            var properties: [MQTTProperty] = []
            if v5 {
                var propertyCursor = MQTTReadCursor(bytes: bytes, range: view.propertiesRange, type: .publish)
                while !propertyCursor.isAtEnd {
                    let raw = try propertyCursor.variableByteInteger("property identifier")
                    guard let identifier = MQTTPropertyIdentifier(rawValue: UInt8(truncatingIfNeeded: raw)) else {
                        throw .unknownProperty(UInt8(truncatingIfNeeded: raw), context: .publish)
                    }
                    try propertyCursor.propertyValue(identifier, collect: true, into: &properties)
                }
            }
            return .publish(MQTTPublish(
                topic: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[view.topicRange]), as: UTF8.self),
                payload: Array(bytes[view.payloadRange]), qos: view.qos, retain: view.retain, dup: view.dup,
                packetID: view.packetID, properties: properties))
        case .pubAck, .pubRec, .pubRel, .pubComp:
            var properties: [MQTTProperty] = []
            if v5, !view.propertiesRange.isEmpty {
                var propertyCursor = MQTTReadCursor(bytes: bytes, range: view.propertiesRange, type: view.type)
                while !propertyCursor.isAtEnd {
                    let raw = try propertyCursor.variableByteInteger("property identifier")
                    guard let identifier = MQTTPropertyIdentifier(rawValue: UInt8(truncatingIfNeeded: raw)) else {
                        throw .unknownProperty(UInt8(truncatingIfNeeded: raw), context: .pubAck)
                    }
                    try propertyCursor.propertyValue(identifier, collect: true, into: &properties)
                }
            }
            let ack = MQTTPubAck(packetID: view.packetID, reasonCode: view.reasonCode, properties: properties)
            switch view.type {
            case .pubAck: return .pubAck(ack)
            case .pubRec: return .pubRec(ack)
            case .pubRel: return .pubRel(ack)
            default: return .pubComp(ack)
            }
        case .subscribe:
            let packetID = try packetIdentifier(&cursor)  // §3.8.2
            var properties: [MQTTProperty] = []
            if v5 { _ = try cursor.properties(.subscribe, collect: true, into: &properties) }  // §3.8.2.1
            var subscriptions: [MQTTSubscription] = []
            while !cursor.isAtEnd {  // §3.8.3 payload
                let filter = try cursor.string("topic filter")
                let options = try cursor.byte("subscription options")  // §3.8.3.1
                let reservedMask: UInt8 = v5 ? 0b1100_0000 : 0b1111_1100
                if options & reservedMask != 0 || (options >> 4) & 0b11 == 3 {
                    throw .invalidSubscriptionOptions(options)
                }
                guard let qos = MQTTQoS(rawValue: options & 0b11) else { throw .invalidQoS(.subscribe) }
                subscriptions.append(MQTTSubscription(filter: filter, options: MQTTSubscriptionOptions(
                    qos: qos, noLocal: options & 0b100 != 0, retainAsPublished: options & 0b1000 != 0,
                    retainHandling: MQTTRetainHandling(rawValue: (options >> 4) & 0b11) ?? .sendOnSubscribe)))
            }
            if subscriptions.isEmpty { throw .noTopicFilters(.subscribe) }
            return .subscribe(MQTTSubscribe(packetID: packetID, subscriptions: subscriptions, properties: properties))
        case .subAck:
            let packetID = try packetIdentifier(&cursor)  // §3.9.2
            var properties: [MQTTProperty] = []
            if v5 { _ = try cursor.properties(.subAck, collect: true, into: &properties) }  // §3.9.2.1
            var codes: [MQTTReasonCode] = []
            while !cursor.isAtEnd {  // §3.9.3
                let code = try cursor.byte("reason code")
                guard let decoded = MQTTReasonCode(rawValue: code), decoded.isAllowed(in: .subAck),
                    v5 || code <= 2 || code == 0x80
                else { throw .invalidReasonCode(code, .subAck) }
                codes.append(decoded)
            }
            return .subAck(MQTTSubAck(packetID: packetID, reasonCodes: codes, properties: properties))
        case .unsubscribe:
            let packetID = try packetIdentifier(&cursor)  // §3.10.2
            var properties: [MQTTProperty] = []
            if v5 { _ = try cursor.properties(.unsubscribe, collect: true, into: &properties) }  // §3.10.2.1
            var filters: [String] = []
            while !cursor.isAtEnd { filters.append(try cursor.string("topic filter")) }  // §3.10.3
            if filters.isEmpty { throw .noTopicFilters(.unsubscribe) }
            return .unsubscribe(MQTTUnsubscribe(packetID: packetID, filters: filters, properties: properties))
        case .unsubAck:
            let packetID = try packetIdentifier(&cursor)  // §3.11.2
            var properties: [MQTTProperty] = []
            var codes: [MQTTReasonCode] = []
            if v5 {
                _ = try cursor.properties(.unsubAck, collect: true, into: &properties)  // §3.11.2.1
                while !cursor.isAtEnd {  // §3.11.3
                    let code = try cursor.byte("reason code")
                    guard let decoded = MQTTReasonCode(rawValue: code), decoded.isAllowed(in: .unsubAck) else {
                        throw .invalidReasonCode(code, .unsubAck)
                    }
                    codes.append(decoded)
                }
            }
            try cursor.expectEnd()
            return .unsubAck(MQTTUnsubAck(packetID: packetID, reasonCodes: codes, properties: properties))
        case .pingReq:
            return .pingReq
        case .pingResp:
            return .pingResp
        case .disconnect:
            guard v5 else {
                try cursor.expectEnd()
                return .disconnect(MQTTDisconnect())
            }
            let (reason, properties) = try reasonAndProperties(&cursor, .disconnect, .disconnect)
            return .disconnect(MQTTDisconnect(reasonCode: reason, properties: properties))
        case .auth:
            guard v5 else { throw .packetNotInVersion(.auth, version) }
            let (reason, properties) = try reasonAndProperties(&cursor, .auth, .auth)
            return .auth(MQTTAuth(reasonCode: reason, properties: properties))
        }
    }

    private static func packetIdentifier(_ cursor: inout MQTTReadCursor) throws(MQTTDecodeError) -> UInt16 {
        let packetID = try cursor.uint16("packet identifier")
        if packetID == 0 { throw .packetIdentifierZero(cursor.type) }
        return packetID
    }

    /// DISCONNECT and AUTH: optional reason code, then optional properties (5.0 §3.14.2, §3.15.2).
    private static func reasonAndProperties(
        _ cursor: inout MQTTReadCursor, _ type: MQTTPacketType, _ context: MQTTPropertyContext
    ) throws(MQTTDecodeError) -> (MQTTReasonCode, [MQTTProperty]) {
        var properties: [MQTTProperty] = []
        guard !cursor.isAtEnd else { return (.success, properties) }
        let code = try cursor.byte("reason code")
        guard let reason = MQTTReasonCode(rawValue: code), reason.isAllowed(in: type) else {
            throw .invalidReasonCode(code, type)
        }
        if !cursor.isAtEnd { _ = try cursor.properties(context, collect: true, into: &properties) }
        try cursor.expectEnd()
        return (reason, properties)
    }

    /// CONNECT (3.1 / 3.1.1 / 5.0 §3.1): the protocol name and level decide the version of the rest.
    private static func decodeConnect(_ cursor: inout MQTTReadCursor) throws(MQTTDecodeError) -> MQTTConnect {
        let nameRange = try cursor.binaryRange("protocol name")  // §3.1.2.1
        let level = try cursor.byte("protocol level")  // §3.1.2.2
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: cursor.bytes[nameRange]), as: UTF8.self)
        let version: MQTTProtocolVersion
        switch (name, level) {
        case ("MQIsdp", 3): version = .v3_1
        case ("MQTT", 4): version = .v3_1_1
        case ("MQTT", 5): version = .v5
        default: throw .unsupportedProtocol(name: name, level: level)
        }
        let v5 = version.hasProperties
        let flags = try cursor.byte("connect flags")  // §3.1.2.3
        if flags & 1 != 0 { throw .invalidConnectFlags(flags, reason: "reserved bit 0 is set") }
        let hasWill = flags & 0b100 != 0
        let willQoSBits = (flags >> 3) & 0b11
        let willRetain = flags & 0b10_0000 != 0
        if !hasWill, willQoSBits != 0 || willRetain {
            throw .invalidConnectFlags(flags, reason: "Will QoS or Will Retain set without Will Flag")
        }
        guard let willQoS = MQTTQoS(rawValue: willQoSBits) else {
            throw .invalidConnectFlags(flags, reason: "Will QoS is 3")
        }
        let hasUsername = flags & 0b1000_0000 != 0
        let hasPassword = flags & 0b100_0000 != 0
        if !v5, hasPassword, !hasUsername {  // 3.1.1 §3.1.2.9
            throw .invalidConnectFlags(flags, reason: "Password Flag set without User Name Flag")
        }
        let keepAlive = try cursor.uint16("keep alive")  // §3.1.2.10
        var properties: [MQTTProperty] = []
        if v5 { _ = try cursor.properties(.connect, collect: true, into: &properties) }  // 5.0 §3.1.2.11
        let clientID = try cursor.string("Client Identifier")  // §3.1.3.1
        var will: MQTTWill?
        if hasWill {
            var willProperties: [MQTTProperty] = []
            if v5 { _ = try cursor.properties(.will, collect: true, into: &willProperties) }  // 5.0 §3.1.3.2
            let topicRange = try cursor.binaryRange("Will Topic")  // §3.1.3.3
            try validateTopicName(cursor.bytes, topicRange, field: "Will Topic")
            if topicRange.isEmpty { throw .emptyTopicName(field: "Will Topic") }
            let topic = String(decoding: UnsafeRawBufferPointer(rebasing: cursor.bytes[topicRange]), as: UTF8.self)
            let payload = try cursor.binary("Will Payload")  // §3.1.3.4
            will = MQTTWill(topic: topic, payload: payload, qos: willQoS, retain: willRetain, properties: willProperties)
        }
        let username = hasUsername ? try cursor.string("User Name") : nil  // §3.1.3.5
        let password = hasPassword ? try cursor.binary("Password") : nil  // §3.1.3.6
        try cursor.expectEnd()
        return MQTTConnect(version: version, clientID: clientID, cleanStart: flags & 0b10 != 0, keepAlive: keepAlive,
                           username: username, password: password, will: will, properties: properties)
    }
}
