import MQTTCodec
import MQTTSession

/// A client session driven by the input: arbitrary server bytes in arbitrary splits, interleaved with the
/// client's own publishes, subscriptions, time passing and reconnections. Whatever the server sends, the session
/// must not trap, must keep its in-flight count within its window, and everything it writes must decode as a
/// sequence of whole, valid packets.
enum SessionFuzz {
    /// Touches every borrowed byte so the address sanitizer sees a read outside the buffer.
    struct Sink: MQTTSessionEventHandler {
        var checksum: UInt64 = 0
        var events = 0

        mutating func sessionEvent(_ event: MQTTSessionEvent) { events &+= 1 }

        mutating func messageReceived(
            _ message: MQTTReceivedMessage, topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer
        ) {
            for byte in topic { checksum = checksum &* 31 &+ UInt64(byte) }
            for byte in payload { checksum = checksum &* 31 &+ UInt64(byte) }
        }
    }

    static let topics = [try! MQTTTopicName("fleet/1"), try! MQTTTopicName("a/b/c")]

    static func run(_ bytes: UnsafeRawBufferPointer, version: MQTTProtocolVersion) {
        let v5 = version.hasProperties
        let settings = MQTTSessionSettings(
            version: version, keepAliveSeconds: 10, receiveMaximum: 8, maximumPacketSize: v5 ? 512 : nil,
            topicAliasMaximum: v5 ? 4 : 0, inFlightWindow: 4, usesOutgoingTopicAliases: v5)
        var session = MQTTClientSession(settings: settings, clientID: "fuzz")
        var decoder = MQTTDecoder(version: version, initialCapacity: 64)
        var output = MQTTByteBuffer(capacity: 256)
        var sink = Sink()
        var now: UInt64 = 1_000
        let second: UInt64 = 1_000_000_000
        session.connect(now: now, into: &output)
        checkOutput(&output, version: version)

        var index = 0
        while index < bytes.count {
            let op = bytes[index]
            index += 1
            let argument = Int(op >> 3)
            switch op & 7 {
            case 0, 1, 2:
                // Server bytes: up to 32 of them.
                let count = min(argument + 1, bytes.count - index)
                decoder.feed(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + count)]))
                index += count
                session.receive(from: &decoder, now: now, output: &output, events: &sink)
            case 3:
                let qos = MQTTQoS(rawValue: UInt8(argument % 3)) ?? .atMostOnce
                let payload = [UInt8](repeating: op, count: argument >> 2)
                _ = payload.withUnsafeBytes { payloadBytes in
                    session.publish(topic: topics[argument & 1], qos: qos, payload: payloadBytes,
                                    intendedAt: now, tag: UInt64(index), now: now, into: &output)
                }
            case 4:
                let qos = MQTTQoS(rawValue: UInt8(argument % 3)) ?? .atMostOnce
                _ = session.subscribe([MQTTSubscription(filter: argument & 4 == 0 ? "fleet/#" : "a/+/c", qos: qos)],
                                      now: now, into: &output)
            case 5:
                _ = session.unsubscribe(["fleet/#"], now: now, into: &output)
            case 6:
                now += UInt64(argument) * second / 2
                session.checkDeadlines(now: now, output: &output, events: &sink)
            default:
                if argument & 1 == 0 {
                    session.disconnect(now: now, into: &output)
                }
                session.connectionLost(now: now, events: &sink)
                checkOutput(&output, version: version)
                decoder = MQTTDecoder(version: version, initialCapacity: 64)
                now += second
                session.connect(now: now, into: &output)
            }
            guard session.inFlightCount <= session.inFlightWindow else {
                preconditionFailure("\(session.inFlightCount) in flight over a window of \(session.inFlightWindow)")
            }
            checkOutput(&output, version: version)
        }
    }

    /// What the session wrote must be whole, valid client packets, as the broker would decode them.
    static func checkOutput(_ output: inout MQTTByteBuffer, version: MQTTProtocolVersion) {
        guard !output.isEmpty else { return }
        var broker = MQTTDecoder(version: version, initialCapacity: output.readableCount)
        broker.feed(output.readableBytes)
        do {
            while try broker.next() != nil {}
        } catch {
            preconditionFailure("the session wrote a packet that does not decode: \(error) in \(output.readableBytes)")
        }
        guard broker.bufferedByteCount == 0 else {
            preconditionFailure("the session wrote \(broker.bufferedByteCount) bytes of an incomplete packet")
        }
        output.clear()
    }
}
