import Glibc

/// Why an address could not be parsed or resolved. Messages name the offending input.
public enum AddressError: Error, Equatable, Sendable, CustomStringConvertible {
    case missingPort(String)
    case invalidPort(String)
    case notNumeric(String)
    case resolutionFailed(host: String, reason: String)

    public var description: String {
        switch self {
        case .missingPort(let input): return "missing port in \"\(input)\" (expected host:port or [ipv6]:port)"
        case .invalidPort(let input): return "invalid port in \"\(input)\" (expected 1-65535)"
        case .notNumeric(let input): return "\"\(input)\" is not a numeric IPv4 or IPv6 address"
        case .resolutionFailed(let host, let reason): return "cannot resolve \"\(host)\": \(reason)"
        }
    }
}

/// An IPv4 or IPv6 socket address, stored in the C layout so connect/bind use it without conversion.
public enum SocketAddress: Sendable, Equatable, Hashable, CustomStringConvertible {
    case v4(sockaddr_in)
    case v6(sockaddr_in6)

    /// A numeric address ("127.0.0.2", "::1"); no name lookup.
    public init(ipAddress: String, port: UInt16) throws(AddressError) {
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, ipAddress, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            self = .v4(v4)
            return
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, ipAddress, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            self = .v6(v6)
            return
        }
        throw .notNumeric(ipAddress)
    }

    /// Splits "host:port" or "[v6]:port" into its parts; the port must be 1-65535.
    public static func splitHostPort(_ input: String) throws(AddressError) -> (host: String, port: UInt16) {
        let host: Substring
        let portText: Substring
        if input.hasPrefix("[") {
            guard let close = input.firstIndex(of: "]") else { throw .missingPort(input) }
            host = input[input.index(after: input.startIndex)..<close]
            let rest = input[input.index(after: close)...]
            guard rest.hasPrefix(":") else { throw .missingPort(input) }
            portText = rest.dropFirst()
        } else {
            guard let colon = input.lastIndex(of: ":") else { throw .missingPort(input) }
            host = input[..<colon]
            // A bare IPv6 address without brackets is ambiguous ("::1:1883"); require brackets.
            if host.contains(":") { throw .missingPort(input) }
            portText = input[input.index(after: colon)...]
        }
        guard !host.isEmpty else { throw .missingPort(input) }
        guard let port = UInt16(portText), port != 0 else { throw .invalidPort(input) }
        return (String(host), port)
    }

    /// Addresses for `host` (numeric, or a name such as `localhost` through getaddrinfo), in the resolver's order.
    /// getaddrinfo may block on DNS; call it while preparing a run, never on a lane.
    public static func resolve(host: String, port: UInt16) throws(AddressError) -> [SocketAddress] {
        if let numeric = try? SocketAddress(ipAddress: host, port: port) { return [numeric] }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            throw .resolutionFailed(host: host, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var cursor = list
        while let entry = cursor {
            if let raw = entry.pointee.ai_addr {
                if entry.pointee.ai_family == AF_INET {
                    let value = UnsafeRawPointer(raw).loadUnaligned(as: sockaddr_in.self)
                    addresses.append(.v4(value))
                } else if entry.pointee.ai_family == AF_INET6 {
                    let value = UnsafeRawPointer(raw).loadUnaligned(as: sockaddr_in6.self)
                    addresses.append(.v6(value))
                }
            }
            cursor = entry.pointee.ai_next
        }
        var unique: [SocketAddress] = []
        for address in addresses where !unique.contains(address) { unique.append(address) }
        if unique.isEmpty { throw .resolutionFailed(host: host, reason: "no IPv4 or IPv6 address") }
        return unique
    }

    /// Parses and resolves "host:port".
    public static func resolve(_ hostPort: String) throws(AddressError) -> [SocketAddress] {
        let (host, port) = try splitHostPort(hostPort)
        return try resolve(host: host, port: port)
    }

    public var family: Int32 {
        switch self {
        case .v4: return AF_INET
        case .v6: return AF_INET6
        }
    }

    public var port: UInt16 {
        switch self {
        case .v4(let address): return UInt16(bigEndian: address.sin_port)
        case .v6(let address): return UInt16(bigEndian: address.sin6_port)
        }
    }

    /// 127.0.0.0/8 or ::1 (or ::ffff:127.x.y.z): a peer on this machine.
    public var isLoopback: Bool {
        switch self {
        case .v4(let address):
            return UInt32(bigEndian: address.sin_addr.s_addr) >> 24 == 127
        case .v6(let address):
            let bytes = withUnsafeBytes(of: address.sin6_addr) { Array($0) }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
            return bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
        }
    }

    /// The numeric address without the port, e.g. "127.0.0.2" or "::1".
    public var ipAddress: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch self {
        case .v4(var address):
            _ = inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
        case .v6(var address):
            _ = inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count))
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The same address with another port (port 0 for a source address lets the kernel pick).
    public func withPort(_ port: UInt16) -> SocketAddress {
        switch self {
        case .v4(var address):
            address.sin_port = port.bigEndian
            return .v4(address)
        case .v6(var address):
            address.sin6_port = port.bigEndian
            return .v6(address)
        }
    }

    /// "127.0.0.1:1883" or "[::1]:1883".
    public var description: String {
        switch self {
        case .v4: return "\(ipAddress):\(port)"
        case .v6: return "[\(ipAddress)]:\(port)"
        }
    }

    /// Calls `body` with a sockaddr pointer and its length, for bind/connect.
    @inline(__always)
    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        switch self {
        case .v4(var address):
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .v6(var address):
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }

    /// Reads a sockaddr_storage filled by getsockname/getpeername/accept.
    init?(storage: sockaddr_storage) {
        var copy = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            self = withUnsafeBytes(of: &copy) { .v4($0.loadUnaligned(as: sockaddr_in.self)) }
        case AF_INET6:
            self = withUnsafeBytes(of: &copy) { .v6($0.loadUnaligned(as: sockaddr_in6.self)) }
        default:
            return nil
        }
    }

    // sockaddr_in/sockaddr_in6 have padding and no Equatable of their own: compare the meaningful fields.
    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        switch (lhs, rhs) {
        case (.v4(let left), .v4(let right)):
            return left.sin_port == right.sin_port && left.sin_addr.s_addr == right.sin_addr.s_addr
        case (.v6(var left), .v6(var right)):
            let sameAddress = withUnsafeBytes(of: &left.sin6_addr) { leftBytes in
                withUnsafeBytes(of: &right.sin6_addr) { rightBytes in leftBytes.elementsEqual(rightBytes) }
            }
            return sameAddress && left.sin6_port == right.sin6_port && left.sin6_scope_id == right.sin6_scope_id
        default:
            return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(family)
        hasher.combine(ipAddress)
        hasher.combine(port)
    }
}
