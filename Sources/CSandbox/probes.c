// The probes the self-test runs inside the sandbox, each trying one thing the sandbox must refuse.
// None leaves anything changed when the sandbox fails to refuse it (see ips_sandbox_probe).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "privilege.h"
#include "sandbox.h"
#include "probe.h"

#ifndef __NR_clone3
#define __NR_clone3 435
#endif
// ioctl commands written out: <linux/fs.h> clashes with glibc's headers.
#define IOCTL_FIFREEZE 0xC0045877u
#define IOCTL_FS_IOC_GETFLAGS 0x80086601u
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif
#ifndef __NR_mlock2
#define __NR_mlock2 325
#endif
#ifndef IOPRIO_WHO_PROCESS
#define IOPRIO_WHO_PROCESS 1
#endif
static int probe_socket(int *error_number, char *detail, size_t detail_size) {
    const char *what = "socket(AF_INET, SOCK_STREAM)";
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return refused(errno, error_number, detail, detail_size, what);
    close(fd);
    return succeeded(error_number, detail, detail_size, what);
}

// The lowest descriptor open on a socket (a helper's channel, made before the sandbox), or -1.
static int open_socket(void) {
    struct rlimit limit;
    int end = 4096;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < (rlim_t) end)
        end = (int) limit.rlim_cur;
    for (int fd = 0; fd < end; fd++) {
        struct stat status;
        if (fstat(fd, &status) == 0 && S_ISSOCK(status.st_mode))
            return fd;
    }
    return -1;
}

// With socket() refused the probe has no socket of its own to connect, and connect() is tried on
// one the process already holds, as a helper holds its channel, with an address length of 0, which
// every protocol refuses (EINVAL) without touching the socket; with none open, on descriptor -1
// (EBADF). The filter answers before the kernel looks at either, so EPERM is the filter refusing
// connect itself, and any other answer is connect getting past the sandbox to the kernel.
static int probe_connect(int *error_number, char *detail, size_t detail_size) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(9);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int socket_errno = errno;
        int held = open_socket();
        char what[160];
        int status;
        if (held >= 0) {
            snprintf(what, sizeof what,
                "connect() on socket %d, opened before the sandbox, with an address length of 0", held);
            status = connect(held, (const struct sockaddr *) &address, 0);
        } else {
            snprintf(what, sizeof what, "connect() on descriptor -1 (no socket is open)");
            status = connect(-1, (const struct sockaddr *) &address, sizeof address);
        }
        int connect_errno = status == 0 ? 0 : errno;
        if (status != 0 && connect_errno == EPERM) {
            *error_number = EPERM;
            ips_say(detail, detail_size,
                "socket(AF_INET, SOCK_STREAM) was refused (%s), and %s was refused: %s, the filter refusing connect "
                "itself.",
                strerror(socket_errno), what, strerror(connect_errno));
            return 0;
        }
        *error_number = 0;
        ips_say(detail, detail_size,
            "socket(AF_INET, SOCK_STREAM) was refused (%s), but %s got past the sandbox: the kernel answered %s.",
            strerror(socket_errno), what, status == 0 ? "with success" : strerror(connect_errno));
        return 1;
    }
    int status = connect(fd, (const struct sockaddr *) &address, sizeof address);
    int saved = errno;
    close(fd);
    if (status == 0)
        return succeeded(error_number, detail, detail_size, "A socket was made and connect() to 127.0.0.1:9");
    // A refused connection (nothing listening on port 9) is the network answering, not the sandbox.
    if (saved == ECONNREFUSED || saved == ETIMEDOUT || saved == ENETUNREACH || saved == EHOSTUNREACH) {
        *error_number = 0;
        ips_say(detail, detail_size,
            "A socket was made and connect() to 127.0.0.1:9 reached the network, which answered: %s.", strerror(saved));
        return 1;
    }
    return refused(saved, error_number, detail, detail_size, "A socket was made, but connect() to 127.0.0.1:9");
}

