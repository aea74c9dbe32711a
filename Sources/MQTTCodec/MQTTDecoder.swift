/// Incremental MQTT decoder: feed bytes in any split; `nextView()`/`next()` return a packet only when it is
/// whole and consume nothing of a partial one. Strict: every rule it checks throws an `MQTTDecodeError`; it
/// never traps on input. After an error the connection should be closed (the error repeats).
public struct MQTTDecoder: Sendable {
    /// Version of the packets expected. Decoding a CONNECT sets it to the CONNECT's version (broker side).
    public var version: MQTTProtocolVersion
    /// Largest whole packet accepted, fixed header included (5.0 §3.1.2.11.4; default: the protocol maximum).
    public var maximumPacketSize: Int
    /// Received bytes. Public so a transport can `read(2)` straight into it with `writeWithUnsafeMutableBytes`.
    public var buffer: MQTTByteBuffer

    /// The protocol's largest packet: 1 type byte, 4 length bytes, 268,435,455 body bytes.
    public static let protocolMaximumPacketSize = 268_435_460

    public init(version: MQTTProtocolVersion = .v5, maximumPacketSize: Int = MQTTDecoder.protocolMaximumPacketSize,
                initialCapacity: Int = 4096) {
        self.version = version
        self.maximumPacketSize = maximumPacketSize
        self.buffer = MQTTByteBuffer(capacity: initialCapacity)
    }

    /// Appends received bytes. Invalidates the ranges of views returned before.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) { buffer.writeBytes(bytes) }
    public mutating func feed(_ bytes: [UInt8]) { buffer.writeBytes(bytes) }

    /// Bytes received but not yet returned as packets.
    public var bufferedByteCount: Int { buffer.readableCount }

    /// The next whole packet as a zero-copy view, or nil if the buffered bytes do not hold one yet. The
    /// packet's bytes are consumed; its ranges stay readable until the next `feed`.
    public mutating func nextView() throws(MQTTDecodeError) -> MQTTPacketView? {
        let version = self.version
        let maximum = maximumPacketSize
        let start = buffer.readerIndex
        let end = buffer.writerIndex
        // Array.withUnsafeBytes rethrows an untyped error: carry the typed one out in a Result.
        let view = try buffer.storage.withUnsafeBytes { raw in
            Result { () throws(MQTTDecodeError) -> MQTTPacketView? in
                try MQTTDecoder.view(in: raw, from: start, to: end, version: version, maximumPacketSize: maximum)
            }
        }.get()
        if let view { buffer.moveReaderIndex(forwardBy: view.packetRange.count) }
        return view
    }

    /// The next whole packet, fully decoded (allocates), or nil if none is whole yet.
    public mutating func next() throws(MQTTDecodeError) -> MQTTPacket? {
        guard let view = try nextView() else { return nil }
        return try packet(for: view)
    }

    /// Decodes the packet a view from this decoder describes (call before the next `feed`). A CONNECT sets
    /// `version` to its own.
    public mutating func packet(for view: MQTTPacketView) throws(MQTTDecodeError) -> MQTTPacket {
        let version = self.version
        let packet = try buffer.storage.withUnsafeBytes { raw in
            Result { () throws(MQTTDecodeError) -> MQTTPacket in try MQTTDecoder.decode(view, in: raw, version: version) }
        }.get()
        if case .connect(let connect) = packet { self.version = connect.version }
        return packet
    }

    /// Gives `body` the bytes at `range` of a view (e.g. `view.payloadRange`).
    @inlinable public func withBytes<R>(in range: Range<Int>, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeBytes(in: range, body)
    }

    // MARK: Stateless parsing over caller-owned bytes

