// OpenSSL 3 headers, plus fixed-signature wrappers for the macro APIs Swift cannot call.
#ifndef KKPUSH_COPENSSL_SHIM_H
#define KKPUSH_COPENSSL_SHIM_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/cms.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/opensslv.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// OPENSSL_free is a macro over CRYPTO_free(ptr, __FILE__, __LINE__).
static inline void kk_openssl_free(void *ptr) { OPENSSL_free(ptr); }

// BIO_get_mem_data is a macro over BIO_ctrl.
static inline long kk_bio_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

// sk_X509_* are type-safe macros over OPENSSL_sk_*.
static inline int kk_sk_x509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *kk_sk_x509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
static inline void kk_sk_x509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }

// sk_CMS_SignerInfo_* are type-safe macros over OPENSSL_sk_*.
static inline int kk_sk_cms_signerinfo_num(STACK_OF(CMS_SignerInfo) *stack) { return sk_CMS_SignerInfo_num(stack); }
static inline CMS_SignerInfo *kk_sk_cms_signerinfo_value(STACK_OF(CMS_SignerInfo) *stack, int index) {
    return sk_CMS_SignerInfo_value(stack, index);
}

// XN_FLAG_RFC2253 is a macro over other flag macros. This is `-nameopt RFC2253,-esc_msb`: the RFC 2253 form (most
// specific first, comma separated) with UTF-8 kept as UTF-8 rather than escaped byte by byte.
static inline unsigned long kk_xn_flag_rfc2253_utf8(void) {
    return XN_FLAG_RFC2253 & ~(unsigned long)ASN1_STRFLGS_ESC_MSB;
}

// OPENSSL_VERSION_TEXT and friends are macros.
static inline const char *kk_openssl_version_text(void) { return OpenSSL_version(OPENSSL_VERSION); }
static inline unsigned long kk_openssl_version_number(void) { return OpenSSL_version_num(); }

// TLS for the mock's listener (KKPushTLS). SSL_CTX_set_min_proto_version, SSL_CTX_set_mode and
// SSL_set_tlsext_host_name are macros over SSL_CTX_ctrl/SSL_ctrl.
static inline int kk_ssl_ctx_set_min_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
static inline long kk_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
// SSL_OP_NO_RENEGOTIATION is SSL_OP_BIT(30), a function-like macro.
static inline void kk_ssl_ctx_no_renegotiation(SSL_CTX *ctx) { SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION); }
static inline int kk_ssl_set_host_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

// The server's ALPN choice. `arg` is the server's protocol list in wire form (each name after its length byte),
// preceded by one byte with the list's total length; it lives as long as the SSL_CTX. The first of the server's
// protocols the client offers is chosen; with none in common the extension is not answered (SSL_TLSEXT_ERR_NOACK)
// and the handshake goes on without ALPN.
static inline int kk_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                                 unsigned int inlen, void *arg) {
    (void)ssl;
    const unsigned char *list = (const unsigned char *)arg;
    unsigned char *selected = NULL;
    if (SSL_select_next_proto(&selected, outlen, list + 1, list[0], in, inlen) != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_NOACK;
    }
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
}
static inline void kk_ssl_ctx_set_alpn_select(SSL_CTX *ctx, const unsigned char *list) {
    SSL_CTX_set_alpn_select_cb(ctx, kk_alpn_select, (void *)list);
}

// The server trust check (KKPushTrust): a client connection on a socket BIO. BIO_set_nbio is a macro over
// BIO_ctrl; sk_X509_new_null, sk_X509_push and sk_X509_free are type-safe macros over OPENSSL_sk_*.
static inline long kk_bio_set_nbio(BIO *bio, long on) { return BIO_set_nbio(bio, on); }
// BIO_do_connect and BIO_should_retry are macros over BIO_ctrl and BIO_test_flags (nonzero: retry).
static inline long kk_bio_do_connect(BIO *bio) { return BIO_do_connect(bio); }
static inline int kk_bio_should_retry(BIO *bio) { return BIO_should_retry(bio); }
static inline STACK_OF(X509) *kk_sk_x509_new_null(void) { return sk_X509_new_null(); }
static inline int kk_sk_x509_push(STACK_OF(X509) *stack, X509 *certificate) { return sk_X509_push(stack, certificate); }
static inline void kk_sk_x509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

// An ASN1_TIME as seconds since 1970 (ASN1_TIME_to_tm, then timegm): 1, or 0 if OpenSSL cannot read it. In C, so
// that Swift never reads the fields of glibc's `struct tm` (see Sources/CKKPushSystem/shim.h for why).
static inline int kk_asn1_time_epoch(const ASN1_TIME *time, int64_t *seconds) {
    struct tm parts;
    memset(&parts, 0, sizeof parts);
    if (ASN1_TIME_to_tm(time, &parts) != 1) return 0;
    *seconds = (int64_t)timegm(&parts);
    return 1;
}

#endif
