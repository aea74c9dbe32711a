import COpenSSL
import Glibc

/// One client's certificate and private key, in memory, as minted for a vehicle. It holds OpenSSL's certificate and
/// key objects, so a connection presents them without parsing anything: on OpenSSL 3.0 parsing a certificate or a
/// key from DER goes through the generic decoders, 0.15-0.8 ms each. Hand it to `TLSClientContext.makeConnection(
/// serverName:identity:)`; `certificatePEM`/`privateKeyPEM` give the files other tools (mosquitto_pub) read.
///
/// Immutable; OpenSSL allows its certificate and key objects to be shared by connections on several threads.
public final class TLSClientIdentity: @unchecked Sendable {
    /// The subject's common name, which brokers such as mosquitto (`use_identity_as_username`) take as username.
    public let commonName: String
    /// X509 and EVP_PKEY, owned.
    let certificate: OpaquePointer
    let key: OpaquePointer

    init(commonName: String, certificate: OpaquePointer, key: OpaquePointer) {
        self.commonName = commonName
        self.certificate = certificate
        self.key = key
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// X.509 certificate, DER.
    public var certificateDER: [UInt8] { encodedDER { i2d_X509(certificate, $0) } ?? [] }

    /// PKCS #8 PrivateKeyInfo, DER, unencrypted.
    public var privateKeyDER: [UInt8] {
        guard let info = EVP_PKEY2PKCS8(key) else { return [] }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        return encodedDER { i2d_PKCS8_PRIV_KEY_INFO(info, $0) } ?? []
    }

    /// RFC 7468 textual encodings.
    public var certificatePEM: String { Self.pem(certificateDER, label: "CERTIFICATE") }
    public var privateKeyPEM: String { Self.pem(privateKeyDER, label: "PRIVATE KEY") }

    static func pem(_ der: [UInt8], label: String) -> String {
        let body = Array(Base64.encode(der).utf8)
        var text = "-----BEGIN \(label)-----\n"
        var start = 0
        while start < body.count {
            let end = min(start + 64, body.count)
            text += String(decoding: body[start..<end], as: UTF8.self) + "\n"
            start = end
        }
        return text + "-----END \(label)-----\n"
    }
}

/// Mints client certificates from a test CA at run start: a fresh EC P-256 key per client, its common name as the
/// subject, signed by the CA, for brokers that require mutual TLS (`require_certificate true`).
///
/// The CA is loaded and checked once, and the digests are fetched once: OpenSSL 3 looks an algorithm up behind
/// locks on every implicit use. Keys are made through the EC_KEY interface (`fb_generate_p256_key`), which a
/// certificate encodes directly; a provider key goes through the generic encoder and decoder (together these
/// took a mint from ~0.8 ms; figures in docs/performance.md). Minting only reads the CA, so several threads may
/// mint from one minter at once (OpenSSL 3 allows concurrent signing with one key).
///
/// Every certificate is an end-entity client certificate: X.509 v3, a random 127-bit serial, valid from an hour
/// before now (clock skew) for `validity` seconds, `basicConstraints` CA:FALSE (critical), `keyUsage`
/// digitalSignature (critical), `extendedKeyUsage` clientAuth, and subject/authority key identifiers.
public final class TLSCertificateMinter: @unchecked Sendable {
    public let caCertificateFile: String
    public let caKeyFile: String
    /// Seconds each certificate stays valid after now.
    public let validity: Int
    private let caCertificate: OpaquePointer
    private let caKey: OpaquePointer
    /// SHA-256 for the signature, or nil for EdDSA CA keys (which sign without a separate digest).
    private let signatureDigest: OpaquePointer?
    /// SHA-1 for the subject key identifier (RFC 5280 §4.2.1.2, method 1).
    private let keyIdentifierDigest: OpaquePointer
    /// The extensions every certificate carries (built once, copied into each certificate).
    private let sharedExtensions: [OpaquePointer]

    /// X.520 upper bound of a common name (RFC 5280 Appendix A: ub-common-name).
    public static let maximumCommonNameLength = 64

