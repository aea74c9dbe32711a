import COpenSSL
import Glibc

/// One client's TLS session as a byte layer: ciphertext in, plaintext out, and plaintext in, ciphertext appended to
/// the connection's `OutboundBuffer`. It never touches the socket, so it runs on any lane's epoll loop unchanged:
///
///     connect done       -> handshake(input: [], outbound:) -> flush outbound
///     socket readable    -> read ciphertext -> handshake(input:outbound:) until .done, then
///                           decrypt(_:outbound:scratch:deliver:) -> plaintext chunks -> next layer
///     bytes to send      -> encrypt(_:into: outbound) -> flush outbound
///     closing            -> close(outbound:) queues close_notify -> flush -> close the socket
///
/// OpenSSL talks to a custom BIO whose read callback takes from the ciphertext the caller passed in and whose write
/// callback appends straight to the caller's OutboundBuffer: no memory BIO buffers per connection, no extra copy.
/// After any call `outbound` may hold bytes (handshake records, alerts, close_notify, a TLS 1.3 key update reply):
/// flush it whenever it is not empty.
///
/// Owned by one lane; not thread-safe.
public final class TLSConnection {
    public enum HandshakeStatus: Equatable, Sendable {
        case done
        /// Waiting for the broker: flush `outbound`, then call again with the next ciphertext read.
        case wantRead
        /// `outbound` is at its maximum: flush it, then call again (with no new input).
        case wantWrite
        case failure(TLSError)
    }

    /// What `decrypt` found besides plaintext.
    public enum ReadStatus: Equatable, Sendable {
        case open
        /// The broker sent close_notify: no more data will come; reply with `close(outbound:)` and close.
        case closedByPeer
    }

    public let serverName: String
    private let context: TLSClientContext
    private let ssl: OpaquePointer
    public private(set) var isHandshakeComplete = false

    // The I/O window of the call in progress, read by the BIO callbacks (set on entry, cleared on return).
    fileprivate var input: UnsafeRawPointer?
    fileprivate var inputRemaining = 0
    fileprivate unowned(unsafe) var output: OutboundBuffer?
    /// Ciphertext that arrived with the last handshake flight but belongs to the records after it; rare and small.
    private var leftover: [UInt8] = []

    init(
        context: TLSClientContext, serverName: String, clientCertificate: TLSClientCertificate?,
        identity: TLSClientIdentity? = nil
    ) throws(TLSError) {
        self.context = context
        self.serverName = serverName
        ERR_clear_error()
        guard let made = SSL_new(context.context) else {
            throw TLSError(.configuration, "cannot create SSL: \(TLSErrorQueue.drainedReason())")
        }
        ssl = made
        guard let bio = BIO_new(TLSCallbackBIO.method.pointer) else {
            SSL_free(made)
            throw TLSError(.configuration, "cannot create BIO: \(TLSErrorQueue.drainedReason())")
        }
        // SSL_free frees the BIO; the BIO holds an unretained pointer back, valid for exactly that lifetime.
        SSL_set_bio(made, bio, bio)
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        // On a throw every stored property is set, so deinit runs and frees the SSL (and with it the BIO).
        try configure(clientCertificate: clientCertificate, identity: identity)
    }

    deinit { SSL_free(ssl) }

