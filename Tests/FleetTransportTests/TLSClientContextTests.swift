import FleetTransport
import Testing
import FleetTestSupport

@Suite("TLSClientContext and TLSConnection without a broker")
struct TLSClientContextTests {
    @Test("a missing CA file is a configuration error naming the file")
    func missingCAFile() {
        let error = #expect(throws: TLSError.self) {
            _ = try TLSClientContext(configuration: .init(caFile: "/nonexistent/ca.pem"))
        }
        #expect(error?.kind == .configuration)
        #expect(error?.description.hasPrefix("cannot load CA file /nonexistent/ca.pem: ") == true)
    }

    @Test("a client key that does not belong to the certificate is refused when the context is made")
    func mismatchedKey() throws {
        let certificates = try TestCertificates.get()
        let error = #expect(throws: TLSError.self) {
            _ = try TLSClientContext(
                configuration: .init(
                    caFile: certificates.caFile,
                    clientCertificate: .init(
                        certificateFile: certificates.clientCertificate, privateKeyFile: certificates.serverKey)))
        }
        #expect(error?.description == "cannot load client key \(certificates.serverKey): key values mismatch")
    }

    @Test("ALPN names must be 1 to 255 bytes")
    func alpnNames() {
        let error = #expect(throws: TLSError.self) {
            _ = try TLSClientContext(configuration: .init(insecureSkipVerify: true, alpnProtocols: ["mqtt", ""]))
        }
        #expect(error?.description == "ALPN protocol name must be 1-255 bytes: \"\"")
    }

    @Test("the system store loads when no CA file is given")
    func systemStore() throws {
        let context = try TLSClientContext()
        #expect(context.configuration.caFile == nil)
        #expect(!context.configuration.insecureSkipVerify)
    }

    @Test("the first handshake step queues a ClientHello record and waits to read")
    func clientHello() throws {
        let context = try TLSClientContext(configuration: .init(insecureSkipVerify: true))
        let connection = try context.makeConnection(serverName: "broker.example.com")
        let outbound = OutboundBuffer()
        #expect(connection.handshake(input: [], outbound: outbound) == .wantRead)
        let record = Array(outbound.readableBytes)
        // RFC 8446 §5.1: content type 22 (handshake), legacy version 0x0301, length; §4.1.2: ClientHello is type 1.
        #expect(record.count > 9)
        #expect(Array(record.prefix(3)) == [0x16, 0x03, 0x01])
        #expect(Int(record[3]) << 8 | Int(record[4]) == record.count - 5)
        #expect(record[5] == 0x01)
        // SNI (RFC 6066 §3) carries the host name.
        #expect(String(decoding: record, as: UTF8.self).contains("broker.example.com"))
    }

    @Test("no SNI is sent for an IP literal (RFC 6066 §3)")
    func noSNIForIP() throws {
        let context = try TLSClientContext(configuration: .init(insecureSkipVerify: true))
        let connection = try context.makeConnection(serverName: "127.0.0.1")
        let outbound = OutboundBuffer()
        #expect(connection.handshake(input: [], outbound: outbound) == .wantRead)
        #expect(!String(decoding: Array(outbound.readableBytes), as: UTF8.self).contains("127.0.0.1"))
    }

    @Test("encrypt and decrypt before the handshake are refused")
    func beforeHandshake() throws {
        let context = try TLSClientContext(configuration: .init(insecureSkipVerify: true))
        let connection = try context.makeConnection(serverName: "localhost")
        let outbound = OutboundBuffer()
        let error = #expect(throws: TLSError.self) { try connection.encrypt([1, 2, 3], into: outbound) }
        #expect(error?.description == "encrypt before the TLS handshake completed")
        #expect(outbound.isEmpty)
    }

    @Test("garbage from the server fails the handshake with OpenSSL's reason")
    func garbageHandshake() throws {
        let context = try TLSClientContext(configuration: .init(insecureSkipVerify: true))
        let connection = try context.makeConnection(serverName: "localhost")
        let outbound = OutboundBuffer()
        _ = connection.handshake(input: [], outbound: outbound)
        let status = connection.handshake(input: Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8), outbound: outbound)
        #expect(status == .failure(TLSError(.protocolError, "TLS error: wrong version number")))
    }

    @Test("per-client certificate paths replace every {client_id}")
    func perClientPaths() {
        let certificate = TLSClientCertificate.resolving(
            certificatePattern: "certs/{client_id}/{client_id}.pem", privateKeyPattern: "keys/{client_id}.key",
            clientID: "car-17")
        #expect(certificate == TLSClientCertificate(certificateFile: "certs/car-17/car-17.pem", privateKeyFile: "keys/car-17.key"))
    }
}
