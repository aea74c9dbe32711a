import FleetTransport
import Glibc
import Testing

@Suite("SocketAddress: parsing and resolution")
struct SocketAddressTests {
    @Test(
        "host:port splits into its parts",
        arguments: [
            ("127.0.0.1:1883", "127.0.0.1", 1883),
            ("[::1]:8883", "::1", 8883),
            ("localhost:1", "localhost", 1),
            ("broker.example:65535", "broker.example", 65535),
        ] as [(String, String, UInt16)])
    func splits(input: String, host: String, port: UInt16) throws {
        let parts = try SocketAddress.splitHostPort(input)
        #expect(parts.host == host)
        #expect(parts.port == port)
    }

    @Test(
        "bad host:port input gets an error naming it",
        arguments: [
            ("localhost", "missing port in \"localhost\" (expected host:port or [ipv6]:port)"),
            ("::1:1883", "missing port in \"::1:1883\" (expected host:port or [ipv6]:port)"),
            ("[::1]1883", "missing port in \"[::1]1883\" (expected host:port or [ipv6]:port)"),
            ("[::1:1883", "missing port in \"[::1:1883\" (expected host:port or [ipv6]:port)"),
            (":1883", "missing port in \":1883\" (expected host:port or [ipv6]:port)"),
            ("host:0", "invalid port in \"host:0\" (expected 1-65535)"),
            ("host:65536", "invalid port in \"host:65536\" (expected 1-65535)"),
            ("host:", "invalid port in \"host:\" (expected 1-65535)"),
            ("host:18x3", "invalid port in \"host:18x3\" (expected 1-65535)"),
        ])
    func rejects(input: String, message: String) {
        let error = #expect(throws: AddressError.self) { try SocketAddress.splitHostPort(input) }
        #expect(error?.description == message)
    }

    @Test(
        "numeric addresses parse to the right family and print back the same",
        arguments: [
            ("127.0.0.1", 1883, AF_INET, "127.0.0.1:1883"),
            ("127.0.0.9", 0, AF_INET, "127.0.0.9:0"),
            ("::1", 1883, AF_INET6, "[::1]:1883"),
            ("fd00::2", 443, AF_INET6, "[fd00::2]:443"),
        ] as [(String, UInt16, Int32, String)])
    func numeric(ip: String, port: UInt16, family: Int32, text: String) throws {
        let address = try SocketAddress(ipAddress: ip, port: port)
        #expect(address.family == family)
        #expect(address.port == port)
        #expect(address.ipAddress == ip)
        #expect(address.description == text)
        #expect(address.withPort(7).port == 7)
        #expect(address.withPort(7).ipAddress == ip)
    }

    @Test("a name is not a numeric address")
    func notNumeric() {
        let error = #expect(throws: AddressError.self) { try SocketAddress(ipAddress: "localhost", port: 1) }
        #expect(error?.description == "\"localhost\" is not a numeric IPv4 or IPv6 address")
    }

    @Test("localhost resolves to loopback addresses only, 127.0.0.1 among them")
    func resolvesLocalhost() throws {
        let addresses = try SocketAddress.resolve("localhost:1883")
        #expect(addresses.contains(try SocketAddress(ipAddress: "127.0.0.1", port: 1883)))
        for address in addresses {
            #expect(address.port == 1883)
            #expect(address.ipAddress == "127.0.0.1" || address.ipAddress == "::1")
        }
    }

    @Test("a numeric host resolves to itself without a lookup")
    func resolvesNumeric() throws {
        #expect(try SocketAddress.resolve("[::1]:1") == [try SocketAddress(ipAddress: "::1", port: 1)])
    }

    @Test("an unknown name fails with the resolver's reason")
    func unknownName() {
        // .invalid is reserved (RFC 6761) and never resolves.
        let error = #expect(throws: AddressError.self) { try SocketAddress.resolve(host: "no-such-host.invalid", port: 1) }
        guard case .resolutionFailed(let host, let reason) = error else {
            Issue.record("expected resolutionFailed, got \(String(describing: error))")
            return
        }
        #expect(host == "no-such-host.invalid")
        #expect(!reason.isEmpty)
    }
}

@Suite("SocketAddress: loopback")
struct SocketAddressLoopbackTests {
    @Test(
        "127.0.0.0/8, ::1 and IPv4-mapped 127.x are loopback; other addresses are not",
        arguments: [
            ("127.0.0.1", true), ("127.0.0.9", true), ("127.255.255.254", true),
            ("::1", true), ("::ffff:127.0.0.2", true),
            ("128.0.0.1", false), ("10.0.0.1", false), ("0.0.0.0", false), ("126.255.255.255", false),
            ("::", false), ("::2", false), ("fe80::1", false), ("::ffff:10.0.0.1", false),
        ] as [(String, Bool)])
    func loopback(address: String, expected: Bool) throws {
        #expect(try SocketAddress(ipAddress: address, port: 1883).isLoopback == expected)
    }
}
