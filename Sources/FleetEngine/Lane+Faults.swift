import FleetMetrics
import MQTTSession

/// A churn fault's share on one lane: `remaining` clean disconnects, one every `spacing` ns from `next`.
struct ChurnPlan {
    let fleet: Int
    var remaining: Int
    let spacing: UInt64
    var next: UInt64
    var random: SeededRandom
}

/// Faults on running clients, driven by the engine's fault calls. Everything here runs on the lane's queue.
extension Lane {
    /// Cuts a connected client's connection abruptly: RST (SO_LINGER 0), no DISCONNECT, so the broker publishes
    /// its will. It reconnects by its fleet's policy, with `outage` in place of the first reconnect delay. One
    /// kind of outage (`cutForOutage`): counted as one, its disconnect reason `tunnel`.
    /// False when the client was not connected (any more).
    func cutForTunnel(_ client: Int, outage: UInt64) -> Bool {
        cutForOutage(client, reason: .tunnel, duration: outage)
    }

    /// Disconnects a connected client cleanly (DISCONNECT, then close) and reconnects it at once (paced by its
    /// fleet's pacer). A clean disconnect is not a failure: the reconnect policy's attempt count is untouched.
    func disconnectForChurn(_ client: Int) {
        sayGoodbye(client)
        // Nil when the flush itself failed: that loss was torn down already.
        if let teardown = clients[client].connection.churned(now: now) { tearDown(client, teardown) }
    }

    func addChurn(_ plan: ChurnPlan) {
        guard plan.remaining > 0 else { return }
        churns.append(plan)
        nextChurnAt = min(nextChurnAt, plan.next)
    }

    /// Runs every churn disconnect that is due. A due churn that finds no connected client of its fleet on the
    /// lane is counted as skipped.
    func runDueChurns() {
        for plan in churns.indices {
            while churns[plan].remaining > 0 && churns[plan].next <= now {
                let fleet = churns[plan].fleet
                if stopping {
                    churns[plan].remaining = 0
                    break
                }
                if let victim = pickConnected(fleet: fleet, random: &churns[plan].random) {
                    disconnectForChurn(victim)
                } else {
                    metrics.fleets[fleet].counters.churnSkipped += 1
                }
                churns[plan].remaining -= 1
                churns[plan].next &+= churns[plan].spacing
            }
        }
        churns.removeAll { $0.remaining == 0 }
        nextChurnAt = churns.map(\.next).min() ?? .max
    }

    /// A uniformly chosen start, then the next connected client of the fleet on this lane.
    private func pickConnected(fleet: Int, random: inout SeededRandom) -> Int? {
        let candidates = fleetClients[fleet]
        guard !candidates.isEmpty else { return nil }
        let start = Int(random.next(below: UInt64(candidates.count)))
        for offset in 0..<candidates.count {
            let client = candidates[(start + offset) % candidates.count]
            if clients[client].phase == .connected { return client }
        }
        return nil
    }
}
