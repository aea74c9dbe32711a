import FleetTransport
import Glibc
import Testing

@Suite("SystemError: failed calls name the call, the errno and its text")
struct SystemCallTests {
    @Test("operations on a descriptor that is not open fail with EBADF, not a crash")
    func badDescriptor() {
        let notOpen = TCPSocket(adopting: -1)
        var byte: UInt8 = 0
        let readError = #expect(throws: SystemError.self) { try withUnsafeMutableBytes(of: &byte) { try notOpen.read(into: $0) } }
        #expect(readError?.description == "read failed: Bad file descriptor (errno 9)")
        let closeError = #expect(throws: SystemError.self) { try notOpen.close() }
        #expect(closeError?.description == "close failed: Bad file descriptor (errno 9)")
        let nameError = #expect(throws: SystemError.self) { try notOpen.localAddress() }
        #expect(nameError?.description == "getsockname failed: Bad file descriptor (errno 9)")
    }

    @Test("binding an address that is not local fails with its errno text")
    func bindNotLocal() throws {
        let socket = try TCPSocket.makeNonBlocking(family: AF_INET)
        defer { try? socket.close() }
        // 192.0.2.1 is TEST-NET-1 (RFC 5737), assigned to no interface here.
        let error = #expect(throws: SystemError.self) { try socket.bind(to: SocketAddress(ipAddress: "192.0.2.1", port: 0)) }
        #expect(error?.description == "bind failed: Cannot assign requested address (errno 99)")
    }

    @Test("an empty read or write buffer is a no-op, not a syscall")
    func emptyBuffers() throws {
        let socket = try TCPSocket.makeNonBlocking(family: AF_INET)
        defer { try? socket.close() }
        #expect(try socket.read(into: UnsafeMutableRawBufferPointer(start: nil, count: 0)) == .bytes(0))
        #expect(try socket.write(from: UnsafeRawBufferPointer(start: nil, count: 0)) == .processed(0))
    }
}
