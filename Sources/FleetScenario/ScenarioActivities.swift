import FleetMetrics
import MQTTCodec

extension Scenario {
    /// What a run of this scenario does, as far as metrics care: a threshold on a metric that needs an activity
    /// the scenario lacks can never pass, so validate refuses it.
    ///
    /// Transports: the scenario's own brokers and fleets decide. A scenario without brokers may still be run
    /// against TLS or WebSocket brokers given with `--broker`, so TLS and WebSocket count as possible there.
    public var activities: Set<RunActivity> {
        var found: Set<RunActivity> = []
        func published(_ qos: MQTTQoS) {
            found.insert(.publishes)
            if qos == .atLeastOnce { found.insert(.qos1Publishes) }
            if qos == .exactlyOnce { found.insert(.qos2Publishes) }
        }
        for fleet in fleets {
            for stream in fleet.publishes { published(stream.qos) }
            if let heartbeat = fleet.heartbeat { published(heartbeat.qos) }
            for request in fleet.requests {
                published(request.qos)
                found.insert(.requests)
                found.insert(.subscribes)  // the requester's reply filter
            }
            if let responder = fleet.responder {
                found.insert(.subscribes)
                published(responder.qos)
            }
            if !fleet.subscriptions.isEmpty { found.insert(.subscribes) }
            if let transport = fleet.transport {
                if transport.usesTLS { found.insert(.tls) }
                if transport.usesWebSocket { found.insert(.webSocket) }
            }
            // PINGREQ goes out after keep_alive without any other packet written, so only a keepalive shorter
            // than the run can ever produce one.
            if fleet.keepalive.nanoseconds > 0, fleet.keepalive < duration { found.insert(.keepAlive) }
            if fleet.networks.contains(where: { $0.fraction > 0 }) { found.insert(.network) }
        }
        if found.contains(.publishes), found.contains(.subscribes) { found.insert(.deliveries) }
        if brokers.isEmpty {
            found.insert(.tls)
            found.insert(.webSocket)
        }
        for broker in brokers {
            if broker.transport.usesTLS { found.insert(.tls) }
            if broker.transport.usesWebSocket { found.insert(.webSocket) }
        }
        return found
    }
}
