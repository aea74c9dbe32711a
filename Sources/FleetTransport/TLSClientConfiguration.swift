/// TLS settings of one fleet (all its clients share one `TLSClientContext` built from these).
public struct TLSClientConfiguration: Sendable, Equatable {
    /// PEM file of the CAs that may sign the broker's certificate; nil: the system store
    /// (OpenSSL's default paths, /etc/ssl/certs on Debian).
    public var caFile: String?
    /// Accept any broker certificate and name. Off unless asked explicitly; reports must say when it was on.
    public var insecureSkipVerify: Bool
    /// A client certificate for every client of the fleet; per-client certificates go to `makeConnection`.
    public var clientCertificate: TLSClientCertificate?
    /// ALPN protocol names offered in the ClientHello (e.g. "mqtt"); empty: no ALPN extension.
    public var alpnProtocols: [String]
    public var minimumVersion: TLSProtocolVersion
    /// nil: the highest OpenSSL supports (TLS 1.3).
    public var maximumVersion: TLSProtocolVersion?

    public init(
        caFile: String? = nil, insecureSkipVerify: Bool = false, clientCertificate: TLSClientCertificate? = nil,
        alpnProtocols: [String] = [], minimumVersion: TLSProtocolVersion = .tls12,
        maximumVersion: TLSProtocolVersion? = nil
    ) {
        self.caFile = caFile
        self.insecureSkipVerify = insecureSkipVerify
        self.clientCertificate = clientCertificate
        self.alpnProtocols = alpnProtocols
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
    }
}

public enum TLSProtocolVersion: Sendable, Equatable {
    case tls12
    case tls13

    /// The protocol version number of RFC 5246 / RFC 8446 (§4.2.1), as SSL_CTX_set_min_proto_version takes it.
    var wireValue: Int32 {
        switch self {
        case .tls12: return 0x0303
        case .tls13: return 0x0304
        }
    }
}

/// A PEM certificate (chain) file and its private key file.
public struct TLSClientCertificate: Sendable, Equatable {
    public var certificateFile: String
    public var privateKeyFile: String

    public init(certificateFile: String, privateKeyFile: String) {
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
    }

    /// Per-client files from patterns such as `certs/{client_id}.pem` and `certs/{client_id}.key`.
    public static func resolving(
        certificatePattern: String, privateKeyPattern: String, clientID: String
    ) -> TLSClientCertificate {
        TLSClientCertificate(
            certificateFile: certificatePattern.replacingPlaceholder(with: clientID),
            privateKeyFile: privateKeyPattern.replacingPlaceholder(with: clientID))
    }
}

extension String {
    /// Replaces every `{client_id}` (no Foundation in the transport, so by hand).
    fileprivate func replacingPlaceholder(with clientID: String) -> String {
        let placeholder = Array("{client_id}".utf8)
        let source = Array(utf8)
        var result: [UInt8] = []
        result.reserveCapacity(source.count + clientID.utf8.count)
        var index = 0
        while index < source.count {
            if index + placeholder.count <= source.count && source[index..<(index + placeholder.count)].elementsEqual(placeholder) {
                result.append(contentsOf: clientID.utf8)
                index += placeholder.count
            } else {
                result.append(source[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