    private func configure(clientCertificate: TLSClientCertificate?, identity: TLSClientIdentity?) throws(TLSError) {
        let isIPLiteral = Self.isIPAddress(serverName)
        // RFC 6066 §3: literal IPv4 and IPv6 addresses are not permitted in server_name.
        if !isIPLiteral && !serverName.isEmpty && fb_SSL_set_tlsext_host_name(ssl, serverName) != 1 {
            throw TLSError(.configuration, "SNI name refused: \(TLSErrorQueue.drainedReason())")
        }
        if !context.configuration.insecureSkipVerify && !serverName.isEmpty {
            let accepted: Int32 =
                isIPLiteral
                ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName)
                : SSL_set1_host(ssl, serverName)
            guard accepted == 1 else {
                throw TLSError(.configuration, "cannot check the broker's name \(serverName): \(TLSErrorQueue.drainedReason())")
            }
        }
        if let certificate = clientCertificate {
            guard SSL_use_certificate_chain_file(ssl, certificate.certificateFile) == 1 else {
                throw TLSError(
                    .configuration,
                    "cannot load client certificate \(certificate.certificateFile): \(TLSErrorQueue.drainedReason())")
            }
            guard SSL_use_PrivateKey_file(ssl, certificate.privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
                throw TLSError(
                    .configuration,
                    "cannot load client key \(certificate.privateKeyFile): \(TLSErrorQueue.drainedReason())")
            }
            guard SSL_check_private_key(ssl) == 1 else {
                throw TLSError(.configuration, "client key does not match its certificate: \(TLSErrorQueue.drainedReason())")
            }
        }
        if let identity { try use(identity) }
        SSL_set_connect_state(ssl)
    }

    /// An in-memory identity (a minted certificate): its certificate and key objects are shared, not parsed.
    private func use(_ identity: TLSClientIdentity) throws(TLSError) {
        guard SSL_use_certificate(ssl, identity.certificate) == 1 else {
            throw TLSError(.configuration, "cannot use the certificate of \(identity.commonName): \(TLSErrorQueue.drainedReason())")
        }
        guard SSL_use_PrivateKey(ssl, identity.key) == 1 else {
            throw TLSError(.configuration, "cannot use the key of \(identity.commonName): \(TLSErrorQueue.drainedReason())")
        }
    }

    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    // MARK: - Handshake

    /// Drives the handshake with the ciphertext just read (empty for the first call, which queues the ClientHello).
    /// Ciphertext beyond the handshake is kept and decrypted by the next `decrypt` call.
    public func handshake(input ciphertext: UnsafeRawBufferPointer, outbound: OutboundBuffer) -> HandshakeStatus {
        if isHandshakeComplete { return .done }
        let result = withIOWindow(ciphertext, outbound) { SSL_do_handshake(ssl) }
        if result == 1 {
            isHandshakeComplete = true
            keepUnreadInput(ciphertext)
            return .done
        }
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default: return .failure(failure(code))
        }
    }

    public func handshake(input ciphertext: [UInt8], outbound: OutboundBuffer) -> HandshakeStatus {
        ciphertext.withUnsafeBytes { handshake(input: $0, outbound: outbound) }
    }

    /// The protocol the handshake agreed ("TLSv1.3"), for reports.
    public var negotiatedVersion: String { String(cString: SSL_get_version(ssl)) }

    /// The ALPN protocol the broker selected, if any.
    public var negotiatedALPN: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    // MARK: - Application data

    /// Decrypts `ciphertext` (any split of the stream), handing each plaintext chunk to `deliver` in order. Chunks
    /// point into `scratch` (a caller-owned buffer, one per lane; 16 KiB holds a whole TLS record) and are valid only
    /// during the call. Alerts and TLS 1.3 post-handshake messages are handled here; replies go to `outbound`.
    public func decrypt(
        _ ciphertext: UnsafeRawBufferPointer, outbound: OutboundBuffer, scratch: UnsafeMutableRawBufferPointer,
        deliver: (UnsafeRawBufferPointer) -> Void
    ) throws(TLSError) -> ReadStatus {
        guard isHandshakeComplete else { throw TLSError(.invalidState, "decrypt before the TLS handshake completed") }
        guard let scratchBase = scratch.baseAddress, scratch.count > 0 else {
            throw TLSError(.invalidState, "decrypt needs a scratch buffer")
        }
        if !leftover.isEmpty {
            let earlier = leftover
            leftover = []
            let status = earlier.withUnsafeBytes { bytes in
                Result { () throws(TLSError) -> ReadStatus in
                    try readRecords(bytes, outbound, scratchBase, scratch.count, deliver)
                }
            }
            if try status.get() == .closedByPeer { return .closedByPeer }
        }
        return try readRecords(ciphertext, outbound, scratchBase, scratch.count, deliver)
    }

    private func readRecords(
        _ ciphertext: UnsafeRawBufferPointer, _ outbound: OutboundBuffer, _ scratch: UnsafeMutableRawPointer,
        _ scratchCount: Int, _ deliver: (UnsafeRawBufferPointer) -> Void
    ) throws(TLSError) -> ReadStatus {
        let capacity = Int32(clamping: scratchCount)
        // One window for the whole loop: each SSL_read takes on from where the previous one stopped.
        return try withIOWindow(ciphertext, outbound) { () throws(TLSError) -> ReadStatus in
            try readUntilInputUsed(outbound, scratch, capacity, deliver)
        }
    }

    private func readUntilInputUsed(
        _ outbound: OutboundBuffer, _ scratch: UnsafeMutableRawPointer, _ capacity: Int32,
        _ deliver: (UnsafeRawBufferPointer) -> Void
    ) throws(TLSError) -> ReadStatus {
        while true {
            let count = SSL_read(ssl, scratch, capacity)
            if count > 0 {
                deliver(UnsafeRawBufferPointer(start: scratch, count: Int(count)))
                continue
            }
            let code = SSL_get_error(ssl, count)
            switch code {
            case SSL_ERROR_WANT_READ:
                // Only reported once the BIO has handed over all of `ciphertext`: nothing is left unread.
                return .open
            case SSL_ERROR_ZERO_RETURN:
                return .closedByPeer
            case SSL_ERROR_WANT_WRITE:
                throw TLSError(.outboundFull, "outbound buffer full while answering the broker")
            default:
                throw failure(code)
            }
        }
    }

    /// Encrypts `plaintext` into TLS records appended to `outbound`. A whole lane turn's packets passed at once make
    /// one record (up to 16 KiB each) instead of one per packet.
    public func encrypt(_ plaintext: UnsafeRawBufferPointer, into outbound: OutboundBuffer) throws(TLSError) {
        guard isHandshakeComplete else { throw TLSError(.invalidState, "encrypt before the TLS handshake completed") }
        guard let base = plaintext.baseAddress, plaintext.count > 0 else { return }
        // Refuse up front rather than leave OpenSSL mid-write: records add at most 29 bytes per 16 KiB (TLS 1.2
        // AES-GCM: 5 header + 8 explicit nonce + 16 tag; TLS 1.3: 5 + 1 content type + 16), 64 keeps a margin.
        let overhead = (plaintext.count / 16_384 + 1) * 64
        guard outbound.maximumCapacity - outbound.count >= plaintext.count + overhead else {
            throw TLSError(.outboundFull, "outbound buffer full: \(outbound.count) bytes not yet taken by the socket")
        }
        let written = withIOWindow(UnsafeRawBufferPointer(start: nil, count: 0), outbound) {
            SSL_write(ssl, base, Int32(clamping: plaintext.count))
        }
        if written == Int32(clamping: plaintext.count) { return }
        throw failure(SSL_get_error(ssl, written))
    }

    public func encrypt(_ plaintext: [UInt8], into outbound: OutboundBuffer) throws(TLSError) {
        try plaintext.withUnsafeBytes { bytes in
            Result { () throws(TLSError) in try encrypt(bytes, into: outbound) }
        }.get()
    }

    /// Queues close_notify (RFC 8446 §6.1) in `outbound`; flush it, then close the socket. No wait for the
    /// broker's own close_notify: a load-test client closing its side is done with the connection.
    public func close(outbound: OutboundBuffer) {
        guard isHandshakeComplete else { return }
        _ = withIOWindow(UnsafeRawBufferPointer(start: nil, count: 0), outbound) { SSL_shutdown(ssl) }
        ERR_clear_error()
    }

    // MARK: - Internals

    @inline(__always)
    private func withIOWindow<Result, Failure: Error>(
        _ ciphertext: UnsafeRawBufferPointer, _ outbound: OutboundBuffer, _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        input = ciphertext.baseAddress
        inputRemaining = ciphertext.baseAddress == nil ? 0 : ciphertext.count
        output = outbound
        defer { output = nil }
        return try body()
    }

    /// After the handshake finished: whatever the BIO did not hand to OpenSSL yet waits for `decrypt`.
    private func keepUnreadInput(_ ciphertext: UnsafeRawBufferPointer) {
        if inputRemaining > 0, let input {
            leftover.append(contentsOf: UnsafeRawBufferPointer(start: input, count: inputRemaining))
        }
        input = nil
        inputRemaining = 0
    }

    /// The reason of a failed SSL call: a certificate verification error by its X509 text, a received alert, or
    /// OpenSSL's first queued reason. Drains the error queue.
    private func failure(_ code: Int32) -> TLSError {
        let verifyResult = SSL_get_verify_result(ssl)
        if !context.configuration.insecureSkipVerify && verifyResult != X509_V_OK {
            _ = TLSErrorQueue.drainedReason()
            let text = X509_verify_cert_error_string(verifyResult).map { String(cString: $0) } ?? "error \(verifyResult)"
            return TLSError(.certificateVerifyFailed, "certificate verify failed: \(text)")
        }
        if code == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 {
            return TLSError(.protocolError, "the broker closed the TLS stream without close_notify")
        }
        let reason = TLSErrorQueue.drainedReason()
        if reason.contains("alert") { return TLSError(.protocolAlert, "protocol alert: \(reason)") }
        return TLSError(.protocolError, "TLS error: \(reason)")
    }
}

