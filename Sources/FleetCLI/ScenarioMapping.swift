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
/// nanoseconds, scenario enums onto the engine's.
enum ScenarioMapping {
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
        case .max: return .closed
        }
    }

    /// Ramp stages: when each fleet starts connecting and how its connects are spread.
    static func ramps(_ scenario: Scenario) -> [String: (offset: UInt64, ramp: ConnectRamp)] {
        var ramps: [String: (UInt64, ConnectRamp)] = [:]
        var time: UInt64 = 0
        for stage in scenario.stages {
            if case let .rampUp(fleet, rate) = stage.kind {
                let names = fleet.map { [$0] } ?? scenario.fleets.map(\.name).filter { ramps[$0] == nil }
                for name in names {
                    ramps[name] = (time, rate.map { .rate(perSecond: $0) } ?? .over(duration: stage.duration.nanoseconds))
                }
            }
            time += stage.duration.nanoseconds
        }
        return ramps
    }

    /// An engine payload for a scenario payload: filler becomes the binary fleetbench payload; a template goes to
    /// the engine as the scenario layer compiled it (one compiler, so JSON escaping survives), with the fleet name
    /// written in (it is fixed per fleet).
    static func payload(_ payload: Payload, fleet: String) throws -> EnginePayload {
        switch payload {
        case .filler(let size):
            return .binary(size: size)
        case .template(let template):
            return .template(FleetEngine.PayloadTemplate(template, fleet: fleet))
        }
    }

    static func engineConfiguration(
        _ scenario: Scenario, brokers: [SocketAddress], seed: UInt64, lanes: Int = 0,
        endpoints: [RunBroker] = [], embeddedBroker: Bool = false
    ) throws -> EngineConfiguration {
        let ramps = ramps(scenario)
        var sources: [SocketAddress] = []
        var fleets: [EngineFleet] = []
        for (fleetPosition, fleet) in scenario.fleets.enumerated() {
            for address in fleet.sourceAddresses {
                sources.append(try SocketAddress(ipAddress: address, port: 0))
            }
            let version = fleet.protocolVersion
            let willSpecification = fleet.will
            let fleetName = fleet.name
            @Sendable func willFor(_ index: Int, _ clientID: String) -> MQTTWill? {
                guard let will = willSpecification else { return nil }
                // From the run's seed like every other random choice, on streams of their own (top bit set:
                // the engine's per-client generators use the client's index), so a seed repeats the wills too.
                var random = SeededRandom(seed: seed, stream: 1 << 63 | UInt64(fleetPosition) << 32 | UInt64(index))
                return MQTTWill(
                    topic: will.topic.render(clientID: clientID, index: index, fleet: fleetName),
                    payload: will.payload.render(clientID: clientID, index: index, fleet: fleetName, sequence: 0,
                                                 timestampMilliseconds: 0, using: &random),
                    qos: will.qos, retain: will.retain, properties: willProperties(will))
            }
            let will = willFor(0, "")
            // A will that names the client (its topic or payload) needs settings per client.
            let willVaries = fleet.will.map { will in
                !will.topic.placeholders.isSubset(of: [.fleet]) || will.payload.segments.contains {
                    if case .generator(let generator, _) = $0 { return generator != .fleet }
                    return false
                }
            } ?? false
            let keepAlive = UInt16(min(fleet.keepalive.nanoseconds / 1_000_000_000, 65_535))
            let expiry = UInt32(min((fleet.sessionExpiry?.nanoseconds ?? 0) / 1_000_000_000, UInt64(UInt32.max)))
            let username = fleet.credentials?.username?.resolved
            let password = fleet.credentials?.password.map { [UInt8]($0.resolved.utf8) }
            let window = UInt16(clamping: max(fleet.inflightWindow, 1))
            let ackTimeouts = timeouts(fleet.ackTimeouts)
            let cleanStart = fleet.cleanStart
            @Sendable func settings(will: MQTTWill?) -> MQTTSessionSettings {
                MQTTSessionSettings(
                    version: version, cleanStart: cleanStart, keepAliveSeconds: keepAlive,
                    sessionExpiryInterval: expiry, username: username, password: password, will: will,
                    inFlightWindow: window, timeouts: ackTimeouts)
            }
            let sharedSettings = settings(will: will)
            let name = fleet.name
            let clientPattern = fleet.clientID
            let subscriptionPatterns = fleet.subscriptions
            var streams: [EngineStream] = []
            for publish in fleet.publishes {
                var publishStream = try stream(topic: publish.topic, qos: publish.qos, retain: publish.retain,
                                               schedule: publish.schedule, payload: publish.payload,
                                               behind: publish.behindSchedule, limit: publish.limit, fleet: name)
                publishStream.offline = offlineBuffer(publish.offline)
                streams.append(publishStream)
            }
            if let heartbeat = fleet.heartbeat {
                streams.append(try stream(topic: heartbeat.topic, qos: heartbeat.qos, retain: heartbeat.retain,
                                          schedule: .interval(every: heartbeat.interval, jitter: .zero),
                                          payload: heartbeat.payload, behind: .drop, limit: nil, fleet: name))
            }
            for request in fleet.requests {
                var requestStream = try stream(
                    topic: request.topic, qos: request.qos, retain: false, schedule: request.schedule,
                    payload: request.payload, behind: .catchUp, limit: nil, fleet: name)
                let replyPattern = request.responseTopic
                requestStream.request = EngineRequest(
                    targetFleet: request.targetFleet, selection: .roundRobin, timeout: request.timeout.nanoseconds,
                    replyTopic: { index, clientID in replyPattern.render(clientID: clientID, index: index, fleet: name) })
                streams.append(requestStream)
            }
            let ramp = ramps[fleet.name]
            var engineFleet = EngineFleet(
                name: name, count: fleet.count,
                clientID: { index in clientPattern.render(index: index, fleet: name) },
                session: sharedSettings,
                subscriptions: { index, clientID in
                    subscriptionPatterns.map { subscription in
                        MQTTSubscription(
                            filter: subscription.filter.render(clientID: clientID, index: index, fleet: name),
                            options: MQTTSubscriptionOptions(
                                qos: subscription.qos, noLocal: subscription.noLocal,
                                retainAsPublished: subscription.retainAsPublished,
                                retainHandling: MQTTRetainHandling(rawValue: UInt8(subscription.retainHandling)) ?? .sendOnSubscribe))
                    }
                },
                streams: streams, reconnect: reconnect(fleet.reconnect),
                connectRate: fleet.connectRate,
                maxConnectsInFlight: fleet.maxConnectsInFlight)
            if !endpoints.isEmpty {
                engineFleet.endpoints = try Self.endpoints(for: fleet, brokers: endpoints, embedded: embeddedBroker)
            }
            engineFleet.connectTimeout = fleet.ackTimeouts.connect.nanoseconds
            engineFleet.startOffset = ramp?.offset ?? 0
            engineFleet.ramp = ramp?.ramp
            engineFleet.networks = fleet.networks.map(Self.networkProfile)
            if willVaries {
                engineFleet.sessionSettings = { index, clientID in settings(will: willFor(index, clientID)) }
            }
            try applyVehicleAndIdentities(fleet, to: &engineFleet, seed: seed)
            if let responder = fleet.responder {
                let commandPattern = responder.topic
                let replyPattern = responder.replyTopic
                var replyTopic: (@Sendable (Int, String) -> String)?
                if let replyPattern {
                    replyTopic = { index, clientID in replyPattern.render(clientID: clientID, index: index, fleet: name) }
                }
                engineFleet.responder = EngineResponder(
                    commandTopic: { index, clientID in commandPattern.render(clientID: clientID, index: index, fleet: name) },
                    replyTopic: replyTopic, qos: responder.qos)
            }
            fleets.append(engineFleet)
        }
        var configuration = EngineConfiguration(fleets: fleets, brokers: brokers, sourceAddresses: sources, lanes: lanes,
                                                seed: seed, readyTimeout: scenario.readyTimeoutDuration.nanoseconds,
                                                drainTimeout: scenario.drainDuration.nanoseconds)
        configuration.maxConnectsInFlightPerBroker = scenario.maxConnectsInFlightPerBroker
        return configuration
    }

    static func stream(
        topic: NamePattern, qos: MQTTQoS, retain: Bool, schedule: FleetScenario.PublishSchedule,
        payload scenarioPayload: Payload, behind: BehindSchedulePolicy, limit: Int?, fleet: String
    ) throws -> EngineStream {
        var messageLimit = limit.map { UInt64($0) }
        if case .onConnect(let count) = schedule { messageLimit = UInt64(max(count, 1)) }
        return EngineStream(
            topic: { index, clientID in topic.render(clientID: clientID, index: index, fleet: fleet) },
            qos: qos, retain: retain, plan: plan(schedule), behind: behind == .drop ? .drop : .catchUp,
            payload: try payload(scenarioPayload, fleet: fleet), messageLimit: messageLimit)
    }

    static func willProperties(_ will: Will) -> [MQTTProperty] {
        var properties: [MQTTProperty] = []
        if let delay = will.delay { properties.append(.willDelayInterval(UInt32(min(delay.nanoseconds / 1_000_000_000, UInt64(UInt32.max))))) }
        if let type = will.properties.contentType { properties.append(.contentType(type)) }
        if let expiry = will.properties.messageExpiry {
            properties.append(.messageExpiryInterval(UInt32(min(expiry.nanoseconds / 1_000_000_000, UInt64(UInt32.max)))))
        }
        if let utf8 = will.properties.payloadIsUTF8 { properties.append(.payloadFormatIndicator(utf8 ? 1 : 0)) }
        if let topic = will.properties.responseTopic { properties.append(.responseTopic(topic)) }
        for property in will.properties.userProperties { properties.append(.userProperty(name: property.name, value: property.value)) }
        return properties
    }

    /// The scenario's `network` as the engine runs it (durations in ns, rates in bit/s).
    static func networkProfile(_ conditions: NetworkConditions) -> EngineNetworkProfile {
        func delay(_ value: NetworkConditions.Delay) -> NetworkDelay {
            switch value {
            case .fixed(let span): return .fixed(span.nanoseconds)
            case .distribution(let p50, let p99): return .distribution(p50: p50.nanoseconds, p99: p99.nanoseconds)
            }
        }
        var profile = EngineNetworkProfile(name: conditions.name)
        profile.fraction = conditions.fraction
        profile.latencyUp = delay(conditions.latencyUp)
        profile.latencyDown = delay(conditions.latencyDown)
        profile.jitter = conditions.jitter.nanoseconds
        profile.bandwidthUp = conditions.bandwidthUp ?? 0
        profile.bandwidthDown = conditions.bandwidthDown ?? 0
        profile.loss = conditions.loss.map {
            NetworkLoss(rate: $0.rate, burst: $0.burst, dropInterval: $0.dropInterval?.nanoseconds ?? 0)
        }
        profile.outages = conditions.outages.map {
            NetworkOutages(meanInterval: $0.meanInterval.nanoseconds, duration: $0.minimum.nanoseconds...$0.maximum.nanoseconds)
        }
        return profile
    }
}

/// A scenario's `network` (a preset or an object) as the engine runs it; for benchmarks and tools that build
/// engine configurations without a scenario file.
public func engineNetworkProfile(_ conditions: NetworkConditions) -> EngineNetworkProfile {
    ScenarioMapping.networkProfile(conditions)
}
