// The few libc structures kkpush reads, behind functions and structures of kkpush's own.
//
// Why: with MemberImportVisibility, Swift attributes a field of a glibc structure (`st_mode`, `tv_nsec`, `rlim_cur`)
// to whichever clang module loaded the glibc header first: Glibc, CDispatch, CoreFoundation or a package's C module.
// That differs between an incremental and a fresh build, and between debug and release, so a file that reads such a
// field builds in one and fails in the other. Swift code reads the structures below instead (their only module is
// this one), and creates glibc's opaque types (`posix_spawnattr_t`, `sigset_t`) through the zeroed values here.
#ifndef KKPUSH_CKKPUSHSYSTEM_SHIM_H
#define KKPUSH_CKKPUSHSYSTEM_SHIM_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

// MARK: Files

// What kkpush reads of a file's status (stat(2)).
typedef struct {
    uint64_t device;
    uint64_t inode;
    int32_t is_directory;
    int32_t is_regular;
    // 'f' a named pipe (FIFO) or pipe, 's' a socket, 'c' a character device, 'b' a block device, 0 otherwise.
    int32_t special_kind;
} kk_file_status;

static inline void kk_file_status_from(const struct stat *s, kk_file_status *out) {
    out->device = (uint64_t)s->st_dev;
    out->inode = (uint64_t)s->st_ino;
    out->is_directory = S_ISDIR(s->st_mode) ? 1 : 0;
    out->is_regular = S_ISREG(s->st_mode) ? 1 : 0;
    out->special_kind = S_ISFIFO(s->st_mode)   ? 'f'
                        : S_ISSOCK(s->st_mode) ? 's'
                        : S_ISCHR(s->st_mode)  ? 'c'
                        : S_ISBLK(s->st_mode)  ? 'b'
                                               : 0;
}

// stat(2) of a path: 0, or -1 with errno set.
static inline int kk_stat(const char *path, kk_file_status *out) {
    struct stat s;
    if (stat(path, &s) != 0) return -1;
    kk_file_status_from(&s, out);
    return 0;
}

// fstat(2) of a descriptor: 0, or -1 with errno set.
static inline int kk_fstat(int fd, kk_file_status *out) {
    struct stat s;
    if (fstat(fd, &s) != 0) return -1;
    kk_file_status_from(&s, out);
    return 0;
}

// Waits at most timeout_ms for something to read on a descriptor, or its writer's end (poll(2), POLLIN): 1 when
// there is, 0 after the timeout, -1 with errno set. (A FIFO no writer has opened yet is neither.)
static inline int kk_wait_readable(int fd, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
    int n = poll(&p, 1, timeout_ms);
    return n > 0 ? 1 : n;
}

// Waits at most timeout_ms for room to write on a descriptor (poll(2), POLLOUT): poll's answer.
static inline int kk_wait_writable(int fd, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLOUT, .revents = 0};
    return poll(&p, 1, timeout_ms);
}

// The soft limit on open files, first raised towards the hard limit (at most `cap`): the limit, or -1.
static inline int64_t kk_open_file_limit_raised(uint64_t cap) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    rlim_t target = limit.rlim_max < (rlim_t)cap ? limit.rlim_max : (rlim_t)cap;
    if (limit.rlim_cur < target) {
        struct rlimit raised = limit;
        raised.rlim_cur = target;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
    }
    return limit.rlim_cur > (rlim_t)INT64_MAX ? INT64_MAX : (int64_t)limit.rlim_cur;
}

// MARK: Time

// The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID), 0 if it cannot be read.
static inline double kk_thread_cpu_seconds(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

// A moment in UTC, by its calendar fields: year (e.g. 2027), month 1 to 12, day 1 to 31, hour, minute, second.
typedef struct {
    int32_t year;
    int32_t month;
    int32_t day;
    int32_t hour;
    int32_t minute;
    int32_t second;
} kk_utc_time;

// gmtime_r(3) of seconds since 1970: 0, or -1 if out of range.
static inline int kk_utc_time_of(int64_t seconds, kk_utc_time *out) {
    time_t t = (time_t)seconds;
    struct tm parts;
    if (gmtime_r(&t, &parts) == NULL) return -1;
    out->year = parts.tm_year + 1900;
    out->month = parts.tm_mon + 1;
    out->day = parts.tm_mday;
    out->hour = parts.tm_hour;
    out->minute = parts.tm_min;
    out->second = parts.tm_sec;
    return 0;
}

// MARK: Threads

// Names the calling thread as `top -H`, `perf` and /proc show it (pthread_setname_np(3); Linux keeps 15 bytes, so a
// longer name is cut there): 0, or an error number. Foundation's `Thread.name` names the Thread object, and names the
// thread itself only if set after the starting thread recorded the thread's id: before `start()` never, inside the
// thread's body not always.
static inline int kk_name_current_thread(const char *name) {
    char shortened[16];
    strncpy(shortened, name, sizeof(shortened) - 1);
    shortened[sizeof(shortened) - 1] = 0;
    return pthread_setname_np(pthread_self(), shortened);
}

// MARK: Processes and signals

// Zeroed values of glibc's opaque types, for posix_spawnattr_init, posix_spawn_file_actions_init and sigemptyset to
// set up.
static inline posix_spawnattr_t kk_spawnattr_zeroed(void) {
    posix_spawnattr_t value;
    memset(&value, 0, sizeof value);
    return value;
}

static inline posix_spawn_file_actions_t kk_spawn_file_actions_zeroed(void) {
    posix_spawn_file_actions_t value;
    memset(&value, 0, sizeof value);
    return value;
}

static inline sigset_t kk_sigset_zeroed(void) {
    sigset_t value;
    memset(&value, 0, sizeof value);
    return value;
}

// MARK: Loopback sockets (the tests' plain, blocking sockets)

// 127.0.0.1:port as an IPv4 socket address.
static inline struct sockaddr_in kk_loopback_address(uint16_t port) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
}

// bind(2) a TCP socket to 127.0.0.1:port (0: any free port): 0, or -1 with errno set.
static inline int kk_bind_loopback(int fd, uint16_t port) {
    struct sockaddr_in address = kk_loopback_address(port);
    return bind(fd, (const struct sockaddr *)&address, sizeof address);
}

// connect(2) a TCP socket to 127.0.0.1:port: 0, or -1 with errno set.
static inline int kk_connect_loopback(int fd, uint16_t port) {
    struct sockaddr_in address = kk_loopback_address(port);
    return connect(fd, (const struct sockaddr *)&address, sizeof address);
}

// The local port of a bound IPv4 socket (getsockname(2)), or -1.
static inline int kk_bound_port(int fd) {
    struct sockaddr_in address;
    socklen_t length = sizeof address;
    if (getsockname(fd, (struct sockaddr *)&address, &length) != 0) return -1;
    return ntohs(address.sin_port);
}

// SO_RCVTIMEO: a blocking receive on the socket gives up after `seconds`. 0, or -1 with errno set.
static inline int kk_set_receive_timeout(int fd, int seconds) {
    struct timeval limit = {.tv_sec = seconds, .tv_usec = 0};
    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
}

#endif
