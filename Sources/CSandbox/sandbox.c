// The helper's sandbox: resource limits, no_new_privs, a Landlock domain without rules and the seccomp
// filters (filter.c), applied in two parts: what every helper shares, by the zygote before it forks
// them (or by a helper started from the executable), and what is each helper's own, by the helper.
// Landlock is called through syscall(): glibc 2.36 does not wrap it.

// syscall(), pipe2(), F_SETOWN_EX and the Linux-only constants need _GNU_SOURCE; defined here
// alone, as in CFileSystem, it cannot change how the system headers the Swift modules share are read.
// The system headers come before sandbox.h: compiled with -fmodules, its <stdint.h> is a module
// that reads glibc's features.h without _GNU_SOURCE, and that reading would be the only one.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<linux/landlock.h>)
#include <linux/landlock.h>
#endif
#endif

#include "internal.h"
#include "sandbox.h"

#if defined(__SANITIZE_ADDRESS__)
#define IPS_UNDER_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IPS_UNDER_ADDRESS_SANITIZER 1
#endif
#endif
#ifndef IPS_UNDER_ADDRESS_SANITIZER
#define IPS_UNDER_ADDRESS_SANITIZER 0
#endif

// Debian 12's kernel headers (Linux 6.1) stop at Landlock ABI 2 and lack the system calls added
// since. The values below are the kernel's UAPI ones; system calls numbered 424 and up have the same
// number on every architecture, so they need no per-architecture table.
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_EXECUTE
#define LANDLOCK_ACCESS_FS_EXECUTE (1ULL << 0)
#define LANDLOCK_ACCESS_FS_WRITE_FILE (1ULL << 1)
#define LANDLOCK_ACCESS_FS_READ_FILE (1ULL << 2)
#define LANDLOCK_ACCESS_FS_READ_DIR (1ULL << 3)
#define LANDLOCK_ACCESS_FS_REMOVE_DIR (1ULL << 4)
#define LANDLOCK_ACCESS_FS_REMOVE_FILE (1ULL << 5)
#define LANDLOCK_ACCESS_FS_MAKE_CHAR (1ULL << 6)
#define LANDLOCK_ACCESS_FS_MAKE_DIR (1ULL << 7)
#define LANDLOCK_ACCESS_FS_MAKE_REG (1ULL << 8)
#define LANDLOCK_ACCESS_FS_MAKE_SOCK (1ULL << 9)
#define LANDLOCK_ACCESS_FS_MAKE_FIFO (1ULL << 10)
#define LANDLOCK_ACCESS_FS_MAKE_BLOCK (1ULL << 11)
#define LANDLOCK_ACCESS_FS_MAKE_SYM (1ULL << 12)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

// The ruleset attribute as of ABI 6. The system header's struct has only the first field, and its
// name cannot be reused, so this is a struct of its own; the size passed to the kernel is cut to
// the fields the running ABI knows.
struct ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

// The number of threads in this process from /proc/self/status, or -1 with errno set. Read before
// Landlock is applied, which would refuse the open.
int ips_thread_count(void) {
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char text[8192];
    size_t length = 0;
    while (length < sizeof text - 1) {
        ssize_t got = read(fd, text + length, sizeof text - 1 - length);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (got == 0)
            break;
        length += (size_t) got;
    }
    close(fd);
    text[length] = '\0';
    const char *line = strstr(text, "\nThreads:");
    if (line == NULL) {
        errno = ENODATA;
        return -1;
    }
    return (int) strtol(line + strlen("\nThreads:"), NULL, 10);
}