static int probe_open_passwd(int *error_number, char *detail, size_t detail_size) {
    const char *what = "open(\"/etc/passwd\", O_RDONLY)";
    int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return refused(errno, error_number, detail, detail_size, what);
    close(fd);
    return succeeded(error_number, detail, detail_size, what);
}

static int probe_create_file(int *error_number, char *detail, size_t detail_size) {
    // The pid and the clock make the name unique, so EEXIST cannot be taken for a refusal.
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    char path[96];
    snprintf(path, sizeof path, "/tmp/imagepipe-sandbox-probe-%ld-%lld%09ld", (long) getpid(), (long long) now.tv_sec,
        now.tv_nsec);
    char what[160];
    snprintf(what, sizeof what, "Creating %s", path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        int saved = errno;
        if (saved == EEXIST)
            return not_run(saved, error_number, detail, detail_size, what);
        return refused(saved, error_number, detail, detail_size, what);
    }
    close(fd);
    unlink(path);
    return succeeded(error_number, detail, detail_size, what);
}

// execve in this process, as there is no child to try it in (fork is refused), with an argument
// longer than the kernel takes (MAX_ARG_STRLEN, 32 pages): a kernel that gets that far answers
// E2BIG while it copies the arguments, which is always before the point where the process would be
// replaced, so the probe never replaces the process it runs in whatever the sandbox lets through.
// The filter answers EPERM first, and since Linux 6.8 the file is opened, and Landlock's EXECUTE
// right checked (EACCES), before the arguments are copied.
static int probe_exec(int *error_number, char *detail, size_t detail_size) {
    const char *what = "execve(\"/bin/true\") in this process, with an over-long argument";
    long page = sysconf(_SC_PAGESIZE);
    size_t length = (size_t) (page > 0 ? page : 65536) * 33;
    char *argument = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (argument == MAP_FAILED)
        return not_run(errno, error_number, detail, detail_size, "Mapping memory for the over-long argument");
    memset(argument, 'x', length - 1);
    argument[length - 1] = '\0';
    char *const arguments[] = {"/bin/true", argument, NULL};
    char *const environment[] = {NULL};
    execve("/bin/true", arguments, environment);
    int saved = errno;
    munmap(argument, length);
    if (saved == EPERM || saved == EACCES)
        return refused(saved, error_number, detail, detail_size, what);
    return let_through(saved, error_number, detail, detail_size, what);
}

// A new process, through clone without CLONE_THREAD as glibc's fork() makes one (called directly,
// so that no fork handler of the libraries runs) and, on x86_64, through the fork system call. A
// child that gets through leaves at once and is waited for.
static int probe_fork(int *error_number, char *detail, size_t detail_size) {
    long child = syscall(__NR_clone, (unsigned long) SIGCHLD, 0UL, 0UL, 0UL, 0UL);
    if (child == 0)
        _exit(0);
    int clone_errno = errno;
    if (child > 0) {
        wait_for((pid_t) child);
        return succeeded(error_number, detail, detail_size, "A fork through clone() without CLONE_THREAD");
    }
#ifdef __NR_fork
    long forked = syscall(__NR_fork);
    if (forked == 0)
        _exit(0);
    int fork_errno = errno;
    if (forked > 0) {
        wait_for((pid_t) forked);
        return succeeded(error_number, detail, detail_size, "The fork system call");
    }
    if (fork_errno != clone_errno) {
        *error_number = clone_errno;
        ips_say(detail, detail_size,
            "A fork through clone() without CLONE_THREAD was refused: %s; the fork system call was refused: %s.",
            strerror(clone_errno), strerror(fork_errno));
        return 0;
    }
    return refused(clone_errno, error_number, detail, detail_size,
        "A fork, through clone() without CLONE_THREAD and through the fork system call,");
#else
    return refused(clone_errno, error_number, detail, detail_size, "A fork through clone() without CLONE_THREAD");
#endif
}

