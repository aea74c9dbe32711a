import CLinux
import Glibc

/// A non-blocking listening socket, for fake brokers in test support and for transport tests.
public struct TCPListener: Sendable, Hashable {
    public let socket: TCPSocket
    public var fileDescriptor: Int32 { socket.fileDescriptor }

    /// Binds (SO_REUSEADDR, so a restarted fake broker gets its port back) and listens. Port 0 picks a free port.
    public static func listen(on address: SocketAddress, backlog: Int32 = 1024) throws(SystemError) -> TCPListener {
        let listening = try TCPSocket.makeNonBlocking(family: address.family)
        do {
            try listening.setOption(level: SOL_SOCKET, name: SO_REUSEADDR, value: 1)
            _ = try SystemCall.checked("bind") { address.withSockAddr { Glibc.bind(listening.fileDescriptor, $0, $1) } }
            _ = try SystemCall.checked("listen") { Glibc.listen(listening.fileDescriptor, backlog) }
        } catch {
            try? listening.close()
            throw error
        }
        return TCPListener(socket: listening)
    }

    /// The bound address, with the port the kernel chose.
    public func localAddress() throws(SystemError) -> SocketAddress { try socket.localAddress() }

    /// Accepts one pending connection as a non-blocking socket, or `.wouldBlock` when none is waiting.
    public func accept() throws(SystemError) -> IOResult<TCPSocket> {
        switch try SystemCall.nonBlocking("accept", { fb_accept_nonblocking(fileDescriptor) }) {
        case .processed(let descriptor): return .processed(TCPSocket(adopting: descriptor))
        case .wouldBlock: return .wouldBlock
        }
    }

    public func close() throws(SystemError) { try socket.close() }
}
