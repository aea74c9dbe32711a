extension MQTTProperty {
    /// Encoded size: identifier byte plus value (5.0 §2.2.2.2).
    var encodedSize: Int {
        switch self {
        case .payloadFormatIndicator, .requestProblemInformation, .requestResponseInformation, .maximumQoS,
            .retainAvailable, .wildcardSubscriptionAvailable, .subscriptionIdentifierAvailable,
            .sharedSubscriptionAvailable:
            return 2
        case .serverKeepAlive, .receiveMaximum, .topicAliasMaximum, .topicAlias:
            return 3
        case .messageExpiryInterval, .sessionExpiryInterval, .willDelayInterval, .maximumPacketSize:
            return 5
        case .subscriptionIdentifier(let value):
            return 1 + variableByteIntegerSize(Int(value))
        case .contentType(let text), .responseTopic(let text), .assignedClientIdentifier(let text),
            .authenticationMethod(let text), .responseInformation(let text), .serverReference(let text),
            .reasonString(let text):
            return 3 + text.utf8.count
        case .correlationData(let data), .authenticationData(let data):
            return 3 + data.count
        case .userProperty(let name, let value):
            return 5 + name.utf8.count + value.utf8.count
        }
    }

    func write(to cursor: inout MQTTWriteCursor) {
        cursor.byte(identifier.rawValue)
        switch self {
        case .payloadFormatIndicator(let value), .requestProblemInformation(let value),
            .requestResponseInformation(let value), .maximumQoS(let value), .retainAvailable(let value),
            .wildcardSubscriptionAvailable(let value), .subscriptionIdentifierAvailable(let value),
            .sharedSubscriptionAvailable(let value):
            cursor.byte(value)
        case .serverKeepAlive(let value), .receiveMaximum(let value), .topicAliasMaximum(let value),
            .topicAlias(let value):
            cursor.uint16(value)
        case .messageExpiryInterval(let value), .sessionExpiryInterval(let value), .willDelayInterval(let value),
            .maximumPacketSize(let value):
            cursor.uint32(value)
        case .subscriptionIdentifier(let value):
            cursor.variableByteInteger(Int(value))
        case .contentType(let text), .responseTopic(let text), .assignedClientIdentifier(let text),
            .authenticationMethod(let text), .responseInformation(let text), .serverReference(let text),
            .reasonString(let text):
            cursor.string(text)
        case .correlationData(let data), .authenticationData(let data):
            cursor.binary(data)
        case .userProperty(let name, let value):
            cursor.string(name)
            cursor.string(value)
        }
    }
}

extension Array where Element == MQTTProperty {
    /// Size of the property list without its length prefix.
    var encodedListSize: Int { reduce(0) { $0 + $1.encodedSize } }

    /// Size of the property section: Variable Byte Integer length, then the list (5.0 §2.2.2.1).
    var encodedSectionSize: Int {
        let list = encodedListSize
        return variableByteIntegerSize(list) + list
    }

    func writeSection(to cursor: inout MQTTWriteCursor) {
        cursor.variableByteInteger(encodedListSize)
        for property in self { property.write(to: &cursor) }
    }
}

/// A property list encoded once (without its length prefix) and reused by the PUBLISH fast path, e.g. the
/// two user properties every message of a scenario carries.
public struct MQTTEncodedProperties: Sendable, Hashable {
    /// The encoded property list, identifiers and values, without the Property Length.
    public let bytes: [UInt8]

    public init(_ properties: [MQTTProperty]) {
        var buffer = MQTTByteBuffer(capacity: properties.encodedListSize)
        buffer.write(size: properties.encodedListSize) { cursor in
            for property in properties { property.write(to: &cursor) }
        }
        bytes = buffer.readableBytes
    }

    public static let empty = MQTTEncodedProperties([])
}