// clone(CLONE_PARENT | CLONE_THREAD) without CLONE_SIGHAND, which the kernel refuses (EINVAL), so
// that nothing is started whatever the filter does. With CLONE_THREAD the filter would allow the
// call but for CLONE_PARENT: EPERM is the filter refusing CLONE_PARENT itself.
static int probe_clone_flags(unsigned long flags, const char *what, int *error_number, char *detail, size_t detail_size) {
    long child = syscall(__NR_clone, flags, 0UL, 0UL, 0UL, 0UL);
    if (child == 0)
        _exit(0);
    if (child > 0)
        return succeeded(error_number, detail, detail_size, what);
    if (errno == EPERM)
        return refused(errno, error_number, detail, detail_size, what);
    return let_through(errno, error_number, detail, detail_size, what);
}

static int probe_clone_parent(int *error_number, char *detail, size_t detail_size) {
    return probe_clone_flags(CLONE_PARENT | CLONE_THREAD, "clone(CLONE_PARENT | CLONE_THREAD)", error_number, detail, detail_size);
}

// unshare in this process, with CLONE_PARENT beside CLONE_NEWUSER: unshare takes no CLONE_PARENT,
// so a kernel that gets the call answers EINVAL and changes nothing, while the filter, which
// refuses unshare whatever its flags, answers EPERM first.
static int probe_unshare(int *error_number, char *detail, size_t detail_size) {
    const char *what = "unshare(CLONE_NEWUSER) in this process";
    if (unshare(CLONE_NEWUSER | CLONE_PARENT) == 0)
        return succeeded(error_number, detail, detail_size, what);
    if (errno == EPERM)
        return refused(errno, error_number, detail, detail_size, what);
    return let_through(errno, error_number, detail, detail_size, what);
}

// clone(CLONE_NEWUSER | CLONE_THREAD), which the kernel refuses (EINVAL: a thread is never in
// another user namespace, nor without CLONE_SIGHAND), so that nothing is started whatever the filter
// does. With CLONE_THREAD the filter would allow the call but for the namespace flag: EPERM is the
// filter refusing the namespace itself.
static int probe_clone_newuser(int *error_number, char *detail, size_t detail_size) {
    return probe_clone_flags(CLONE_NEWUSER | CLONE_THREAD, "clone(CLONE_NEWUSER | CLONE_THREAD)", error_number, detail, detail_size);
}

// clone3 with no flags is a fork. Refusal is expected as ENOSYS, the answer that makes glibc fall
// back to clone; EPERM would make pthread_create fail instead.
static int probe_clone3(int *error_number, char *detail, size_t detail_size) {
    const char *what = "clone3() of a plain child";
    // The first version of struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal,
    // stack, stack_size, tls.
    uint64_t arguments[8] = {0};
    arguments[4] = SIGCHLD;
    long child = syscall(__NR_clone3, arguments, sizeof arguments);
    if (child < 0)
        return refused(errno, error_number, detail, detail_size, what);
    if (child == 0)
        _exit(0);
    wait_for((pid_t) child);
    return succeeded(error_number, detail, detail_size, what);
}

static int probe_signal_parent(int *error_number, char *detail, size_t detail_size) {
    const char *what = "kill(parent, 0)";
    if (kill(getppid(), 0) != 0)
        return refused(errno, error_number, detail, detail_size, what);
    return succeeded(error_number, detail, detail_size, what);
}

static int probe_signal_group(int *error_number, char *detail, size_t detail_size) {
    const char *what = "kill(0, 0) to the process group";
    if (kill(0, 0) != 0)
        return refused(errno, error_number, detail, detail_size, what);
    return succeeded(error_number, detail, detail_size, what);
}

static int probe_sigqueue_parent(int *error_number, char *detail, size_t detail_size) {
    const char *what = "sigqueue(parent, 0)";
    union sigval value = {.sival_int = 0};
    if (sigqueue(getppid(), 0, value) != 0)
        return refused(errno, error_number, detail, detail_size, what);
    return succeeded(error_number, detail, detail_size, what);
}