// Restricts the process with a Landlock domain that has no rules, so every right it handles is
// refused everywhere. Sets *abi to the kernel's ABI version, or to 0 when the kernel has no Landlock,
// which is not an error (see ips_sandbox_result).
static int apply_landlock(int32_t *abi, char *error, size_t error_size) {
    long version = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (version < 0) {
        int saved = errno;
        // ENOSYS: not built into this kernel; EOPNOTSUPP: built in but not enabled at boot.
        if (saved == ENOSYS || saved == EOPNOTSUPP) {
            *abi = 0;
            return 0;
        }
        ips_say(error, error_size, "Asking the kernel for its Landlock version failed: %s.", strerror(saved));
        return -1;
    }
    *abi = (int32_t) version;

    // Each right is handled only from the ABI that defines it: the kernel refuses a ruleset that
    // names rights it does not know. ABI 7 added only audit logging, nothing to handle.
    struct ruleset_attr attr = {0};
    attr.handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE
        | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE
        | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG
        | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK
        | LANDLOCK_ACCESS_FS_MAKE_SYM;
    size_t attr_size = sizeof attr.handled_access_fs;
    if (version >= 2)
        attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
    if (version >= 3)
        attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (version >= 4) {
        // Handled with no port allowed: every TCP bind and connect is refused, even on a socket the
        // seccomp filter would not see created (one passed in over the channel).
        attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
        attr_size = sizeof attr.handled_access_fs + sizeof attr.handled_access_net;
    }
    if (version >= 5)
        attr.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    if (version >= 6) {
        // Scoped signals also cover SIGIO and SIGURG sent through a descriptor's owner, which the
        // seccomp filter can only approach by refusing F_SETOWN.
        attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
        attr_size = sizeof attr;
    }

    int ruleset = (int) syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0U);
    if (ruleset < 0) {
        int saved = errno;
        ips_say(error, error_size, "Creating the Landlock ruleset (ABI %ld) failed: %s.", version, strerror(saved));
        return -1;
    }
    if (syscall(__NR_landlock_restrict_self, ruleset, 0U) != 0) {
        int saved = errno;
        close(ruleset);
        ips_say(error, error_size, "Restricting the process with the Landlock ruleset failed: %s.", strerror(saved));
        return -1;
    }
    close(ruleset);
    return 0;
}

// Sets `resource` to `bytes` as both the soft and the hard limit, so that the helper cannot raise it
// again; 0 or less leaves it as inherited. An unprivileged process cannot raise its hard limit, so
// a lower one inherited stays: the helper gets whichever bound is tighter.
static int set_hard_limit(int resource, const char *name, int64_t bytes, char *error, size_t error_size) {
    if (bytes <= 0)
        return 0;
    struct rlimit limit;
    if (getrlimit(resource, &limit) != 0) {
        int saved = errno;
        ips_say(error, error_size, "Reading %s failed: %s.", name, strerror(saved));
        return -1;
    }
    rlim_t wanted = (rlim_t) bytes;
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted)
        wanted = limit.rlim_max;
    limit.rlim_cur = wanted;
    limit.rlim_max = wanted;
    if (setrlimit(resource, &limit) != 0) {
        int saved = errno;
        ips_say(
            error, error_size, "Setting %s to %lld bytes failed: %s.", name, (long long) wanted, strerror(saved));
        return -1;
    }
    return 0;
}

// The limits every helper shares: no core dumps; the data and file-size limits asked for; and, as
// hard limits of 0, no memory locked, no real-time priority and no nice value below the one it has.
// With no capability left (privilege.c) the kernel refuses those anyway; these hold even where a
// capability was kept by mistake, and the filter refuses the calls besides.
static int set_shared_limits(const struct ips_sandbox_options *options, char *error, size_t error_size) {
    struct rlimit none = {0, 0};
    const int zeroed[] = {RLIMIT_CORE, RLIMIT_MEMLOCK, RLIMIT_RTPRIO, RLIMIT_NICE};
    const char *names[] = {"RLIMIT_CORE", "RLIMIT_MEMLOCK", "RLIMIT_RTPRIO", "RLIMIT_NICE"};
    for (size_t i = 0; i < sizeof zeroed / sizeof zeroed[0]; i++) {
        if (setrlimit(zeroed[i], &none) != 0) {
            int saved = errno;
            ips_say(error, error_size, "Setting %s to 0 failed: %s.", names[i], strerror(saved));
            return -1;
        }
    }
    // AddressSanitizer's allocator and quarantine map far more than the images need (the tests'
    // sanitized build): a data limit there would only make it fail. Every other build keeps it.
    if (options != NULL && !IPS_UNDER_ADDRESS_SANITIZER
        && set_hard_limit(RLIMIT_DATA, "RLIMIT_DATA", options->data_limit_bytes, error, error_size) != 0)
        return -1;
    if (options != NULL && set_hard_limit(RLIMIT_FSIZE, "RLIMIT_FSIZE", options->file_size_limit_bytes, error, error_size) != 0)
        return -1;
    return 0;
}