    /// Parses the packet starting at `start` in `bytes[start..<end]`: nil if it is not whole yet. Ranges in
    /// the view are absolute offsets in `bytes`. Usable directly on a transport's own receive buffer.
    public static func view(
        in bytes: UnsafeRawBufferPointer, from start: Int, to end: Int, version: MQTTProtocolVersion,
        maximumPacketSize: Int = protocolMaximumPacketSize
    ) throws(MQTTDecodeError) -> MQTTPacketView? {
        let end = min(end, bytes.count)
        guard start >= 0, end - start >= 2 else { return nil }
        // §2.1.2 packet type and §2.1.3 flags
        let first = bytes[start]
        let typeValue = first >> 4
        let flags = first & 0x0F
        guard typeValue != 0, let type = MQTTPacketType(rawValue: typeValue) else {
            throw .reservedPacketType(typeValue, version: version)
        }
        if type == .auth, !version.hasProperties { throw .reservedPacketType(typeValue, version: version) }
        if let required = type.requiredFlags {
            if flags != required { throw .invalidFixedHeaderFlags(type, flags: flags, required: required) }
        } else {
            if flags & 0b0110 == 0b0110 { throw .invalidQoS(.publish) }  // §3.3.1.2 QoS 3
            if flags & 0b1000 != 0, flags & 0b0110 == 0 { throw .dupWithQoS0 }  // §3.3.1.1
        }
        // §2.1.4 remaining length: Variable Byte Integer of at most 4 bytes
        var remaining = 0
        var index = start + 1
        var shift = 0
        while true {
            guard index < end else { return nil }
            let digit = bytes[index]
            remaining |= Int(digit & 0x7F) << shift
            index += 1
            if digit & 0x80 == 0 { break }
            if index - start - 1 == 4 { throw .variableByteIntegerTooLong(field: "remaining length") }
            shift += 7
        }
        let total = index - start + remaining
        if total > maximumPacketSize { throw .packetTooLarge(size: total, maximum: maximumPacketSize) }
        guard end - start >= total else { return nil }
        let body = index..<(start + total)
        let packet = start..<(start + total)
        var cursor = MQTTReadCursor(bytes: bytes, range: body, type: type)
        var unused: [MQTTProperty] = []
        switch type {
        case .publish:
            let qos = MQTTQoS(rawValue: (flags >> 1) & 0b11) ?? .atMostOnce
            let topic = try cursor.binaryRange("topic name")  // §3.3.2.1
            try validateTopicName(bytes, topic, field: "PUBLISH topic")
            var packetID: UInt16 = 0
            if qos != .atMostOnce {
                packetID = try cursor.uint16("packet identifier")  // §3.3.2.2
                if packetID == 0 { throw .packetIdentifierZero(.publish) }
            }
            var scan = MQTTPropertyScan(range: cursor.offset..<cursor.offset, seen: 0)
            if version.hasProperties {
                scan = try cursor.properties(.publish, collect: false, into: &unused)  // §3.3.2.3
            }
            if topic.isEmpty, !scan.contains(.topicAlias) { throw .emptyTopicName(field: "PUBLISH topic") }  // §3.3.2.1
            return MQTTPacketView(
                type: type, flags: flags, packetRange: packet, bodyRange: body, topicRange: topic,
                propertiesRange: scan.range, payloadRange: cursor.offset..<body.upperBound, packetID: packetID,
                reasonCode: .success, propertyBits: scan.seen)
        case .pubAck, .pubRec, .pubRel, .pubComp:
            let packetID = try cursor.uint16("packet identifier")  // §3.4.2
            if packetID == 0 { throw .packetIdentifierZero(type) }
            var reason = MQTTReasonCode.success
            var scan = MQTTPropertyScan(range: cursor.offset..<cursor.offset, seen: 0)
            if version.hasProperties, !cursor.isAtEnd {
                let code = try cursor.byte("reason code")  // §3.4.2.1
                guard let decoded = MQTTReasonCode(rawValue: code), decoded.isAllowed(in: type) else {
                    throw .invalidReasonCode(code, type)
                }
                reason = decoded
                if !cursor.isAtEnd {
                    scan = try cursor.properties(MQTTPropertyContext(type) ?? .pubAck, collect: false, into: &unused)
                }
            }
            try cursor.expectEnd()
            return MQTTPacketView(
                type: type, flags: flags, packetRange: packet, bodyRange: body, topicRange: body.lowerBound..<body.lowerBound,
                propertiesRange: scan.range, payloadRange: body.upperBound..<body.upperBound, packetID: packetID,
                reasonCode: reason, propertyBits: scan.seen)
        case .pingReq, .pingResp:
            try cursor.expectEnd()
            fallthrough
        default:
            let empty = body.lowerBound..<body.lowerBound
            return MQTTPacketView(
                type: type, flags: flags, packetRange: packet, bodyRange: body, topicRange: empty,
                propertiesRange: empty, payloadRange: empty, packetID: 0, reasonCode: .success, propertyBits: 0)
        }
    }

    /// A PUBLISH or Will topic name: valid UTF-8 without U+0000 and without wildcards (5.0 §3.3.2.1, §4.7.3).
    static func validateTopicName(
        _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, field: String
    ) throws(MQTTDecodeError) {
        try validateUTF8(bytes, range, field: field)
        for index in range {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") { throw .wildcardInTopicName(field: field, wildcard: "+") }
            if byte == UInt8(ascii: "#") { throw .wildcardInTopicName(field: field, wildcard: "#") }
        }
    }
}