// On a memory file without O_ASYNC, so nothing is ever sent: an F_SETOWN let through does no harm.
// (Pipes are the zygote's alone: a helper's filter refuses pipe2.)
static int probe_fsetown_parent(int *error_number, char *detail, size_t detail_size) {
    const char *what = "fcntl(F_SETOWN, parent) on a descriptor";
    int fd = memfd_create("imagepipe-probe", MFD_CLOEXEC);
    if (fd < 0)
        return not_run(errno, error_number, detail, detail_size, "Making a memory file");
    int status = fcntl(fd, F_SETOWN, getppid());
    int saved = errno;
    close(fd);
    if (status != 0)
        return refused(saved, error_number, detail, detail_size, what);
    return succeeded(error_number, detail, detail_size, what);
}

static int probe_prlimit_parent(int *error_number, char *detail, size_t detail_size) {
    const char *what = "Reading the parent's RLIMIT_NOFILE with prlimit()";
    struct rlimit limit;
    if (prlimit(getppid(), RLIMIT_NOFILE, NULL, &limit) != 0)
        return refused(errno, error_number, detail, detail_size, what);
    return succeeded(error_number, detail, detail_size, what);
}

// The parent's nice value set to the one it has (read first, which is allowed): a no-op if let through.
static int probe_setpriority_parent(int *error_number, char *detail, size_t detail_size) {
    const char *what = "setpriority(PRIO_PROCESS, parent) to its own nice value";
    pid_t parent = getppid();
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t) parent);
    if (nice == -1 && errno != 0)
        return not_run(errno, error_number, detail, detail_size, "Reading the parent's nice value");
    if (setpriority(PRIO_PROCESS, (id_t) parent, nice) != 0)
        return refused(errno, error_number, detail, detail_size, what);
    return succeeded(error_number, detail, detail_size, what);
}

// The parent's CPU affinity set to the one it has (read first, which is allowed): a no-op if let
// through. The set grows until it holds every CPU the kernel knows of.
static int probe_affinity_parent(int *error_number, char *detail, size_t detail_size) {
    const char *what = "sched_setaffinity(parent) to its own CPU set";
    pid_t parent = getppid();
    for (int cpus = 1024; cpus <= (1 << 20); cpus *= 2) {
        cpu_set_t *set = CPU_ALLOC(cpus);
        if (set == NULL)
            return not_run(errno, error_number, detail, detail_size, "Allocating a CPU set");
        size_t size = CPU_ALLOC_SIZE(cpus);
        if (sched_getaffinity(parent, size, set) != 0) {
            int saved = errno;
            CPU_FREE(set);
            if (saved == EINVAL)
                continue;
            return not_run(saved, error_number, detail, detail_size, "Reading the parent's CPU set");
        }
        int status = sched_setaffinity(parent, size, set);
        int saved = errno;
        CPU_FREE(set);
        if (status != 0)
            return refused(saved, error_number, detail, detail_size, what);
        return succeeded(error_number, detail, detail_size, what);
    }
    return not_run(EINVAL, error_number, detail, detail_size, "Reading the parent's CPU set");
}

// The death signal set to the one already set (read first), so that one let through changes nothing.
static int probe_pdeathsig(int *error_number, char *detail, size_t detail_size) {
    const char *what = "prctl(PR_SET_PDEATHSIG) to the signal already set";
    int current = 0;
    if (prctl(PR_GET_PDEATHSIG, (unsigned long) &current, 0UL, 0UL, 0UL) != 0)
        return not_run(errno, error_number, detail, detail_size, "Reading the death signal");
    if (prctl(PR_SET_PDEATHSIG, (unsigned long) current, 0UL, 0UL, 0UL) != 0)
        return refused(errno, error_number, detail, detail_size, what);
    return succeeded(error_number, detail, detail_size, what);
}

static int probe_inotify(int *error_number, char *detail, size_t detail_size) {
    const char *what = "inotify_init1()";
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0)
        return refused(errno, error_number, detail, detail_size, what);
    close(fd);
    return succeeded(error_number, detail, detail_size, what);
}

