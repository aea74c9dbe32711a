import FleetEngine
import FleetScenario
import FleetTransport
import MQTTCodec
import MQTTSession

/// A scenario feature the engine cannot run yet: the run stops before it starts, with this text.
struct UnsupportedFeature: Error, CustomStringConvertible {
    let description: String
}

/// Turns a decoded scenario into the engine's configuration: patterns rendered per client, durations in
/// nanoseconds, scenario enums onto protocol ones.
enum ScenarioMapping {
    static func version(_ version: ProtocolVersion) -> MQTTProtocolVersion {
        switch version {
        case .v3_1: return .v3_1
        case .v3_1_1: return .v3_1_1
        case .v5: return .v5
        }
    }

    static func qos(_ qos: QoS) -> MQTTQoS {
        switch qos {
        case .atMostOnce: return .atMostOnce
        case .atLeastOnce: return .atLeastOnce
        case .exactlyOnce: return .exactlyOnce
        }
    }

    static func reconnect(_ policy: FleetScenario.ReconnectPolicy) -> FleetEngine.ReconnectPolicy {
        switch policy {
        case .none:
            return .none
        case let .immediateThenInterval(immediate, interval, maxAttempts):
            return .immediateThenInterval(retries: immediate, interval: interval.nanoseconds, maxAttempts: maxAttempts)
        case let .exponential(base, cap, maxAttempts):
            return .exponentialBackoff(base: base.nanoseconds, cap: cap.nanoseconds, maxAttempts: maxAttempts)
        }
    }

    static func timeouts(_ timeouts: AckTimeouts) -> MQTTAckTimeouts {
        MQTTAckTimeouts(
            connAck: timeouts.connack.nanoseconds, subAck: timeouts.suback.nanoseconds,
            unsubAck: timeouts.unsuback.nanoseconds, pubAck: timeouts.puback.nanoseconds,
            pubRec: timeouts.pubrec.nanoseconds, pubComp: timeouts.pubcomp.nanoseconds,
            pingResp: timeouts.pingresp.nanoseconds)
    }

    static func plan(_ schedule: FleetScenario.PublishSchedule) -> PublishPlan {
        switch schedule {
        case let .interval(every, jitter):
            // The scenario shifts each send by ±jitter around its grid point; the engine delays by 0...jitter.
            // Twice the jitter gives the same spread (shifted by a constant), capped at the period.
            return .interval(period: every.nanoseconds, jitter: min(jitter.nanoseconds * 2, every.nanoseconds))
        case .rate(let perSecond): return .rate(perSecond: perSecond)
        case .poisson(let perSecond): return .poisson(perSecond: perSecond)
        case let .burst(count, every): return .bursts(count: count, every: every.nanoseconds)
        case .onConnect: return .onConnect
        }
    }

    /// Payload size for the engine's fleetbench payload (header + send time + filler). Templates are rendered
    /// once to find their typical size until the engine renders templates itself.
    static func payloadSize(_ payload: Payload) -> Int {
        switch payload {
        case .filler(let size): return size
        case .template(let template): return max(template.literalByteCount + 16, EndToEndPayloadSize.minimum)
        }
    }

    /// Ramp stages: when each fleet starts connecting and at which rate.
    static func ramps(_ scenario: Scenario) -> [String: (offset: UInt64, rate: Double?)] {
        var ramps: [String: (UInt64, Double?)] = [:]
        var time: UInt64 = 0
        for stage in scenario.stages {
            if case let .rampUp(fleet, rate) = stage.kind {
                let names = fleet.map { [$0] } ?? scenario.fleets.map(\.name).filter { ramps[$0] == nil }
                for name in names {
                    guard let count = scenario.fleets.first(where: { $0.name == name })?.count else { continue }
                    let seconds = stage.duration.seconds
                    ramps[name] = (time, rate ?? (seconds > 0 ? Double(count) / seconds : nil))
                }
            }
            time += stage.duration.nanoseconds
        }
        return ramps
    }

