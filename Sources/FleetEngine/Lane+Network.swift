import FleetMetrics
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession

/// Network conditions per vehicle, emulated in user space (no tc, no root, any broker).
///
/// The emulation sits between the MQTT session and the connection's layers: what the session writes goes into
/// the client's outbound queue instead of its socket buffer, what is read from the socket (after TLS and
/// WebSocket) into its inbound queue instead of the session. Each staged write or read is one chunk with a
/// release time: token bucket (bandwidth), one-way delay draw, a retransmission stall when the Gilbert-Elliott
/// chain is in its bad state, and never earlier than the chunk before it (TCP keeps order, so a later packet
/// never overtakes an earlier one). Each direction has one timer of the lane's wheel per client, set to its
/// first chunk's release: no timer object per message. Clients without a profile never enter this file.
extension Lane {
    // MARK: Outbound

    /// The session's output (in `scratch`) for a client with a profile: queued, not staged.
    func queueOutbound(_ client: Int, _ link: NetworkLink) {
        let wasEmpty = link.up.isEmpty
        let version = clients[client].session.settings.version
        scratch.withUnsafeReadableBytes { bytes in
            // Each MQTT packet is a chunk of its own: one loss step and one delay draw per packet however the
            // turn batched them (so a client's stalls depend on its packets, not on timing), and behind a
            // bandwidth limit a burst of messages leaves one by one at the link's rate.
            var start = 0
            while start < bytes.count {
                let end = Self.packetEnd(bytes, from: start)
                let (release, _) = link.releaseTime(count: end - start, up: true, now: now)
                link.counters.chunksUp &+= 1
                link.counters.delayUpNanoseconds &+= release &- now
                let packet = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
                link.up.append(packet, release: release, now: now, packetID: Self.publishPacketID(packet, version: version))
                start = end
            }
        }
        if wasEmpty, let first = link.up.nextRelease {
            wheel.schedule(client: client, kind: TimerKind.networkOut, deadline: first)
        }
        if !link.held && link.up.queuedBytes >= link.shape.sendBufferBytes {
            // As a full socket send buffer would: the client produces nothing more until half of it left.
            link.held = true
            link.counters.heldForBandwidth &+= 1
        }
    }

    /// The packet identifier of a whole QoS 1/2 PUBLISH (MQTT 3.1.1 §3.3.2.2, 5.0 §3.3.2.2), 0 for any other
    /// packet.
    static func publishPacketID(_ packet: UnsafeRawBufferPointer, version: MQTTProtocolVersion) -> UInt16 {
        guard packet.count >= 2, packet[0] >> 4 == 3, (packet[0] >> 1) & 3 != 0 else { return 0 }
        var position = 1
        while position < packet.count, packet[position] & 0x80 != 0, position < 4 { position += 1 }
        position += 1
        guard position + 2 <= packet.count else { return 0 }
        let topicLength = Int(packet[position]) << 8 | Int(packet[position + 1])
        position += 2 + topicLength
        guard position + 2 <= packet.count else { return 0 }
        return UInt16(packet[position]) << 8 | UInt16(packet[position + 1])
    }

    /// The outbound timer: every chunk due goes to the connection (its layers, then the socket at the end of
    /// the turn), its end-to-end headers stamped with the time it left the emulated link.
    func releaseOutbound(_ client: Int) {
        guard let link = clients[client].network else { return }
        guard clients[client].socket != nil else {
            link.up.clear()
            return
        }
        let target = clients[client].transport?.plaintext ?? clients[client].outbound
        let version = clients[client].session.settings.version
        var releasedBytes = 0
        while let release = link.up.nextRelease, release <= now {
            let chunk = link.up.chunks[link.up.firstChunk]
            let start = link.up.consumed
            let appended = link.up.bytes.withUnsafeMutableBytes { storage -> Bool in
                let bytes = UnsafeMutableRawBufferPointer(rebasing: storage[start..<chunk.end])
                Self.stampSentTimes(bytes, at: release, version: version)
                return target.append(UnsafeRawBufferPointer(bytes))
            }
            if !appended {
                connectionLost(client, reason: .socketError(errno: ENOBUFS))
                return
            }
            releasedBytes += chunk.end - start
            link.noteReleased(packetID: chunk.packetID, releasedAt: release)
            link.up.popFirst()
        }
        if releasedBytes > 0 {
            metrics.fleets[clients[client].fleet].counters.bytesOut &+= UInt64(releasedBytes)
            markDirty(client)
        }
        if let next = link.up.nextRelease { wheel.schedule(client: client, kind: TimerKind.networkOut, deadline: next) }
        if link.held && link.up.queuedBytes * 2 < link.shape.sendBufferBytes {
            link.held = false
            if publishing && !clients[client].publisher.isEmpty {
                clients[client].publisher.becameSendable(at: now)
                wheel.schedule(client: client, kind: TimerKind.publish, deadline: now)
            }
        }
    }

