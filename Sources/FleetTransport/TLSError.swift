/// Why a TLS context could not be built or a TLS connection failed. `description` is the reason the engine puts in
/// its connect-failure counters and error text, e.g. "certificate verify failed: unable to get local issuer
/// certificate" or "protocol alert: tlsv13 alert certificate required".
public struct TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The CA file, client certificate or key could not be loaded, or a setting was refused.
        case configuration
        /// The broker's certificate chain or name did not verify.
        case certificateVerifyFailed
        /// The peer sent a TLS alert (bad certificate, certificate required, handshake failure, ...).
        case protocolAlert
        /// Any other protocol failure reported by OpenSSL (bad record, wrong version number, ...).
        case protocolError
        /// The outbound buffer is at its maximum: the socket has not taken the bytes already queued.
        case outboundFull
        /// A call made in the wrong state (encrypt before the handshake finished, after close).
        case invalidState
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
