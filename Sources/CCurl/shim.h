// Fixed-signature wrappers for libcurl's variadic and macro APIs, which Swift cannot call.
// Each wrapper passes one argument type through unchanged; the caller checks the result.
#ifndef KKPUSH_CCURL_SHIM_H
#define KKPUSH_CCURL_SHIM_H

#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

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

// CURLOPT_SOCKOPTFUNCTION and CURLOPT_CLOSESOCKETFUNCTION: how the client learns which sockets are its
// connections (to cork them while a loop turn writes, see kk_tcp_cork).
typedef int (*kk_curl_sockopt_callback)(void *userdata, curl_socket_t fd, curlsocktype purpose);
typedef int (*kk_curl_closesocket_callback)(void *userdata, curl_socket_t fd);
static inline CURLcode kk_curl_easy_setopt_sockopt_callback(CURL *handle, kk_curl_sockopt_callback value) {
    return curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, value);
}
static inline CURLcode kk_curl_easy_setopt_closesocket_callback(CURL *handle, kk_curl_closesocket_callback value) {
    return curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, value);
}
static inline int kk_curl_sockopt_ok(void) { return CURL_SOCKOPT_OK; }
static inline int kk_curl_socktype_ipcxn(void) { return (int)CURLSOCKTYPE_IPCXN; }
// Holds back (on = 1) or flushes (on = 0) partial TCP segments on a socket: libcurl writes every
// HTTP/2 frame with its own send(); corked, the frames of one loop turn leave as few segments.
// Returns 0, or -1 with errno set (a socket that is not TCP, or a system without TCP_CORK).
static inline int kk_tcp_cork(int fd, int on) {
#ifdef TCP_CORK
    return setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
#else
    (void)fd; (void)on; return -1;
#endif
}
static inline int kk_close(int fd) { return close(fd); }

// Dead-connection detection below HTTP/2 (libcurl 7.88's multi interface cannot send HTTP/2 PINGs:
// curl_easy_upkeep works only for curl_easy_perform handles). TCP keepalive probes an idle connection
// (idle seconds, interval seconds, count); TCP_USER_TIMEOUT aborts one whose sent data stays
// unacknowledged for ms milliseconds (a peer or NAT that went silent). Each returns 0, or -1 with errno.
static inline int kk_tcp_keepalive(int fd, int idle, int interval, int count) {
    int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0) return -1;
#ifdef TCP_KEEPIDLE
    if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0) return -1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) != 0) return -1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count) != 0) return -1;
#else
    (void)idle; (void)interval; (void)count;
#endif
    return 0;
}
static inline int kk_tcp_user_timeout(int fd, unsigned int ms) {
#ifdef TCP_USER_TIMEOUT
    return setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
#else
    (void)fd; (void)ms; return -1;
#endif
}
// The local port a connected socket is bound to (how a PREREQFUNCTION's conn_local_port is matched
// to a socket), or -1.
static inline int kk_local_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -1;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}
// Ends a connection under libcurl's feet without closing the descriptor libcurl owns: its next read
// sees the end, it fails the streams still open on it and never reuses it.
static inline int kk_shutdown_both(int fd) { return shutdown(fd, SHUT_RDWR); }

// CURLOPT_SEEKFUNCTION: libcurl calls it before it sends a request body again (a connection that
// died, a refused stream). CURLOPT_PREREQFUNCTION: before every send of a request, with the
// connection's addresses.
typedef int (*kk_curl_seek_callback)(void *userdata, curl_off_t offset, int origin);
static inline CURLcode kk_curl_easy_setopt_seek_callback(CURL *handle, kk_curl_seek_callback value) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, value);
}
typedef int (*kk_curl_prereq_callback)(void *userdata, char *primary_ip, char *local_ip, int primary_port, int local_port);
static inline CURLcode kk_curl_easy_setopt_prereq_callback(CURL *handle, kk_curl_prereq_callback value) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, value);
}
static inline int kk_curl_seekfunc_ok(void) { return CURL_SEEKFUNC_OK; }
static inline int kk_curl_seekfunc_fail(void) { return CURL_SEEKFUNC_FAIL; }
static inline int kk_curl_prereqfunc_ok(void) { return CURL_PREREQFUNC_OK; }
static inline size_t kk_curl_error_size(void) { return CURL_ERROR_SIZE; }

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
