/// Store and forward (`EngineStream.offline`). Nothing runs while a client is offline: its schedule keeps
/// counting slots, and the reconnect turns the slots that came due meanwhile into the buffer's content, applying
/// the capacity there. The buffered messages then go out through the ordinary schedule (catch-up), keeping their
/// intended times; only overflowed slots are skipped, so they take no sequence number and no subscriber is owed them.
extension Lane {
    /// A reconnected client's backlog, per stream with an offline buffer: count it, drop what overflowed.
    func resumeFromOffline(_ client: Int) {
        let fleet = clients[client].fleet
        let streams = fleets[fleet].configuration.streams
        guard streams.contains(where: { $0.offline != nil }) else { return }
        if clients[client].offline.isEmpty {
            clients[client].offline = Array(repeating: OfflineBacklog(), count: clients[client].streams.count)
        }
        for stream in clients[client].streams.indices {
            guard let buffer = streams[stream].offline, var schedule = clients[client].streams[stream].schedule else { continue }
            let backlog = clients[client].offline[stream]
            let due = schedule.slotsDue(by: now)
            // Slots already counted at an earlier reconnect (a flush cut short) are still in the schedule.
            let counted = backlog.toFlush &+ backlog.skipAfter
            guard due > counted else { continue }
            let new = due - counted
            let capacity = UInt64(buffer.capacity)
            metrics.fleets[fleet].counters.offline.buffered &+= new
            switch buffer.overflow {
            case .dropOldest:
                // The buffer holds the rest of the earlier backlog and the new messages; the oldest go.
                let held = backlog.toFlush &+ new
                let overflowed = held > capacity ? held - capacity : 0
                schedule.skip(overflowed)
                metrics.fleets[fleet].counters.offline.overflowed &+= overflowed
                clients[client].offline[stream].toFlush = held - overflowed
            case .dropNewest:
                if backlog.skipAfter > 0 {
                    // A flush cut short with slots still to skip behind it: the new slots come after those, so
                    // they join the skipped ones (the buffer is treated as full until the flush is out).
                    clients[client].offline[stream].skipAfter &+= new
                    metrics.fleets[fleet].counters.offline.overflowed &+= new
                } else {
                    let room = capacity > backlog.toFlush ? capacity - backlog.toFlush : 0
                    let kept = min(new, room)
                    clients[client].offline[stream].toFlush = backlog.toFlush &+ kept
                    clients[client].offline[stream].skipAfter = new - kept
                    metrics.fleets[fleet].counters.offline.overflowed &+= new - kept
                    if clients[client].offline[stream].toFlush == 0 {
                        schedule.skip(new - kept)
                        clients[client].offline[stream].skipAfter = 0
                    }
                }
            }
            clients[client].streams[stream].schedule = schedule
        }
    }

    /// A message of `stream` went out: if it came from the buffer, count it flushed; once the flush is out,
    /// skip the slots a `drop_newest` buffer refused.
    @inline(__always)
    func sentFromBacklog(_ client: Int, stream: Int, schedule: inout PublishSchedule) {
        guard clients[client].offline[stream].toFlush > 0 else { return }
        clients[client].offline[stream].toFlush -= 1
        metrics.fleets[clients[client].fleet].counters.offline.flushed &+= 1
        if clients[client].offline[stream].toFlush == 0, clients[client].offline[stream].skipAfter > 0 {
            schedule.skip(clients[client].offline[stream].skipAfter)
            clients[client].offline[stream].skipAfter = 0
        }
    }

    /// Publishing stopped with `due` slots of `stream` unsent: for a stream with an offline buffer whose client
    /// is offline, what came due since the last reconnect is buffered, what does not fit overflowed, and only what the buffer holds
    /// (plus a flush cut short) is unsent at the end. Returns the unsent count.
    func offlineUnsentAtEnd(_ client: Int, stream: Int, due: UInt64) -> UInt64 {
        let fleet = clients[client].fleet
        // A connected client's unsent slots were held back by its window or socket, not by being offline (a
        // flush still under way was counted as buffered at the reconnect).
        guard let buffer = fleets[fleet].configuration.streams[stream].offline,
              clients[client].phase != .connected else { return due }
        let backlog = clients[client].offline.isEmpty ? OfflineBacklog() : clients[client].offline[stream]
        let counted = backlog.toFlush &+ backlog.skipAfter
        let new = due > counted ? due - counted : 0
        metrics.fleets[fleet].counters.offline.buffered &+= new
        let capacity = UInt64(buffer.capacity)
        let held = backlog.toFlush &+ new
        let kept = backlog.skipAfter > 0 ? backlog.toFlush : min(held, max(capacity, backlog.toFlush))
        metrics.fleets[fleet].counters.offline.overflowed &+= held - kept
        return kept
    }
}
