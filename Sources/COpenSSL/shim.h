#ifndef FLEETBENCH_COPENSSL_SHIM_H
#define FLEETBENCH_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

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
#endif
