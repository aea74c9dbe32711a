#if canImport(Glibc)
import Glibc
#endif

/// Small blocking socket helpers for starting the broker; off every hot path, so plain and simple.
enum LoopbackPort {
    /// A free port on 127.0.0.1 outside the kernel's ephemeral range.
    ///
    /// A port from bind(0) lies inside the ephemeral range, where it is only safe while the broker holds it: during
    /// a restart (a scenario fault) thousands of reconnecting clients take ephemeral source ports, and if one lands
    /// on the broker's port mosquitto cannot bind it again. So candidates are drawn at random from below the range
    /// (10000 up to its start), each checked by binding it; bind(0) is the fallback when that space is unavailable.
    static func free() throws(MosquittoError) -> UInt16 {
        let ephemeralStart = ephemeralRangeStart()
        if ephemeralStart > 10_100 {
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<200 {
                let candidate = UInt16.random(in: 10_000...(ephemeralStart - 1), using: &generator)
                if (try? bind(port: candidate)) != nil { return candidate }
            }
        }
        return try bind(port: 0)
    }

    /// The first port of net.ipv4.ip_local_port_range (Linux default 32768).
    static func ephemeralRangeStart() -> UInt16 {
        guard let file = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r") else { return 32_768 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 64)
        guard fgets(&line, Int32(line.count), file) != nil else { return 32_768 }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let first = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first
        return first.flatMap { UInt16($0) } ?? 32_768
    }

    /// Binds 127.0.0.1:port (0: the kernel picks), returns the bound port, and closes the socket.
    static func bind(port: UInt16) throws(MosquittoError) -> UInt16 {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if socketDescriptor < 0 { throw systemError("socket") }
        defer { close(socketDescriptor) }
        var address = loopbackAddress(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if bound != 0 { throw systemError("bind") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketDescriptor, $0, &length) }
        }
        if named != 0 { throw systemError("getsockname") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// True when a blocking TCP connect to 127.0.0.1:port succeeds (the listener exists; refused otherwise fast).
    static func acceptsConnections(port: UInt16) -> Bool {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if socketDescriptor < 0 { return false }
        defer { close(socketDescriptor) }
        var address = loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return connected == 0
    }

    static func loopbackAddress(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian  // 127.0.0.1
        return address
    }

    static func systemError(_ call: String) -> MosquittoError {
        let code = errno
        return .systemCallFailed(call: call, errno: code, message: String(cString: strerror(code)))
    }
}