    /// Where the MQTT packet starting at `start` ends (the end of `bytes` when its length cannot be read).
    static func packetEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var length = 0
        var multiplier = 1
        var position = start + 1
        while position < bytes.count {
            let byte = bytes[position]
            length += Int(byte & 0x7F) * multiplier
            position += 1
            if byte & 0x80 == 0 { return min(position + length, bytes.count) }
            multiplier *= 128
            if multiplier > 128 * 128 * 128 { break }
        }
        return bytes.count
    }

    /// Sets the actual send time of every fleetbench end-to-end header in `bytes` (whole MQTT packets written
    /// by the session) to `time`: the message left the vehicle when it left the emulated link, so a subscriber's
    /// time from that send is the broker's part (`end_to_end_broker`). Headers of other forms are left.
    static func stampSentTimes(_ bytes: UnsafeMutableRawBufferPointer, at time: UInt64, version: MQTTProtocolVersion) {
        var offset = 0
        let count = bytes.count
        while offset + 2 <= count {
            let first = bytes[offset]
            var length = 0
            var multiplier = 1
            var position = offset + 1
            while position < count {
                let byte = bytes[position]
                length += Int(byte & 0x7F) * multiplier
                multiplier *= 128
                position += 1
                if byte & 0x80 == 0 || multiplier > 128 * 128 * 128 { break }
            }
            let end = position + length
            guard end <= count else { return }
            if first >> 4 == 3 {
                var cursor = position
                guard cursor + 2 <= end else { return }
                cursor += 2 + (Int(bytes[cursor]) << 8 | Int(bytes[cursor + 1]))
                if (first >> 1) & 3 != 0 { cursor += 2 }
                if version.hasProperties, cursor < end {
                    var propertiesLength = 0
                    var shift = 0
                    while cursor < end {
                        let byte = bytes[cursor]
                        propertiesLength |= Int(byte & 0x7F) << shift
                        shift += 7
                        cursor += 1
                        if byte & 0x80 == 0 || shift > 21 { break }
                    }
                    cursor += propertiesLength
                }
                if cursor < end { stampHeader(UnsafeMutableRawBufferPointer(rebasing: bytes[cursor..<end]), time) }
            }
            offset = end
        }
    }

    private static func stampHeader(_ payload: UnsafeMutableRawBufferPointer, _ time: UInt64) {
        if payload.count >= EndToEndHeader.binarySize, payload[0] == EndToEndHeader.magic,
           payload[1] == EndToEndHeader.version {
            payload.storeBytes(of: time.bigEndian, toByteOffset: 32, as: UInt64.self)
            return
        }
        // The text form as the payload writes it: `{"_fb":"02` then 56 hex digits, then the send time's 16.
        let key = EndToEndHeader.textKey
        let versionAt = 1 + key.count
        guard payload.count >= 1 + EndToEndHeader.textFieldSize, payload[0] == UInt8(ascii: "{"),
              payload[versionAt] == UInt8(ascii: "0"), payload[versionAt + 1] == UInt8(ascii: "2") else { return }
        for index in key.indices where payload[1 + index] != key[index] { return }
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        for digit in 0..<16 {
            payload[versionAt + 58 + digit] = digits[Int((time >> UInt64(60 - 4 * digit)) & 0xF)]
        }
    }

    // MARK: Inbound

    /// Bytes read for a client with a profile: queued until their release. Always true (the client stays).
    /// `raw`: bytes of a TLS handshake or WebSocket upgrade (still to go through the layers), which also wait
    /// out the way up of the request they answer, so connect latency shows every round trip.
    func queueInbound(_ client: Int, _ link: NetworkLink, _ bytes: UnsafeRawBufferPointer, raw: Bool = false) -> Bool {
        let wasEmpty = link.down.isEmpty
        // Behind a bandwidth limit a read is cut into segments of at most one TCP payload (1,448 bytes with
        // timestamps on a 1,500-byte MTU), each arriving at the link's rate; the session takes partial packets.
        let piece = link.shape.downNanosPerByte > 0 ? 1448 : bytes.count
        var start = 0
        while start < bytes.count {
            let end = min(start + piece, bytes.count)
            let segment = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            // One loss step per MQTT packet starting here; none for handshake bytes (their reads are cut by
            // timing, and a step per read would shift the chain).
            let packets = raw ? 0 : link.countPacketStarts(segment)
            var (release, _) = link.releaseTime(count: end - start, up: false, now: now, packets: packets)
            if raw {
                release &+= link.delay(up: true)
                link.down.lastRelease = max(link.down.lastRelease, release)
            }
            link.counters.chunksDown &+= 1
            link.counters.delayDownNanoseconds &+= release &- now
            link.down.append(segment, release: release, now: now, raw: raw)
            start = end
        }
        if wasEmpty, let first = link.down.nextRelease {
            wheel.schedule(client: client, kind: TimerKind.networkIn, deadline: first)
        }
        // Backpressure: stop reading until half of it was delivered, so a slow downlink does not buffer without
        // bound; the broker's bytes wait in the kernel and in the broker. (A socket read by the receive ring has no
        // read interest to drop; a fleet with `bandwidth_down` never gets one: `ringReceivesDeclined`.)
        if link.pauseReadingIfFull(canPause: !readsThroughRing(client)), let socket = clients[client].socket {
            try? epoll.modify(socket.fileDescriptor, events: readInterest(client, writable: clients[client].wantsWritable),
                              token: UInt64(client))
        }
        return true
    }

    /// The inbound timer: every chunk due goes to the session (or, read during a handshake, to the layers), as
    /// if it had just been read.
    func releaseInbound(_ client: Int) {
        guard let link = clients[client].network else { return }
        if link.connectPending {
            finishEmulatedConnect(client, link)
            return
        }
        while clients[client].socket != nil, let release = link.down.nextRelease, release <= now {
            let chunk = link.down.chunks[link.down.firstChunk]
            let start = link.down.consumed
            link.delivering = true
            link.deliveringReadAt = chunk.enqueuedAt
            // Read through a second reference to the storage: the session call may close the connection, which
            // clears the queue (the buffer stays alive and unchanged for this call; no bytes are copied).
            var alive = true
            let storage = link.down.bytes
            storage.withUnsafeBytes { storage in
                let bytes = UnsafeRawBufferPointer(rebasing: storage[start..<chunk.end])
                if chunk.raw, let transport = clients[client].transport {
                    alive = receiveLayered(client, transport, input: bytes)
                } else {
                    alive = receive(client, bytes: bytes)
                }
            }
            link.delivering = false
            if !alive || clients[client].socket == nil { return }
            link.down.popFirst()
        }
        guard let socket = clients[client].socket else {
            link.down.clear()
            return
        }
        if let next = link.down.nextRelease { wheel.schedule(client: client, kind: TimerKind.networkIn, deadline: next) }
        if link.resumeReadingIfDrained() {
            // Level-triggered: what waits in the socket is reported at the next wait.
            try? epoll.modify(socket.fileDescriptor, events: readInterest(client, writable: clients[client].wantsWritable),
                              token: UInt64(client))
        }
    }

    // MARK: Connect

    /// The socket connected (or failed to): with a profile the lane learns of it one emulated round trip later
    /// (SYN up, SYN-ACK down), so the TCP connect latency shows it. The socket leaves the epoll set meanwhile
    /// (a level-triggered writable or error would wake the lane on every wait).
    func tcpReady(_ client: Int) {
        guard let link = clients[client].network, !stopping, let socket = clients[client].socket else {
            tcpConnected(client)
            return
        }
        guard !link.connectPending else { return }
        link.connectPending = true
        try? epoll.remove(socket.fileDescriptor)
        clients[client].wantsWritable = false
        let roundTrip = link.delay(up: true) &+ link.delay(up: false)
        wheel.schedule(client: client, kind: TimerKind.networkIn, deadline: now &+ max(roundTrip, 1))
    }

    private func finishEmulatedConnect(_ client: Int, _ link: NetworkLink) {
        link.connectPending = false
        guard clients[client].phase == .connecting, let socket = clients[client].socket else { return }
        do {
            try epoll.add(socket.fileDescriptor, events: [.readable, .writable], token: UInt64(client))
            clients[client].wantsWritable = true
        } catch {
            connectFailed(client, reason: Self.connectFailure(error))
            return
        }
        tcpConnected(client)
    }

    // MARK: Drops and outages

    /// After CONNACK: the next link drop and outage of this connection, if the profile has them.
    func networkConnected(_ client: Int, _ link: NetworkLink) {
        if let loss = link.shape.profile.loss, loss.dropInterval > 0 {
            let gap = link.eventRandom.nextExponentialNanoseconds(mean: Double(loss.dropInterval))
            wheel.schedule(client: client, kind: TimerKind.networkDrop, deadline: now &+ max(gap, 1))
        }
        if let outages = link.shape.profile.outages {
            let gap = link.eventRandom.nextExponentialNanoseconds(mean: Double(outages.meanInterval))
            wheel.schedule(client: client, kind: TimerKind.networkOutage, deadline: now &+ max(gap, 1))
        }
    }

    /// The link dropped: the connection ends as a TCP client sees it after its retransmissions gave up (no
    /// DISCONNECT, an abortive close so the broker notices and publishes the will), and the fleet's reconnect
    /// policy takes over.
    func networkDropDue(_ client: Int) {
        guard !stopping, clients[client].phase == .connected, let link = clients[client].network else { return }
        link.counters.drops &+= 1
        link.recordCut(.drop)
        cutLink(client, reason: .networkDrop, outage: nil)
    }

    /// An outage: the link is gone for a drawn duration; the client reconnects once it is over.
    func networkOutageDue(_ client: Int) {
        guard !stopping, clients[client].phase == .connected, let link = clients[client].network,
              let outages = link.shape.profile.outages else { return }
        cutForOutage(client, reason: .networkOutage, duration: link.eventRandom.nextUInt64(in: outages.duration))
    }

    /// Every outage (a profile's, a `tunnel` stage's, a route's tunnel) ends here: counted with its length on
    /// the client's link (or its fleet's, for a client without a profile), the connection cut abortively (RST,
    /// no DISCONNECT: the broker publishes the will), the reconnect held back for the outage. `reason` is what
    /// the disconnect is counted as (`network_outage`, `tunnel`). False when the client was not connected.
    @discardableResult
    func cutForOutage(_ client: Int, reason: DisconnectReason, duration: UInt64) -> Bool {
        guard !stopping, client < clients.count, clients[client].phase == .connected else { return false }
        if let link = clients[client].network {
            link.counters.outages &+= 1
            link.counters.outageNanoseconds &+= duration
            link.recordCut(reason == .tunnel ? .tunnel : .outage, outage: duration)
        } else {
            let fleet = clients[client].fleet
            metrics.fleets[fleet].network.outages &+= 1
            metrics.fleets[fleet].network.outageNanoseconds &+= duration
        }
        cutLink(client, reason: reason, outage: duration)
        return true
    }

    private func cutLink(_ client: Int, reason: DisconnectReason, outage: UInt64?) {
        let cut = connectionEvent(client) { $0.linkCut(reason, outage: outage, now: now, reconnect: $2, random: &$1) }
        if let cut { tearDown(client, cut) }
    }

    /// A closed connection: nothing queued on the emulated link survives it.
    func networkClosed(_ client: Int, _ link: NetworkLink) {
        link.reset()
        wheel.cancel(client: client, kind: TimerKind.networkOut)
        wheel.cancel(client: client, kind: TimerKind.networkIn)
        wheel.cancel(client: client, kind: TimerKind.networkDrop)
        wheel.cancel(client: client, kind: TimerKind.networkOutage)
    }
}

