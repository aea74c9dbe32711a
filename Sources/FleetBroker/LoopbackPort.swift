#if canImport(Glibc)
import Glibc
#endif

/// Small blocking socket helpers for starting the broker; off every hot path, so plain and simple.
enum LoopbackPort {
    /// Asks the kernel for a free port on 127.0.0.1: bind port 0, read the port, close. Another process could
    /// take it before mosquitto binds it; the window is short and a failed bind shows in the start error.
    static func free() throws(MosquittoError) -> UInt16 {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if socketDescriptor < 0 { throw systemError("socket") }
        defer { close(socketDescriptor) }
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
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