    static func engineConfiguration(
        _ scenario: Scenario, brokers: [SocketAddress], seed: UInt64, lanes: Int = 0
    ) throws -> EngineConfiguration {
        let ramps = ramps(scenario)
        var sources: [SocketAddress] = []
        var fleets: [EngineFleet] = []
        for fleet in scenario.fleets {
            if !fleet.requests.isEmpty || fleet.responder != nil {
                throw UnsupportedFeature(description: "fleet '\(fleet.name)': request/response is not implemented yet")
            }
            for address in fleet.sourceAddresses {
                sources.append(try SocketAddress(ipAddress: address, port: 0))
            }
            let version = version(fleet.protocolVersion)
            var random = SystemRandomNumberGenerator()
            // The will is shared by the fleet's session settings: rendered once, for the fleet (per-client
            // placeholders in will topics are not supported yet and are rejected below).
            let will = fleet.will.map { will in
                MQTTWill(topic: will.topic.render(fleet: fleet.name),
                         payload: will.payload.render(clientID: "", index: 0, fleet: fleet.name, sequence: 0,
                                                      timestampMilliseconds: 0, using: &random),
                         qos: qos(will.qos), retain: will.retain)
            }
            if let will = fleet.will, !will.topic.placeholders.isSubset(of: [.fleet]) {
                throw UnsupportedFeature(description: "fleet '\(fleet.name)': per-client placeholders in the will topic are not supported yet")
            }
            let settings = MQTTSessionSettings(
                version: version, cleanStart: fleet.cleanStart,
                keepAliveSeconds: UInt16(min(fleet.keepalive.nanoseconds / 1_000_000_000, 65_535)),
                sessionExpiryInterval: UInt32(min((fleet.sessionExpiry?.nanoseconds ?? 0) / 1_000_000_000, UInt64(UInt32.max))),
                username: fleet.credentials?.username?.resolved,
                password: fleet.credentials?.password.map { [UInt8]($0.resolved.utf8) },
                will: will, inFlightWindow: UInt16(clamping: fleet.inflightWindow),
                timeouts: timeouts(fleet.ackTimeouts))
            let name = fleet.name
            let clientPattern = fleet.clientID
            let subscriptionPatterns = fleet.subscriptions
            var streams: [EngineStream] = []
            for publish in fleet.publishes {
                streams.append(stream(topic: publish.topic, qos: publish.qos, retain: publish.retain,
                                      schedule: publish.schedule, payload: publish.payload,
                                      behind: publish.behindSchedule, limit: publish.limit, fleet: name))
            }
            if let heartbeat = fleet.heartbeat {
                streams.append(stream(topic: heartbeat.topic, qos: heartbeat.qos, retain: heartbeat.retain,
                                      schedule: .interval(every: heartbeat.interval, jitter: .zero),
                                      payload: heartbeat.payload, behind: .drop, limit: nil, fleet: name))
            }
            let ramp = ramps[fleet.name]
            var engineFleet = EngineFleet(
                name: name, count: fleet.count,
                clientID: { index in clientPattern.render(index: index, fleet: name) },
                session: settings,
                subscriptions: { index, clientID in
                    subscriptionPatterns.map { subscription in
                        MQTTSubscription(
                            filter: subscription.filter.render(clientID: clientID, index: index, fleet: name),
                            options: MQTTSubscriptionOptions(
                                qos: qos(subscription.qos), noLocal: subscription.noLocal,
                                retainAsPublished: subscription.retainAsPublished,
                                retainHandling: MQTTRetainHandling(rawValue: UInt8(subscription.retainHandling)) ?? .sendOnSubscribe))
                    }
                },
                streams: streams, reconnect: reconnect(fleet.reconnect),
                connectRate: ramp?.rate ?? fleet.connectRate,
                maxConnectsInFlight: fleet.maxConnectsInFlight)
            engineFleet.startOffset = ramp?.offset ?? 0
            fleets.append(engineFleet)
        }
        return EngineConfiguration(fleets: fleets, brokers: brokers, sourceAddresses: sources, lanes: lanes, seed: seed)
    }

    static func stream(
        topic: NamePattern, qos scenarioQoS: QoS, retain: Bool, schedule: FleetScenario.PublishSchedule,
        payload: Payload, behind: BehindSchedulePolicy, limit: Int?, fleet: String
    ) -> EngineStream {
        EngineStream(
            topic: { index, clientID in topic.render(clientID: clientID, index: index, fleet: fleet) },
            qos: qos(scenarioQoS), retain: retain, plan: plan(schedule), behind: behind == .drop ? .drop : .catchUp,
            payloadSize: payloadSize(payload), messageLimit: limit.map { UInt64($0) })
    }
}

enum EndToEndPayloadSize {
    /// Header (24 bytes) and actual send time (8 bytes).
    static let minimum = 32
}
