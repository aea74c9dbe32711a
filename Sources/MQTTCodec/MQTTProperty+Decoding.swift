/// What a property scan found, for checks that depend on which properties were present.
@usableFromInline
struct MQTTPropertyScan {
    /// Absolute range of the property list (without its length).
    @usableFromInline var range: Range<Int>
    /// Bit `identifier` set for each property seen.
    @usableFromInline var seen: UInt64

    @inlinable init(range: Range<Int>, seen: UInt64) {
        self.range = range
        self.seen = seen
    }

    @inlinable func contains(_ identifier: MQTTPropertyIdentifier) -> Bool {
        seen & (1 << UInt64(identifier.rawValue)) != 0
    }
}

extension MQTTReadCursor {
    /// Reads and validates a property section (5.0 §2.2.2): known identifiers, allowed in `context`, not
    /// repeated unless allowed, values well-formed and in range. Appends decoded properties to `list` only if
    /// `collect` is set, so the hot path validates without allocating.
    @inlinable mutating func properties(
        _ context: MQTTPropertyContext, collect: Bool, into list: inout [MQTTProperty]
    ) throws(MQTTDecodeError) -> MQTTPropertyScan {
        let length = try variableByteInteger("property length")
        let range = try self.range(count: length, "properties")
        var inner = MQTTReadCursor(bytes: bytes, range: range, type: type)
        var seen: UInt64 = 0
        while !inner.isAtEnd {
            let raw = try inner.variableByteInteger("property identifier")
            guard raw <= 0x7F, let identifier = MQTTPropertyIdentifier(rawValue: UInt8(raw)) else {
                throw .unknownProperty(UInt8(truncatingIfNeeded: raw), context: context)
            }
            guard identifier.isAllowed(in: context) else {
                throw .propertyNotAllowed(identifier, context: context)
            }
            let bit: UInt64 = 1 << UInt64(identifier.rawValue)
            if seen & bit != 0, !identifier.mayRepeat(in: context) {
                throw .duplicateProperty(identifier, context: context)
            }
            seen |= bit
            try inner.propertyValue(identifier, collect: collect, into: &list)
        }
        return MQTTPropertyScan(range: range, seen: seen)
    }

    @usableFromInline mutating func propertyValue(
        _ identifier: MQTTPropertyIdentifier, collect: Bool, into list: inout [MQTTProperty]
    ) throws(MQTTDecodeError) {
        let field = identifier.description
        switch identifier.valueType {
        case .byte:
            let value = try byte(field)
            // Every byte property is a 0/1 flag except Maximum QoS, which is 0 or 1 too (5.0 §3.2.2.3.4).
            guard value <= 1 else { throw .invalidPropertyValue(identifier, value: UInt32(value)) }
            guard collect else { return }
            switch identifier {
            case .payloadFormatIndicator: list.append(.payloadFormatIndicator(value))
            case .requestProblemInformation: list.append(.requestProblemInformation(value))
            case .requestResponseInformation: list.append(.requestResponseInformation(value))
            case .maximumQoS: list.append(.maximumQoS(value))
            case .retainAvailable: list.append(.retainAvailable(value))
            case .wildcardSubscriptionAvailable: list.append(.wildcardSubscriptionAvailable(value))
            case .subscriptionIdentifierAvailable: list.append(.subscriptionIdentifierAvailable(value))
            default: list.append(.sharedSubscriptionAvailable(value))
            }
        case .twoByteInteger:
            let value = try uint16(field)
            // Receive Maximum, Topic Alias: 0 is a Protocol Error (5.0 §3.1.2.11.3, §3.3.2.3.4).
            if value == 0, identifier == .receiveMaximum || identifier == .topicAlias {
                throw .invalidPropertyValue(identifier, value: 0)
            }
            guard collect else { return }
            switch identifier {
            case .serverKeepAlive: list.append(.serverKeepAlive(value))
            case .receiveMaximum: list.append(.receiveMaximum(value))
            case .topicAliasMaximum: list.append(.topicAliasMaximum(value))
            default: list.append(.topicAlias(value))
            }
        case .fourByteInteger:
            let value = try uint32(field)
            if value == 0, identifier == .maximumPacketSize {  // 5.0 §3.1.2.11.4
                throw .invalidPropertyValue(identifier, value: 0)
            }
            guard collect else { return }
            switch identifier {
            case .messageExpiryInterval: list.append(.messageExpiryInterval(value))
            case .sessionExpiryInterval: list.append(.sessionExpiryInterval(value))
            case .willDelayInterval: list.append(.willDelayInterval(value))
            default: list.append(.maximumPacketSize(value))
            }
        case .variableByteInteger:
            let value = try variableByteInteger(field)
            if value == 0 { throw .invalidPropertyValue(identifier, value: 0) }  // 5.0 §3.8.2.1.2
            if collect { list.append(.subscriptionIdentifier(UInt32(value))) }
        case .utf8String:
            if !collect {
                _ = try stringRange(field)
                return
            }
            let value = try string(field)
            switch identifier {
            case .contentType: list.append(.contentType(value))
            case .responseTopic: list.append(.responseTopic(value))
            case .assignedClientIdentifier: list.append(.assignedClientIdentifier(value))
            case .authenticationMethod: list.append(.authenticationMethod(value))
            case .responseInformation: list.append(.responseInformation(value))
            case .serverReference: list.append(.serverReference(value))
            default: list.append(.reasonString(value))
            }
        case .binaryData:
            if !collect {
                _ = try binaryRange(field)
                return
            }
            let value = try binary(field)
            list.append(identifier == .correlationData ? .correlationData(value) : .authenticationData(value))
        case .utf8StringPair:
            if !collect {
                _ = try stringRange(field)
                _ = try stringRange(field)
                return
            }
            let name = try string(field)
            let value = try string(field)
            list.append(.userProperty(name: name, value: value))
        }
    }
}
