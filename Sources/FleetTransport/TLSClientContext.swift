import COpenSSL
import Glibc

/// One SSL_CTX shared by all TLS clients of a fleet: verification settings, CA store, fleet client certificate,
/// ALPN list and protocol versions are loaded once, so each connection costs only its SSL object.
///
/// Immutable after init; OpenSSL allows SSL_new on one SSL_CTX from several threads, so lanes share it.
public final class TLSClientContext: @unchecked Sendable {
    public let configuration: TLSClientConfiguration
    let context: OpaquePointer

    public init(configuration: TLSClientConfiguration = TLSClientConfiguration()) throws(TLSError) {
        self.configuration = configuration
        ERR_clear_error()
        guard let made = SSL_CTX_new(TLS_client_method()) else {
            throw TLSError(.configuration, "cannot create SSL_CTX: \(TLSErrorQueue.drainedReason())")
        }
        context = made
        // On a throw here every stored property is set, so deinit runs and frees the SSL_CTX (freeing it here
        // as well would be a double free).
        try configure()
    }

    deinit { SSL_CTX_free(context) }

    private func configure() throws(TLSError) {
        guard fb_SSL_CTX_set_min_proto_version(context, configuration.minimumVersion.wireValue) == 1 else {
            throw TLSError(.configuration, "minimum TLS version refused: \(TLSErrorQueue.drainedReason())")
        }
        if let maximum = configuration.maximumVersion,
            fb_SSL_CTX_set_max_proto_version(context, maximum.wireValue) != 1
        {
            throw TLSError(.configuration, "maximum TLS version refused: \(TLSErrorQueue.drainedReason())")
        }
        // Idle clients are the common case in a fleet: give the 16 KiB read and write buffers back whenever they
        // are empty (measured effect in the TLS figures of the report).
        _ = fb_SSL_CTX_set_mode(context, fb_SSL_MODE_RELEASE_BUFFERS())
        // Every simulated client is a fresh session; a client-side cache would only hold memory.
        _ = fb_SSL_CTX_set_session_cache_mode(context, fb_SSL_SESS_CACHE_OFF())
        _ = SSL_CTX_set_options(context, fb_SSL_OP_NO_COMPRESSION())

        if configuration.insecureSkipVerify {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if let caFile = configuration.caFile {
                guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                    throw TLSError(.configuration, "cannot load CA file \(caFile): \(TLSErrorQueue.drainedReason())")
                }
            } else if SSL_CTX_set_default_verify_paths(context) != 1 {
                throw TLSError(.configuration, "cannot load the system CA store: \(TLSErrorQueue.drainedReason())")
            }
        }
        if let certificate = configuration.clientCertificate {
            guard SSL_CTX_use_certificate_chain_file(context, certificate.certificateFile) == 1 else {
                throw TLSError(
                    .configuration,
                    "cannot load client certificate \(certificate.certificateFile): \(TLSErrorQueue.drainedReason())")
            }
            guard SSL_CTX_use_PrivateKey_file(context, certificate.privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
                throw TLSError(
                    .configuration,
                    "cannot load client key \(certificate.privateKeyFile): \(TLSErrorQueue.drainedReason())")
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw TLSError(.configuration, "client key does not match its certificate: \(TLSErrorQueue.drainedReason())")
            }
        }
        if !configuration.alpnProtocols.isEmpty {
            let wire = try Self.alpnWireFormat(configuration.alpnProtocols)
            // SSL_CTX_set_alpn_protos returns 0 on success (unlike most of OpenSSL).
            let status = wire.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(context, $0.baseAddress, UInt32($0.count)) }
            guard status == 0 else {
                throw TLSError(.configuration, "ALPN list refused: \(TLSErrorQueue.drainedReason())")
            }
        }
    }

    /// RFC 7301 §3.1: each protocol name as a length byte followed by its bytes (1-255 bytes each).
    static func alpnWireFormat(_ protocols: [String]) throws(TLSError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw TLSError(.configuration, "ALPN protocol name must be 1-255 bytes: \"\(name)\"")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        return wire
    }

    /// A client connection to `serverName` (a host name or an IP literal): SNI and certificate name checks use it.
    /// `clientCertificate` overrides the fleet's certificate for this one client (from a per-client file pattern).
    public func makeConnection(
        serverName: String, clientCertificate: TLSClientCertificate? = nil
    ) throws(TLSError) -> TLSConnection {
        try TLSConnection(context: self, serverName: serverName, clientCertificate: clientCertificate)
    }

    /// A client connection presenting an in-memory identity (a certificate minted by `TLSCertificateMinter`),
    /// which overrides the fleet's certificate file for this client.
    public func makeConnection(serverName: String, identity: TLSClientIdentity) throws(TLSError) -> TLSConnection {
        try TLSConnection(context: self, serverName: serverName, clientCertificate: nil, identity: identity)
    }
}

/// OpenSSL's per-thread error queue. It must be left empty after every failure, or a later SSL_get_error on the
/// same lane thread reads a stale entry; so every failure path drains it through here.
enum TLSErrorQueue {
    /// The reason text of the first queued error (e.g. "sslv3 alert bad certificate"), and the queue emptied.
    static func drainedReason() -> String {
        var first: String?
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if first == nil {
                if let reason = ERR_reason_error_string(code) {
                    first = String(cString: reason)
                } else {
                    var text = [CChar](repeating: 0, count: 256)
                    ERR_error_string_n(code, &text, text.count)
                    first = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
            }
        }
        return first ?? "no OpenSSL error queued"
    }
}
