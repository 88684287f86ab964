// OpenSSL 3 headers, plus fixed-signature wrappers for the macro APIs Swift cannot call.
#ifndef KKPUSH_COPENSSL_SHIM_H
#define KKPUSH_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
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

// OPENSSL_VERSION_TEXT and friends are macros.
static inline const char *kk_openssl_version_text(void) { return OpenSSL_version(OPENSSL_VERSION); }
static inline unsigned long kk_openssl_version_number(void) { return OpenSSL_version_num(); }

#endif