// Fails unless the process has one thread: Landlock binds the calling thread and those it starts
// later, and a fork copies only the calling thread.
static int require_one_thread(char *error, size_t error_size) {
    int threads = ips_thread_count();
    if (threads < 0) {
        int saved = errno;
        ips_say(error, error_size,
            "Counting the process's threads in /proc/self/status failed: %s; the sandbox must know there is only one.",
            strerror(saved));
        return -1;
    }
    if (threads != 1) {
        ips_say(error, error_size,
            "The process has %d threads; the sandbox must be applied while it has one, because Landlock would "
            "leave the others outside.",
            threads);
        return -1;
    }
    return 0;
}

int ips_sandbox_apply_shared(const struct ips_sandbox_options *options, char *error, size_t error_size) {
    ips_say(error, error_size, "%s", "");
    if (require_one_thread(error, error_size) != 0)
        return -1;
    if (set_shared_limits(options, error, error_size) != 0)
        return -1;

    // A write or a truncation past RLIMIT_FSIZE (set here or inherited) sends SIGXFSZ, whose default
    // ends the process with a core dump, mid-job and with nothing said; ignored, the call fails with
    // EFBIG instead, and the helper reports a failed job.
    struct sigaction ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&ignore.sa_mask);
    if (sigaction(SIGXFSZ, &ignore, NULL) != 0) {
        int saved = errno;
        ips_say(error, error_size, "Ignoring SIGXFSZ failed: %s.", strerror(saved));
        return -1;
    }

    // no_new_privs first: landlock_restrict_self and an unprivileged seccomp filter require it.
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        int saved = errno;
        ips_say(error, error_size, "Setting no_new_privs failed: %s.", strerror(saved));
        return -1;
    }
    if (ips_filter_install_handler() != 0) {
        int saved = errno;
        ips_say(error, error_size, "Installing the handler of the calls the filter traps failed: %s.", strerror(saved));
        return -1;
    }
    return ips_filter_install_shared(error, error_size);
}

int ips_sandbox_apply_own(struct ips_sandbox_result *result, char *error, size_t error_size) {
    ips_say(error, error_size, "%s", "");
    struct ips_sandbox_result found = {0};
    // Landlock before the own filter, which refuses the Landlock calls. A domain of the helper's own,
    // nested in any its zygote had: with ABI 6 it scopes signals and abstract sockets to the helper
    // alone, not to its siblings.
    if (apply_landlock(&found.landlock_abi, error, error_size) != 0)
        return -1;
    if (ips_filter_install_own((uint32_t) getpid(), error, error_size) != 0)
        return -1;
    if (result != NULL)
        *result = found;
    return 0;
}

int ips_sandbox_apply(const struct ips_sandbox_options *options, struct ips_sandbox_result *result, char *error,
    size_t error_size) {
    if (ips_sandbox_apply_shared(options, error, error_size) != 0)
        return -1;
    return ips_sandbox_apply_own(result, error, error_size);
}

void ips_sandbox_set_reporting(int on) { ips_filter_set_reporting(on); }

struct ips_sandbox_support ips_sandbox_support(void) {
    struct ips_sandbox_support support = {0};
    long version = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    support.landlock_abi = version > 0 ? (int32_t) version : 0;
    // The actions the kernel's seccomp offers, one word each: the filter traps and answers errnos.
    int fd = open("/proc/sys/kernel/seccomp/actions_avail", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char text[256] = {0};
        ssize_t got = read(fd, text, sizeof text - 1);
        close(fd);
        support.seccomp_filters = got > 0 && strstr(text, "trap") && strstr(text, "errno") && strstr(text, "allow");
    }
    support.allowed_calls = ips_filter_allowed_count();
    return support;
}
