// Fixed-signature wrappers for libcurl's variadic and macro APIs, which Swift cannot call.
// Each wrapper passes one argument type through unchanged; the caller checks the result.
#ifndef KKPUSH_CCURL_SHIM_H
#define KKPUSH_CCURL_SHIM_H

#include <curl/curl.h>

// curl_easy_setopt is variadic: one wrapper per argument kind (long, pointer, off_t, callback).
static inline CURLcode kk_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode kk_curl_easy_setopt_ptr(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode kk_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode kk_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
typedef size_t (*kk_curl_data_callback)(char *data, size_t size, size_t count, void *userdata);
// CURLOPT_WRITEFUNCTION / CURLOPT_HEADERFUNCTION / CURLOPT_READFUNCTION take a function pointer.
static inline CURLcode kk_curl_easy_setopt_data_callback(CURL *handle, CURLoption option, kk_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

// curl_easy_getinfo is variadic: one wrapper per result type.
static inline CURLcode kk_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode kk_curl_easy_getinfo_double(CURL *handle, CURLINFO info, double *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode kk_curl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode kk_curl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode kk_curl_easy_getinfo_ptr(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

// curl_multi_setopt is variadic too.
static inline CURLMcode kk_curl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}
static inline CURLMcode kk_curl_multi_setopt_ptr(CURLM *handle, CURLMoption option, void *value) {
    return curl_multi_setopt(handle, option, value);
}

// CURLMsg's payload is a union; Swift cannot read it reliably.
static inline CURLcode kk_curl_msg_result(const CURLMsg *msg) { return msg->data.result; }

// Feature bits and constants that are macros (not importable as typed constants).
static inline int kk_curl_version_has_http2(const curl_version_info_data *info) {
    return (info->features & CURL_VERSION_HTTP2) != 0;
}
static inline int kk_curl_version_has_ssl(const curl_version_info_data *info) {
    return (info->features & CURL_VERSION_SSL) != 0;
}
static inline const curl_version_info_data *kk_curl_version_info(void) {
    return curl_version_info(CURLVERSION_NOW);
}
static inline long kk_curl_http_version_2tls(void) { return (long)CURL_HTTP_VERSION_2TLS; }
static inline long kk_curl_http_version_2_prior_knowledge(void) { return (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE; }
static inline long kk_curl_pipe_multiplex(void) { return (long)CURLPIPE_MULTIPLEX; }
static inline long kk_curl_sslversion_tlsv1_2(void) { return (long)CURL_SSLVERSION_TLSv1_2; }
static inline long kk_curl_global_all(void) { return (long)CURL_GLOBAL_ALL; }

#endif
