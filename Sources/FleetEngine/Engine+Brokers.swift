import FleetTransport

/// A subscription that needs messages published through another broker address, for brokers that share nothing
/// (several embedded mosquitto processes, unbridged).
public struct CrossBrokerSubscription: Sendable, Equatable, CustomStringConvertible {
    /// (subscriber, stream) pairs of this process's clients whose publisher connects to another broker address.
    public var pairs: Int
    /// One of them, for the message: the subscriber's client id and the stream's topic.
    public var subscriber: String
    public var topic: String

    public var description: String {
        "\(pairs) subscription\(pairs == 1 ? "" : "s") would need messages published through another broker "
            + "(e.g. \(subscriber) is subscribed to \(topic), published through another one)"
    }
}

extension Engine {
    /// The broker address every client of the run connects to, by global client index, as `init` assigns them
    /// (segments and the unsegmented run alike): a fleet's endpoints by its client index, else the brokers by
    /// global index.
    func brokerAddressOfEveryClient() -> [SocketAddress] {
        var addresses: [SocketAddress] = []
        let brokers = configuration.brokers
        for fleet in fleets {
            let endpoints = fleet.configuration.endpoints
            for index in 0..<fleet.configuration.count {
                let global = addresses.count
                addresses.append(endpoints.isEmpty ? brokers[global % brokers.count] : endpoints[index % endpoints.count].address)
            }
        }
        return addresses
    }

    /// The broker addresses of each shared-subscription group's members (of the whole run), by delivery key.
    func brokerAddressesOfGroups(_ addresses: [SocketAddress]) -> [UInt64: Set<SocketAddress>] {
        guard !shareGroups.isEmpty else { return [:] }
        var groups: [UInt64: Set<SocketAddress>] = [:]
        var global = 0
        for fleet in fleets {
            let settings = fleet.configuration
            for index in 0..<settings.count {
                defer { global += 1 }
                for shared in Self.splitSharedSubscriptions(settings.subscriptions(index, settings.clientID(index))).shared {
                    guard let group = shareGroups.firstIndex(where: { $0.name == shared.group }) else { continue }
                    groups[Self.groupDeliveryKey(group), default: []].insert(addresses[global])
                }
            }
        }
        return groups
    }

    /// Subscriptions of this process's clients that match a tracked stream published by a client of another broker
    /// address; nil when every subscriber gets its messages from its own broker. Brokers that share nothing (the
    /// embedded mosquitto processes of a fleet too large for one) would never deliver those: the run would report
    /// them lost. A shared subscription's group gets a message from any member on the publisher's broker (one
    /// copy, as from one broker), so it counts only when no member of its group is there.
    public func subscriptionsAcrossBrokers() -> CrossBrokerSubscription? {
        let addresses = brokerAddressOfEveryClient()
        let groups = brokerAddressesOfGroups(addresses)
        var publisherOfStream: [Int] = []
        var global = 0
        for fleet in fleets {
            let perClient = fleet.configuration.streams.count
            for _ in 0..<fleet.configuration.count {
                for _ in 0..<perClient { publisherOfStream.append(global) }
                global += 1
            }
        }
        var found: CrossBrokerSubscription?
        for lane in lanes {
            for client in lane.clients {
                for (position, stream) in client.entitledStreams.enumerated() where Int(stream) < publisherOfStream.count {
                    let publisher = addresses[publisherOfStream[Int(stream)]]
                    let key = position < client.entitledKeys.count ? client.entitledKeys[position] : client.deliveryKey
                    if key & Self.groupKeyTag != 0 {
                        guard groups[key]?.contains(publisher) != true else { continue }
                    } else if publisher == client.broker {
                        continue
                    }
                    if found == nil {
                        found = CrossBrokerSubscription(pairs: 0, subscriber: client.session.clientID,
                                                        topic: streamTopic(Int(stream)))
                    }
                    found!.pairs += 1
                }
            }
        }
        return found
    }
}
