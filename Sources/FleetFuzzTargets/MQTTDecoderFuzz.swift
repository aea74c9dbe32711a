import MQTTCodec

/// The MQTT decoder three ways over the same bytes: the incremental decoder fed everything at once, the same
/// decoder fed one byte at a time, and the stateless parser over the caller's bytes. All three must agree on
/// every packet and on the first error; every view's ranges must lie inside its packet; every fully decoded
/// packet must encode back to bytes that decode to the same packet.
enum MQTTDecoderFuzz {
    /// What one decoding pass saw: each packet (or the error that ended the pass).
    enum Step: Equatable {
        case packet(MQTTPacketType, byteCount: Int, MQTTPacket?)
        case failed(MQTTDecodeError)
    }

    static func run(_ bytes: UnsafeRawBufferPointer, version: MQTTProtocolVersion) {
        // A small maximum also reaches the "packet too large" path without megabyte inputs.
        let maximum = bytes.first.map { $0 & 1 == 0 ? MQTTDecoder.protocolMaximumPacketSize : 64 }
            ?? MQTTDecoder.protocolMaximumPacketSize
        let whole = decodeWhole(bytes, version: version, maximum: maximum)
        let split = decodeByteByByte(bytes, version: version, maximum: maximum)
        guard whole == split else {
            preconditionFailure("decoding whole and byte by byte disagree: \(whole) vs \(split)")
        }
        let stateless = decodeStateless(bytes, version: version, maximum: maximum)
        guard stateless == whole.map(\.withoutPacket) else {
            preconditionFailure("the stateless parser and the decoder disagree: \(stateless) vs \(whole)")
        }
    }

    static func decodeWhole(_ bytes: UnsafeRawBufferPointer, version: MQTTProtocolVersion, maximum: Int) -> [Step] {
        var decoder = MQTTDecoder(version: version, maximumPacketSize: maximum, initialCapacity: 64)
        decoder.feed(bytes)
        var steps: [Step] = []
        drain(&decoder, into: &steps)
        return steps
    }

    static func decodeByteByByte(_ bytes: UnsafeRawBufferPointer, version: MQTTProtocolVersion, maximum: Int) -> [Step] {
        var decoder = MQTTDecoder(version: version, maximumPacketSize: maximum, initialCapacity: 16)
        var steps: [Step] = []
        for index in bytes.indices {
            decoder.feed(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + 1)]))
            if drain(&decoder, into: &steps) { break }
        }
        return steps
    }

    /// Takes every whole packet; true once an error ended decoding.
    @discardableResult
    static func drain(_ decoder: inout MQTTDecoder, into steps: inout [Step]) -> Bool {
        while true {
            let view: MQTTPacketView
            do {
                guard let next = try decoder.nextView() else { return false }
                view = next
            } catch {
                steps.append(.failed(error))
                return true
            }
            checkRanges(view)
            let versionBefore = decoder.version
            do {
                let packet = try decoder.packet(for: view)
                checkRoundTrip(packet, version: versionBefore)
                steps.append(.packet(view.type, byteCount: view.byteCount, packet))
            } catch {
                // A view whose full decoding fails is still consumed: the engine closes the connection then.
                steps.append(.packet(view.type, byteCount: view.byteCount, nil))
                steps.append(.failed(error))
                return true
            }
        }
    }

    static func decodeStateless(_ bytes: UnsafeRawBufferPointer, version: MQTTProtocolVersion, maximum: Int) -> [Step] {
        var steps: [Step] = []
        var start = 0
        var version = version
        while true {
            let view: MQTTPacketView
            do {
                guard let next = try MQTTDecoder.view(
                    in: bytes, from: start, to: bytes.count, version: version, maximumPacketSize: maximum)
                else { return steps }
                view = next
            } catch {
                steps.append(.failed(error))
                return steps
            }
            checkRanges(view)
            guard view.packetRange.lowerBound == start, view.packetRange.upperBound <= bytes.count else {
                preconditionFailure("view \(view.packetRange) does not start at \(start) within \(bytes.count) bytes")
            }
            steps.append(.packet(view.type, byteCount: view.byteCount, nil))
            do {
                let packet = try MQTTDecoder.decode(view, in: bytes, version: version)
                if case .connect(let connect) = packet { version = connect.version }
            } catch {
                steps.append(.failed(error))
                return steps
            }
            start = view.packetRange.upperBound
        }
    }

    static func checkRanges(_ view: MQTTPacketView) {
        let packet = view.packetRange
        let body = view.bodyRange
        guard body.lowerBound >= packet.lowerBound + 2, body.upperBound == packet.upperBound else {
            preconditionFailure("body \(body) not inside packet \(packet)")
        }
        for (name, range) in [("topic", view.topicRange), ("properties", view.propertiesRange), ("payload", view.payloadRange)] {
            guard range.lowerBound >= body.lowerBound, range.upperBound <= body.upperBound else {
                preconditionFailure("\(name) \(range) not inside body \(body)")
            }
        }
    }

    /// A packet the decoder accepted, encoded again, must decode to itself.
    static func checkRoundTrip(_ packet: MQTTPacket, version: MQTTProtocolVersion) {
        let encoded = packet.encoded(version: version)
        var decoder = MQTTDecoder(version: version, initialCapacity: encoded.count)
        decoder.feed(encoded)
        let again: MQTTPacket?
        do {
            again = try decoder.next()
        } catch {
            preconditionFailure("\(packet) encodes to bytes the decoder refuses: \(error)")
        }
        guard again == packet, decoder.bufferedByteCount == 0 else {
            preconditionFailure("\(packet) encodes to \(encoded), which decodes to \(String(describing: again))")
        }
    }
}

extension MQTTDecoderFuzz.Step {
    var withoutPacket: Self {
        switch self {
        case .packet(let type, let count, _): return .packet(type, byteCount: count, nil)
        case .failed: return self
        }
    }
}