// On a memory file of the probe's own, so that a lock let through is the probe's alone; the filter
// refuses flock whatever the descriptor.
static int probe_flock(int *error_number, char *detail, size_t detail_size) {
    const char *what = "flock(LOCK_SH) on a descriptor";
    int fd = memfd_create("imagepipe-probe", MFD_CLOEXEC);
    if (fd < 0)
        return not_run(errno, error_number, detail, detail_size, "Making a memory file");
    int status = flock(fd, LOCK_SH | LOCK_NB);
    int saved = errno;
    close(fd);
    if (status != 0)
        return refused(saved, error_number, detail, detail_size, what);
    return succeeded(error_number, detail, detail_size, what);
}

// A memory file of the probe's own set to the mode it has: a no-op if let through.
static int probe_fchmod(int *error_number, char *detail, size_t detail_size) {
    const char *what = "fchmod() on a descriptor, to the mode it has";
    int fd = memfd_create("imagepipe-probe", MFD_CLOEXEC);
    if (fd < 0)
        return not_run(errno, error_number, detail, detail_size, "Making a memory file");
    struct stat status;
    if (fstat(fd, &status) != 0) {
        int saved = errno;
        close(fd);
        return not_run(saved, error_number, detail, detail_size, "Reading the memory file's mode");
    }
    int changed = fchmod(fd, status.st_mode & 07777);
    int saved = errno;
    close(fd);
    if (changed != 0)
        return refused(saved, error_number, detail, detail_size, what);
    return succeeded(error_number, detail, detail_size, what);
}


struct probe {
    const char *name;
    int (*run)(int *error_number, char *detail, size_t detail_size);
};

static const struct probe probes[] = {
    {"socket", probe_socket},
    {"connect", probe_connect},
    {"open-passwd", probe_open_passwd},
    {"create-file", probe_create_file},
    {"exec", probe_exec},
    {"fork", probe_fork},
    {"clone-parent", probe_clone_parent},
    {"signal-parent", probe_signal_parent},
    {"signal-group", probe_signal_group},
    {"sigqueue-parent", probe_sigqueue_parent},
    {"fsetown-parent", probe_fsetown_parent},
    {"prlimit-parent", probe_prlimit_parent},
    {"setpriority-parent", probe_setpriority_parent},
    {"affinity-parent", probe_affinity_parent},
    {"pdeathsig", probe_pdeathsig},
    {"unshare", probe_unshare},
    {"clone-newuser", probe_clone_newuser},
    {"clone3", probe_clone3},
    {"inotify", probe_inotify},
    {"flock", probe_flock},
    {"fchmod", probe_fchmod},
    {"capabilities", probe_capabilities},
    {"clock-adjust", probe_clock_adjust},
    {"clock-set", probe_clock_set},
    {"sched-fifo", probe_sched_fifo},
    {"nice-negative", probe_nice_negative},
    {"ioprio-realtime", probe_ioprio_realtime},
    {"mlock", probe_mlock},
    {"fifreeze", probe_fifreeze},
    {"ioctl-unlisted", probe_ioctl_unlisted},
    {"stat", probe_stat},
    {"stat-empty-path-flag", probe_stat_empty_path_flag},
    {"access", probe_access},
    {"readlink", probe_readlink},
    {"open-path", probe_open_path},
    {"unlisted-call", probe_unlisted_call},
    {"unknown-call", probe_unknown_call},
};

const char *ips_sandbox_probe_name(size_t index) {
    return index < sizeof probes / sizeof probes[0] ? probes[index].name : NULL;
}

int ips_sandbox_probe(const char *name, int *error_number, char *detail, size_t detail_size) {
    int ignored_errno;
    if (error_number == NULL)
        error_number = &ignored_errno;
    ips_say(detail, detail_size, "%s", "");
    for (size_t i = 0; name != NULL && i < sizeof probes / sizeof probes[0]; i++)
        if (strcmp(name, probes[i].name) == 0)
            return probes[i].run(error_number, detail, detail_size);
    *error_number = EINVAL;
    ips_say(detail, detail_size, "There is no probe named \"%s\".", name != NULL ? name : "(null)");
    return -1;
}
