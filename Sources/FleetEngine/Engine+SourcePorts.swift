import FleetTransport

/// Too many clients from one source address to one broker address: past about half of the ephemeral port
/// range every connect scans all of it, and past all of it connects fail with EADDRNOTAVAIL.
public struct CrowdedSourceAddress: Sendable, Equatable, CustomStringConvertible {
    /// The bound source address, or nil when the kernel chooses (the interface's address).
    public var source: SocketAddress?
    public var broker: SocketAddress
    public var clients: Int
    /// Clients one source address serves well (`Engine.clientsPerSourceAddress`).
    public var limit: Int

    public var description: String {
        "\(clients) clients would connect to \(broker) from "
            + (source.map { "source address \($0.ipAddress)" } ?? "one source address (none named)")
            + "; above \(limit) every connect scans the ephemeral port range (net.ipv4.ip_local_port_range)"
            + " and beyond it connects fail: name more source_addresses in the scenario"
    }
}

extension Engine {
    /// How many clients one source address serves well towards one broker address: 70 % of the even half of the
    /// ephemeral port range, which connect() takes first (see `defaultSourceAddresses`), at least 1,000.
    public static func clientsPerSourceAddress(ephemeralPorts: Int) -> Int {
        max(1_000, ephemeralPorts * 7 / 20)
    }

    /// (source, broker) pairs with more clients than `clientsPerSourceAddress`, from the clients as the engine
    /// assigned them, largest first. Empty for a local IPv4 broker (source addresses are spread for it).
    public func crowdedSourceAddresses(ephemeralPorts: Int = Engine.ephemeralPortCount()) -> [CrowdedSourceAddress] {
        struct Pair: Hashable {
            var source: SocketAddress?
            var broker: SocketAddress
        }
        var counts: [Pair: Int] = [:]
        for lane in lanes {
            for client in lane.clients { counts[Pair(source: client.source, broker: client.broker), default: 0] += 1 }
        }
        let limit = Self.clientsPerSourceAddress(ephemeralPorts: ephemeralPorts)
        return counts.filter { $0.value > limit }
            .map { CrowdedSourceAddress(source: $0.key.source, broker: $0.key.broker, clients: $0.value, limit: limit) }
            .sorted {
                ($0.clients, $0.broker.description, $0.source?.description ?? "")
                    > ($1.clients, $1.broker.description, $1.source?.description ?? "")
            }
    }
}