    /// Loads the CA's PEM certificate and unencrypted PEM private key and checks that they belong together and
    /// that the certificate may sign others.
    public init(caCertificateFile: String, caKeyFile: String, validity: Int = 7 * 86_400) throws(TLSError) {
        guard validity > 0 else { throw TLSError(.configuration, "certificate validity must be positive, got \(validity) s") }
        for (what, file) in [("CA certificate", caCertificateFile), ("CA key", caKeyFile)] where access(file, R_OK) != 0 {
            throw TLSError(.configuration, "cannot read \(what) \(file): \(String(cString: strerror(errno)))")
        }
        self.caCertificateFile = caCertificateFile
        self.caKeyFile = caKeyFile
        self.validity = validity
        ERR_clear_error()
        guard let certificateBIO = BIO_new_file(caCertificateFile, "r") else {
            throw TLSError(.configuration, "cannot read CA certificate \(caCertificateFile): \(TLSErrorQueue.drainedReason())")
        }
        let certificate = PEM_read_bio_X509(certificateBIO, nil, nil, nil)
        BIO_free(certificateBIO)
        guard let certificate else {
            throw TLSError(.configuration, "no PEM certificate in \(caCertificateFile): \(TLSErrorQueue.drainedReason())")
        }
        guard let keyBIO = BIO_new_file(caKeyFile, "r") else {
            X509_free(certificate)
            throw TLSError(.configuration, "cannot read CA key \(caKeyFile): \(TLSErrorQueue.drainedReason())")
        }
        // A callback that supplies no passphrase: OpenSSL's default would prompt on the terminal.
        let key = PEM_read_bio_PrivateKey(keyBIO, nil, { _, _, _, _ in 0 }, nil)
        BIO_free(keyBIO)
        guard let key else {
            X509_free(certificate)
            let reason = TLSErrorQueue.drainedReason()
            let hint = reason.contains("bad password") || reason.contains("bad decrypt") ? " (encrypted keys are not supported: give the test CA's key unencrypted)" : ""
            throw TLSError(.configuration, "no usable PEM private key in \(caKeyFile): \(reason)\(hint)")
        }
        func fail(_ message: String) -> TLSError {
            X509_free(certificate)
            EVP_PKEY_free(key)
            return TLSError(.configuration, message)
        }
        guard X509_check_private_key(certificate, key) == 1 else {
            _ = TLSErrorQueue.drainedReason()
            throw fail("the CA key \(caKeyFile) does not belong to the CA certificate \(caCertificateFile)")
        }
        guard X509_check_ca(certificate) == 1 else {
            throw fail("\(caCertificateFile) is not a CA certificate (it lacks basicConstraints CA:TRUE)")
        }
        let keyType = EVP_PKEY_get_id(key)
        let signsWithoutDigest = keyType == EVP_PKEY_ED25519 || keyType == EVP_PKEY_ED448
        guard let sha256 = EVP_MD_fetch(nil, "SHA256", nil), let sha1 = EVP_MD_fetch(nil, "SHA1", nil) else {
            throw fail("cannot fetch SHA-256 and SHA-1: \(TLSErrorQueue.drainedReason())")
        }
        if signsWithoutDigest { EVP_MD_free(sha256) }
        var extensions: [OpaquePointer] = []
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, certificate, nil, nil, nil, 0)
        for (nid, value) in [
            (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "clientAuth"), (NID_authority_key_identifier, "keyid:always"),
        ] {
            guard let made = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                extensions.forEach { X509_EXTENSION_free($0) }
                if !signsWithoutDigest { EVP_MD_free(sha256) }
                EVP_MD_free(sha1)
                throw fail("cannot build certificate extension \(value): \(TLSErrorQueue.drainedReason())")
            }
            extensions.append(made)
        }
        caCertificate = certificate
        caKey = key
        signatureDigest = signsWithoutDigest ? nil : sha256
        keyIdentifierDigest = sha1
        sharedExtensions = extensions
    }

    deinit {
        sharedExtensions.forEach { X509_EXTENSION_free($0) }
        if let signatureDigest { EVP_MD_free(signatureDigest) }
        EVP_MD_free(keyIdentifierDigest)
        X509_free(caCertificate)
        EVP_PKEY_free(caKey)
    }

    /// A new key and a certificate for `commonName` (1 to 64 characters), signed by the CA.
    public func mint(commonName: String) throws(TLSError) -> TLSClientIdentity {
        let length = commonName.count
        guard (1...Self.maximumCommonNameLength).contains(length) else {
            throw TLSError(.configuration, "a certificate's common name must have 1 to \(Self.maximumCommonNameLength) characters, got \(length): \"\(commonName)\"")
        }
        ERR_clear_error()
        guard let key = fb_generate_p256_key() else {
            throw TLSError(.configuration, "cannot generate an EC P-256 key: \(TLSErrorQueue.drainedReason())")
        }
        guard let certificate = X509_new() else {
            EVP_PKEY_free(key)
            throw TLSError(.configuration, "cannot allocate a certificate: \(TLSErrorQueue.drainedReason())")
        }
        guard fill(certificate, commonName: commonName, key: key), X509_sign(certificate, caKey, signatureDigest) > 0 else {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw TLSError(.configuration, "cannot make the certificate for \"\(commonName)\": \(TLSErrorQueue.drainedReason())")
        }
        return TLSClientIdentity(commonName: commonName, certificate: certificate, key: key)
    }

    /// One identity per name, in order. To use several cores, call this (or `mint(commonName:)`) from several
    /// threads with disjoint slices of the names.
    public func mint<Names: Collection<String>>(commonNames: Names) throws(TLSError) -> [TLSClientIdentity] {
        var identities: [TLSClientIdentity] = []
        identities.reserveCapacity(commonNames.count)
        for name in commonNames { identities.append(try mint(commonName: name)) }
        return identities
    }

    /// Version, serial, validity, names, public key and extensions; false on any OpenSSL failure.
    private func fill(_ certificate: OpaquePointer, commonName: String, key: OpaquePointer) -> Bool {
        guard X509_set_version(certificate, 2) == 1 else { return false }  // RFC 5280 §4.1.2.1: v3 is 2
        // RFC 5280 §4.1.2.2: a positive serial of at most 20 octets; 127 random bits make collisions negligible.
        var serialBytes = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&serialBytes, 16) == 1 else { return false }
        serialBytes[0] = serialBytes[0] & 0x7F | 0x40  // positive, and always 16 octets (no leading zero)
        guard let serialNumber = BN_bin2bn(serialBytes, 16, nil) else { return false }
        defer { BN_free(serialNumber) }
        guard BN_to_ASN1_INTEGER(serialNumber, X509_get_serialNumber(certificate)) != nil,
              X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil,
              X509_gmtime_adj(X509_getm_notAfter(certificate), validity) != nil,
              let subject = X509_get_subject_name(certificate),
              X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1,
              X509_set_issuer_name(certificate, X509_get_subject_name(caCertificate)) == 1,
              X509_set_pubkey(certificate, key) == 1
        else { return false }
        for shared in sharedExtensions where X509_add_ext(certificate, shared, -1) != 1 { return false }
        // Subject key identifier: SHA-1 of the subject public key bits.
        var digest = [UInt8](repeating: 0, count: 64)
        var digestLength: UInt32 = 0
        guard X509_pubkey_digest(certificate, keyIdentifierDigest, &digest, &digestLength) == 1,
              let identifier = ASN1_OCTET_STRING_new()
        else { return false }
        defer { ASN1_OCTET_STRING_free(identifier) }
        guard ASN1_OCTET_STRING_set(identifier, digest, Int32(digestLength)) == 1 else { return false }
        return X509_add1_ext_i2d(certificate, NID_subject_key_identifier, UnsafeMutableRawPointer(identifier), 0, 0) == 1
    }
}

/// Runs an OpenSSL i2d function twice: once for the length, once to write.
func encodedDER(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
    let length = encode(nil)
    guard length > 0 else { return nil }
    var bytes = [UInt8](repeating: 0, count: Int(length))
    let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return encode(&cursor)
    }
    return written == length ? bytes : nil
}
