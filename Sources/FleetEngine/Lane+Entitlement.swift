/// Which messages a subscriber is owed (its entitlement), kept per (subscriber, stream) as windows of the
/// stream's sequence numbers so loss is counted only for what was published while it was entitled:
/// - clean session, or QoS 0 on either side: from its SUBACK to the moment its link was cut;
/// - persistent session with QoS ≥ 1 both ways: from its SUBACK for as long as the broker keeps the session;
///   a reconnect that finds no session ends the window where the link was cut.
/// What a stream published outside every window is `missed_while_offline`, not loss; what was in flight when
/// a link was cut is inside the window, so it is lost unless it arrived. A shared subscription's windows are
/// kept under its group's key: the group is owed a message while any member was entitled to it.
extension Lane {
    /// CONNACK: the client subscribes now unless the broker kept its session (then its persistent windows go on).
    func entitlementConnected(_ client: Int, sessionPresent: Bool) {
        guard !clients[client].entitledStreams.isEmpty else { return }
        // Only persistent windows stay open while disconnected; without the session they end where the link was cut.
        guard !sessionPresent else { return }
        for index in clients[client].entitledStreams.indices where clients[client].windowOpen[index] {
            closeWindow(client, index, end: clients[client].windowCut[index])
        }
    }

    /// SUBACK: every stream without an open window is owed from here.
    func entitlementSubscribed(_ client: Int) {
        if now > remoteEntitlementDeadline { clients[client].remoteEntitlementWhole = false }
        for index in clients[client].entitledStreams.indices where !clients[client].windowOpen[index] {
            clients[client].windowStart[index] = progress.published(Int(clients[client].entitledStreams[index]))
            clients[client].windowOpen[index] = true
        }
    }

    /// The link is gone (any cause, the end of the run included): clean windows end here; persistent ones
    /// remember where, in case the broker turns out to have dropped the session.
    func entitlementCut(_ client: Int) {
        if !stopping { clients[client].remoteEntitlementWhole = false }
        for index in clients[client].entitledStreams.indices where clients[client].windowOpen[index] {
            let cut = progress.published(Int(clients[client].entitledStreams[index]))
            if clients[client].entitledPersistent[index] && !stopping {
                clients[client].windowCut[index] = cut
            } else {
                closeWindow(client, index, end: cut)
            }
        }
    }

    /// End of run: a persistent window of a client that is offline now ends where its link was cut (the
    /// broker still holds what came after, but it was never delivered in this run).
    func entitlementFinish(_ client: Int) {
        for index in clients[client].entitledStreams.indices where clients[client].windowOpen[index] {
            closeWindow(client, index, end: clients[client].windowCut[index])
        }
    }

    private func closeWindow(_ client: Int, _ index: Int, end: UInt64) {
        let key = clients[client].entitledKeys[index] | UInt64(clients[client].entitledStreams[index])
        let window = EntitlementWindow(start: clients[client].windowStart[index], end: end)
        metrics.entitlement[key, default: []].append(window)
        clients[client].windowOpen[index] = false
    }
}

extension Lane {
    /// Messages owed to this lane's connected subscribers through their own (plain) subscriptions that have not
    /// arrived: for every open window, those numbered from its start to the stream's published count that the
    /// tracker has not seen; plus this lane's requests still without a response (a request and its response are
    /// counted on the requester's lane). Shared-subscription windows are left out: a group's deliveries are
    /// spread over lanes (`openGroupWindows`, `groupArrivals`). Part of the drain's end condition
    /// (`Engine.drain`). Runs on the lane's queue.
    func owedDeliveries() -> UInt64 {
        var owed: UInt64 = 0
        for fleet in metrics.fleets where fleet.counters.requestsSent > fleet.counters.responsesReceived {
            owed &+= fleet.counters.requestsSent - fleet.counters.responsesReceived
        }
        for client in clients.indices where clients[client].phase == .connected {
            let entitled = clients[client].entitledStreams
            for index in entitled.indices where clients[client].windowOpen[index]
                && clients[client].entitledKeys[index] & Engine.groupKeyTag == 0 {
                let stream = entitled[index]
                let start = clients[client].windowStart[index]
                let published = progress.published(Int(stream))
                guard published > start else { continue }
                let key = clients[client].entitledKeys[index] | UInt64(stream)
                let arrived = metrics.deliveryKeys[key].map { metrics.delivery.uniqueCount(stream: $0, in: start..<published) } ?? 0
                owed &+= (published - start) &- min(arrived, published - start)
            }
        }
        return owed
    }

    /// The open windows of this lane's connected shared-subscription members: for each group key | stream, the
    /// earliest start, merged into `starts`. A group is owed every message from the earliest open window of a
    /// connected member to the stream's published count (every open window runs to now). Runs on the lane's queue.
    func openGroupWindows(into starts: inout [UInt64: UInt64]) {
        for client in clients.indices where clients[client].phase == .connected {
            let entitled = clients[client].entitledStreams
            for index in entitled.indices where clients[client].windowOpen[index]
                && clients[client].entitledKeys[index] & Engine.groupKeyTag != 0 {
                let key = clients[client].entitledKeys[index] | UInt64(entitled[index])
                let start = clients[client].windowStart[index]
                starts[key] = min(starts[key] ?? start, start)
            }
        }
    }

    /// Distinct arrivals on this lane under each group key | stream of `starts`, from its start to the stream's
    /// published count, added to `arrived` (the lanes' counts are summed: a message reaches one member). Runs on
    /// the lane's queue.
    func groupArrivals(_ starts: [UInt64: UInt64], into arrived: inout [UInt64: UInt64]) {
        for (key, start) in starts {
            guard let dense = metrics.deliveryKeys[key] else { continue }
            let published = progress.published(Int(key & 0xFFFF_FFFF))
            guard published > start else { continue }
            arrived[key, default: 0] &+= metrics.delivery.uniqueCount(stream: dense, in: start..<published)
        }
    }
}
