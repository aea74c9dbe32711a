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
        // Only persistent windows stay open while disconnected; without the session they end where the link was cut.
        guard !sessionPresent, let entitlement = clients[client].entitlement else { return }
        entitlement.sessionLost { metrics.entitlement[$0, default: []].append($1) }
    }

    /// SUBACK: every stream without an open window is owed from here.
    func entitlementSubscribed(_ client: Int) {
        if now > remoteEntitlementDeadline { clients[client].remoteEntitlementWhole = false }
        clients[client].entitlement?.subscribed { progress.published(Int($0)) }
    }

    /// The link is gone (any cause, the end of the run included): clean windows end here; persistent ones
    /// remember where, in case the broker turns out to have dropped the session.
    func entitlementCut(_ client: Int) {
        if !stopping { clients[client].remoteEntitlementWhole = false }
        guard let entitlement = clients[client].entitlement else { return }
        entitlement.linkCut(keepPersistent: !stopping, published: { progress.published(Int($0)) },
                            close: { metrics.entitlement[$0, default: []].append($1) })
    }

    /// End of run: a persistent window of a client that is offline now ends where its link was cut (the
    /// broker still holds what came after, but it was never delivered in this run).
    func entitlementFinish(_ client: Int) {
        clients[client].entitlement?.sessionLost { metrics.entitlement[$0, default: []].append($1) }
    }
}

/// A subscriber's windows as they open and close. Called on its lane only, when a window opens or closes (never
/// per message); `published` reads a stream's published count (`StreamProgress`), `close` records a window that
/// ended under its key (subscriber or group | stream id).
extension EntitlementState {
    /// The broker did not keep the session (CONNACK without it), or the run ended: every open window ends
    /// where the link was cut (only persistent windows are still open while disconnected).
    func sessionLost(close: (_ key: UInt64, _ window: EntitlementWindow) -> Void) {
        for index in streams.indices where windowOpen[index] {
            closeWindow(index, end: windowCut[index], close: close)
        }
    }

    /// SUBACK: every stream without an open window is owed from its published count now.
    func subscribed(published: (_ stream: UInt32) -> UInt64) {
        for index in streams.indices where !windowOpen[index] {
            windowStart[index] = published(streams[index])
            windowOpen[index] = true
        }
    }

    /// The link is gone: clean windows end at the published count now; persistent ones remember it as where the
    /// link was cut and stay open, unless `keepPersistent` is false (the run is ending).
    func linkCut(keepPersistent: Bool, published: (_ stream: UInt32) -> UInt64,
                 close: (_ key: UInt64, _ window: EntitlementWindow) -> Void) {
        for index in streams.indices where windowOpen[index] {
            let cut = published(streams[index])
            if persistent[index] && keepPersistent {
                windowCut[index] = cut
            } else {
                closeWindow(index, end: cut, close: close)
            }
        }
    }

    /// Each open window: its key (subscriber or group | stream id), stream and start. `groups`: only those kept
    /// under a shared subscription's group key, else only the plain ones.
    func forEachOpenWindow(groups: Bool, _ body: (_ key: UInt64, _ stream: UInt32, _ start: UInt64) -> Void) {
        for index in streams.indices where windowOpen[index] && (keys[index] & Engine.groupKeyTag != 0) == groups {
            body(keys[index] | UInt64(streams[index]), streams[index], windowStart[index])
        }
    }

    private func closeWindow(_ index: Int, end: UInt64, close: (_ key: UInt64, _ window: EntitlementWindow) -> Void) {
        close(keys[index] | UInt64(streams[index]), EntitlementWindow(start: windowStart[index], end: end))
        windowOpen[index] = false
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
            clients[client].entitlement?.forEachOpenWindow(groups: false) { key, stream, start in
                let published = progress.published(Int(stream))
                guard published > start else { return }
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
            clients[client].entitlement?.forEachOpenWindow(groups: true) { key, _, start in
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