/// What the emulated links of a fleet did (per lane, merged per fleet and run).
public struct NetworkCounters: Sendable, Equatable {
    /// Sends (writes or reads) that hit a loss and waited one retransmission timeout.
    public var stalls: UInt64 = 0
    /// Link drops that ended a connection, and outages (with their total length, ns).
    public var drops: UInt64 = 0
    public var outages: UInt64 = 0
    public var outageNanoseconds: UInt64 = 0
    /// Chunks queued each way and the emulated delay they got in total (ns): the mean added delay.
    public var chunksUp: UInt64 = 0
    public var chunksDown: UInt64 = 0
    public var delayUpNanoseconds: UInt64 = 0
    public var delayDownNanoseconds: UInt64 = 0
    /// Times publishing waited because the emulated send buffer was full (bandwidth below the offered rate).
    public var heldForBandwidth: UInt64 = 0
    /// Times the lane stopped reading a socket because its inbound queue was full (downlink backpressure).
    public var readPauses: UInt64 = 0

    public init() {}

    public mutating func add(_ other: NetworkCounters) {
        stalls &+= other.stalls
        drops &+= other.drops
        outages &+= other.outages
        outageNanoseconds &+= other.outageNanoseconds
        chunksUp &+= other.chunksUp
        chunksDown &+= other.chunksDown
        delayUpNanoseconds &+= other.delayUpNanoseconds
        delayDownNanoseconds &+= other.delayDownNanoseconds
        heldForBandwidth &+= other.heldForBandwidth
        readPauses &+= other.readPauses
    }
}