/// The BIO method shared by all connections: reads come from the call's ciphertext, writes go to its OutboundBuffer.
struct TLSCallbackBIO: @unchecked Sendable {
    let pointer: OpaquePointer

    static let method: TLSCallbackBIO = {
        let method = BIO_meth_new(BIO_get_new_index() | fb_BIO_TYPE_SOURCE_SINK(), "fleetbench callback")!
        _ = BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        _ = BIO_meth_set_read(method) { bio, buffer, length in
            guard let bio, let buffer, length > 0, let owner = BIO_get_data(bio) else { return -1 }
            let connection = Unmanaged<TLSConnection>.fromOpaque(owner).takeUnretainedValue()
            fb_BIO_clear_retry_flags(bio)
            guard connection.inputRemaining > 0, let input = connection.input else {
                fb_BIO_set_retry_read(bio)
                return -1
            }
            let count = min(Int(length), connection.inputRemaining)
            UnsafeMutableRawPointer(buffer).copyMemory(from: input, byteCount: count)
            connection.input = input + count
            connection.inputRemaining -= count
            return Int32(count)
        }
        _ = BIO_meth_set_write(method) { bio, data, length in
            guard let bio, let data, length >= 0, let owner = BIO_get_data(bio) else { return -1 }
            let connection = Unmanaged<TLSConnection>.fromOpaque(owner).takeUnretainedValue()
            fb_BIO_clear_retry_flags(bio)
            guard let outbound = connection.output,
                outbound.append(UnsafeRawBufferPointer(start: data, count: Int(length)))
            else {
                fb_BIO_set_retry_write(bio)
                return -1
            }
            return length
        }
        _ = BIO_meth_set_ctrl(method) { _, command, _, _ in
            // OpenSSL flushes after each flight; our "flush" is the caller's socket write, so succeed.
            command == fb_BIO_CTRL_FLUSH() ? 1 : 0
        }
        return TLSCallbackBIO(pointer: method)
    }()
}
