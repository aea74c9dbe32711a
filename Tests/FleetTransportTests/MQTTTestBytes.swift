/// MQTT 3.1.1 packets as literal bytes, one commented field at a time: this test target depends on FleetTransport
/// and FleetBroker only, so the codec is not available here (and the transports must carry any bytes anyway).
enum MQTTTestBytes {
    static func utf8String(_ text: String) -> [UInt8] {  // §1.5.3: 2-byte length, then UTF-8
        let bytes = Array(text.utf8)
        return [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }

    /// §3.1: CONNECT, protocol "MQTT" level 4, clean session, keep alive 60 s.
    static func connect(clientID: String) -> [UInt8] {
        let body: [UInt8] =
            utf8String("MQTT")  // §3.1.2.1 protocol name
            + [0x04]  // §3.1.2.2 protocol level 4 (3.1.1)
            + [0x02]  // §3.1.2.3 connect flags: clean session
            + [0x00, 0x3C]  // §3.1.2.10 keep alive 60
            + utf8String(clientID)  // §3.1.3.1 client identifier
        return [0x10, UInt8(body.count)] + body
    }

    /// §3.2: CONNACK, session present 0, return code 0 (accepted).
    static let connack: [UInt8] = [0x20, 0x02, 0x00, 0x00]

    /// §3.8: SUBSCRIBE (fixed header flags 0b0010) to one topic filter at `qos`.
    static func subscribe(topic: String, qos: UInt8, packetID: UInt16) -> [UInt8] {
        let body = packetIdentifier(packetID) + utf8String(topic) + [qos]
        return [0x82, UInt8(body.count)] + body
    }

    /// §3.9: SUBACK granting `qos`.
    static func suback(packetID: UInt16, qos: UInt8) -> [UInt8] {
        [0x90, 0x03] + packetIdentifier(packetID) + [qos]
    }

    /// §3.3: PUBLISH, DUP 0, RETAIN 0; the packet identifier only for QoS 1 and 2 (§3.3.2.2).
    static func publish(topic: String, payload: [UInt8], qos: UInt8, packetID: UInt16) -> [UInt8] {
        let body = utf8String(topic) + (qos > 0 ? packetIdentifier(packetID) : []) + payload
        return [0x30 | qos << 1, UInt8(body.count)] + body
    }

    static func puback(_ packetID: UInt16) -> [UInt8] { [0x40, 0x02] + packetIdentifier(packetID) }  // §3.4
    static func pubrec(_ packetID: UInt16) -> [UInt8] { [0x50, 0x02] + packetIdentifier(packetID) }  // §3.5
    static func pubrel(_ packetID: UInt16) -> [UInt8] { [0x62, 0x02] + packetIdentifier(packetID) }  // §3.6, flags 0b0010
    static func pubcomp(_ packetID: UInt16) -> [UInt8] { [0x70, 0x02] + packetIdentifier(packetID) }  // §3.7
    static let disconnect: [UInt8] = [0xE0, 0x00]  // §3.14

    static func packetIdentifier(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
}

extension LayeredTestClient {
    /// Receives packets until every one of `wanted` has arrived; returns all packets received meanwhile.
    func receive(until wanted: [[UInt8]]) throws -> [[UInt8]] {
        var received: [[UInt8]] = []
        while !wanted.allSatisfy({ received.contains($0) }) {
            received += try receivePackets(1)
        }
        return received
    }

    /// CONNECT, SUBSCRIBE at QoS 2 to a topic, PUBLISH to it at `qos`, and every acknowledgement both ways (as
    /// publisher and as subscriber), each checked byte for byte; then DISCONNECT.
    func mqttRoundTrip(clientID: String, qos: UInt8) throws -> (expected: [[UInt8]], received: [[UInt8]]) {
        typealias M = MQTTTestBytes
        let topic = "fleet/\(clientID)"
        let payload = Array("speed=88".utf8)
        try sendMQTT(M.connect(clientID: clientID))
        var received = try receivePackets(1)
        try sendMQTT(M.subscribe(topic: topic, qos: 2, packetID: 1))
        received += try receivePackets(1)
        try sendMQTT(M.publish(topic: topic, payload: payload, qos: qos, packetID: 2))
        // The broker's copy to us as subscriber: the publication's QoS, the broker's own packet identifier 1.
        let delivered = M.publish(topic: topic, payload: payload, qos: qos, packetID: 1)
        switch qos {
        case 0:
            received += try receive(until: [delivered])
        case 1:
            received += try receive(until: [M.puback(2), delivered])
            try sendMQTT(M.puback(1))
        default:
            received += try receive(until: [M.pubrec(2)])
            try sendMQTT(M.pubrel(2))
            received += try receive(until: [M.pubcomp(2), delivered].filter { !received.contains($0) })
            try sendMQTT(M.pubrec(1))
            received += try receive(until: [M.pubrel(1)])
            try sendMQTT(M.pubcomp(1))
        }
        try sendMQTT(M.disconnect)
        let expected: [[UInt8]] =
            switch qos {
            case 0: [M.connack, M.suback(packetID: 1, qos: 2), delivered]
            case 1: [M.connack, M.suback(packetID: 1, qos: 2), M.puback(2), delivered]
            default: [M.connack, M.suback(packetID: 1, qos: 2), M.pubrec(2), M.pubcomp(2), delivered, M.pubrel(1)]
            }
        return (expected.sorted { $0.lexicographicallyPrecedes($1) }, received.sorted { $0.lexicographicallyPrecedes($1) })
    }
}
