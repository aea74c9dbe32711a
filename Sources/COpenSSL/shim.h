#ifndef FLEETBENCH_COPENSSL_SHIM_H
#define FLEETBENCH_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ec.h>

// Several OpenSSL entry points are macros that Swift cannot import; wrap the ones fleetbench uses.
static inline long fb_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long fb_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long fb_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long fb_SSL_set_mode(SSL *ssl, long mode) { return SSL_set_mode(ssl, mode); }
static inline long fb_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long fb_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
// A custom BIO tells OpenSSL "no bytes now, call again later" through these retry flags (macros in bio.h).
static inline void fb_BIO_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }
static inline void fb_BIO_set_retry_write(BIO *bio) { BIO_set_retry_write(bio); }
static inline void fb_BIO_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }
// Constants defined as macros with casts or expressions that Swift does not import.
static inline long fb_SSL_MODE_RELEASE_BUFFERS(void) { return SSL_MODE_RELEASE_BUFFERS; }
static inline long fb_SSL_SESS_CACHE_OFF(void) { return SSL_SESS_CACHE_OFF; }
static inline int fb_BIO_CTRL_FLUSH(void) { return BIO_CTRL_FLUSH; }
static inline int fb_BIO_TYPE_SOURCE_SINK(void) { return BIO_TYPE_SOURCE_SINK; }
static inline uint64_t fb_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }

// A fresh EC P-256 key made through the EC_KEY interface (deprecated in OpenSSL 3, still supported). Measured on
// OpenSSL 3.0: a provider-made key is turned into a certificate's SubjectPublicKeyInfo through the generic encoder
// and decoded back (X509_PUBKEY_set), ~0.25 ms per key; an EC_KEY-backed key is encoded directly.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline EVP_PKEY *fb_generate_p256_key(void) {
    EC_KEY *ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    if (ec == NULL) return NULL;
    EVP_PKEY *key = EVP_PKEY_new();
    if (key == NULL || EC_KEY_generate_key(ec) != 1 || EVP_PKEY_assign_EC_KEY(key, ec) != 1) {
        EVP_PKEY_free(key);
        EC_KEY_free(ec);
        return NULL;
    }
    return key;
}
#pragma clang diagnostic pop
#endif
