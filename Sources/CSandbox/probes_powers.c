// The self-test's probes of what root could do and the filter's argument checks refuse: privilege,
// clocks, scheduling, locked memory, file-system ioctls, calls by path, and calls the filter does
// not list or know. Each tries one thing; none leaves anything changed when the sandbox fails to
// refuse it (see ips_sandbox_probe).
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

// The process holds no privilege: no user id 0 and no capability in any set (privilege.c), as the
// zygote and every helper make sure before they touch anything when started by root.
int probe_capabilities(int *error_number, char *detail, size_t detail_size) {
    struct ips_privilege privilege;
    if (ips_privilege_read(&privilege) != 0)
        return not_run(errno, error_number, detail, detail_size, "Reading the process's ids and capabilities");
    char found[200];
    snprintf(found, sizeof found,
        "uid %u, gid %u, capabilities effective %#llx, permitted %#llx, ambient %#llx, bounding %#llx", privilege.effective_uid,
        privilege.effective_gid, (unsigned long long) privilege.effective, (unsigned long long) privilege.permitted,
        (unsigned long long) privilege.ambient, (unsigned long long) privilege.bounding);
    if (ips_privilege_is_held(&privilege)) {
        *error_number = 0;
        ips_say(detail, detail_size, "The process holds privilege: %s.", found);
        return 1;
    }
    *error_number = EPERM;
    ips_say(detail, detail_size, "Privilege was refused: %s.", found);
    return 0;
}

// adjtimex asked to set the clock's tick to 0, which the kernel refuses (EINVAL) once it has checked
// CAP_SYS_TIME, and before it changes anything: EPERM is the filter, or a process without the
// capability, refusing it; EINVAL the call getting past both.
int probe_clock_adjust(int *error_number, char *detail, size_t detail_size) {
    const char *what = "adjtimex() setting the clock's tick";
    struct timex change;
    memset(&change, 0, sizeof change);
    change.modes = ADJ_TICK;
    change.tick = 0;
    if (adjtimex(&change) >= 0)
        return succeeded(error_number, detail, detail_size, what);
    if (errno == EPERM)
        return refused(errno, error_number, detail, detail_size, what);
    return let_through(errno, error_number, detail, detail_size, what);
}

// clock_settime to a time whose nanoseconds are out of range: the kernel refuses it (EINVAL) before it
// looks at the process's capabilities, so EPERM can only be the filter's.
int probe_clock_set(int *error_number, char *detail, size_t detail_size) {
    const char *what = "clock_settime(CLOCK_REALTIME)";
    struct timespec invalid = {.tv_sec = 0, .tv_nsec = 2000000000L};
    if (syscall(SYS_clock_settime, CLOCK_REALTIME, &invalid) == 0)
        return succeeded(error_number, detail, detail_size, what);
    if (errno == EPERM)
        return refused(errno, error_number, detail, detail_size, what);
    return let_through(errno, error_number, detail, detail_size, what);
}

// SCHED_FIFO with priority 0, which the kernel refuses (EINVAL: a real-time policy takes 1 to 99)
// before it looks at the process's rights: EPERM is the filter's.
int probe_sched_fifo(int *error_number, char *detail, size_t detail_size) {
    const char *what = "sched_setscheduler(SCHED_FIFO) on itself";
    struct sched_param parameter = {.sched_priority = 0};
    if (syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &parameter) == 0)
        return succeeded(error_number, detail, detail_size, what);
    if (errno == EPERM)
        return refused(errno, error_number, detail, detail_size, what);
    return let_through(errno, error_number, detail, detail_size, what);
}

// A nice value one below the one it has (read first). The kernel answers EACCES to a process without
// CAP_SYS_NICE, so EPERM is the filter's; one let through is undone.
int probe_nice_negative(int *error_number, char *detail, size_t detail_size) {
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (nice == -1 && errno != 0)
        return not_run(errno, error_number, detail, detail_size, "Reading its nice value");
    char what[96];
    snprintf(what, sizeof what, "setpriority(PRIO_PROCESS, itself) from %d to %d", nice, nice - 1);
    if (setpriority(PRIO_PROCESS, 0, nice - 1) == 0) {
        setpriority(PRIO_PROCESS, 0, nice);
        return succeeded(error_number, detail, detail_size, what);
    }
    if (errno == EPERM)
        return refused(errno, error_number, detail, detail_size, what);
    return let_through(errno, error_number, detail, detail_size, what);
}

// Real-time I/O priority on itself. The kernel refuses it (EPERM) without CAP_SYS_NICE too, so an
// EPERM here is the filter or the missing capability; one let through is undone.
int probe_ioprio_realtime(int *error_number, char *detail, size_t detail_size) {
    const char *what = "ioprio_set(real-time class) on itself";
    long before = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
    if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, (1 << 13) | 4) == 0) {
        if (before >= 0)
            syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, before);
        return succeeded(error_number, detail, detail_size, what);
    }
    return refused(errno, error_number, detail, detail_size, what);
}

// mlock2 with a flag it does not take: the kernel refuses it (EINVAL) before it looks at the limit or
// the process's rights, so EPERM is the filter's.
int probe_mlock(int *error_number, char *detail, size_t detail_size) {
    const char *what = "mlock2() of a page";
    static char page[4096] __attribute__((aligned(4096)));
    if (syscall(__NR_mlock2, page, sizeof page, ~(unsigned) MLOCK_ONFAULT) == 0) {
        munlock(page, sizeof page);
        return succeeded(error_number, detail, detail_size, what);
    }
    if (errno == EPERM)
        return refused(errno, error_number, detail, detail_size, what);
    return let_through(errno, error_number, detail, detail_size, what);
}

// FIFREEZE on a memory file of its own. The kernel refuses it (EPERM) without CAP_SYS_ADMIN too, and a
// memory file's file system cannot be frozen (EOPNOTSUPP) even with it, so nothing is frozen whatever
// the sandbox lets through; that the filter refuses ioctl commands off its list is the next probe's.
int probe_fifreeze(int *error_number, char *detail, size_t detail_size) {
    const char *what = "ioctl(FIFREEZE) on a descriptor";
    int fd = memfd_create("imagepipe-probe", MFD_CLOEXEC);
    if (fd < 0)
        return not_run(errno, error_number, detail, detail_size, "Making a memory file");
    int status = ioctl(fd, IOCTL_FIFREEZE, 0);
    int saved = errno;
    close(fd);
    if (status == 0)
        return succeeded(error_number, detail, detail_size, what);
    if (saved == EPERM)
        return refused(saved, error_number, detail, detail_size, what);
    return let_through(saved, error_number, detail, detail_size, what);
}

// An ioctl off the filter's list that the kernel answers for any process: FS_IOC_GETFLAGS on a memory
// file (its flags, or ENOTTY). EPERM is the filter's.
int probe_ioctl_unlisted(int *error_number, char *detail, size_t detail_size) {
    const char *what = "ioctl(FS_IOC_GETFLAGS) on a descriptor";
    int fd = memfd_create("imagepipe-probe", MFD_CLOEXEC);
    if (fd < 0)
        return not_run(errno, error_number, detail, detail_size, "Making a memory file");
    long flags = 0;
    int status = ioctl(fd, IOCTL_FS_IOC_GETFLAGS, &flags);
    int saved = errno;
    close(fd);
    if (status == 0)
        return succeeded(error_number, detail, detail_size, what);
    if (saved == EPERM)
        return refused(saved, error_number, detail, detail_size, what);
    return let_through(saved, error_number, detail, detail_size, what);
}

// Calls that take a path and that Landlock does not decide: each answers for any path (whether a
// file exists, its size, where a link points) unless the filter refuses it.
static int probe_path(long status, int *error_number, char *detail, size_t detail_size, const char *what) {
    if (status >= 0)
        return succeeded(error_number, detail, detail_size, what);
    if (errno == EPERM)
        return refused(errno, error_number, detail, detail_size, what);
    return let_through(errno, error_number, detail, detail_size, what);
}

int probe_stat(int *error_number, char *detail, size_t detail_size) {
    struct stat status;
    long result = syscall(SYS_newfstatat, AT_FDCWD, "/etc/passwd", &status, 0);
    return probe_path(result, error_number, detail, detail_size, "stat(\"/etc/passwd\")");
}

// glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH): with a path as well, the kernel would ignore the
// descriptor and answer for the path.
int probe_stat_empty_path_flag(int *error_number, char *detail, size_t detail_size) {
    struct stat status;
    long result = syscall(SYS_newfstatat, 0, "/etc/passwd", &status, AT_EMPTY_PATH);
    return probe_path(result, error_number, detail, detail_size, "newfstatat(0, \"/etc/passwd\", AT_EMPTY_PATH)");
}

int probe_access(int *error_number, char *detail, size_t detail_size) {
    long result = syscall(SYS_faccessat, AT_FDCWD, "/etc/passwd", R_OK, 0);
    return probe_path(result, error_number, detail, detail_size, "access(\"/etc/passwd\")");
}

int probe_readlink(int *error_number, char *detail, size_t detail_size) {
    char target[256];
    long result = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", target, sizeof target);
    return probe_path(result, error_number, detail, detail_size, "readlink(\"/proc/self/exe\")");
}

int probe_open_path(int *error_number, char *detail, size_t detail_size) {
    long fd = syscall(SYS_openat, AT_FDCWD, "/etc", O_PATH | O_CLOEXEC);
    if (fd >= 0)
        close((int) fd);
    return probe_path(fd, error_number, detail, detail_size, "open(\"/etc\", O_PATH)");
}

// A call the kernel has and the filter does not list: getcwd, which would tell where the worker runs.
int probe_unlisted_call(int *error_number, char *detail, size_t detail_size) {
    char directory[512];
    long result = syscall(SYS_getcwd, directory, sizeof directory);
    return probe_path(result, error_number, detail, detail_size, "getcwd(), a call the filter does not list,");
}

// A call number past every one the filter knows: answered ENOSYS, as a kernel without it would.
int probe_unknown_call(int *error_number, char *detail, size_t detail_size) {
    const char *what = "system call 1000, newer than the filter";
    if (syscall(1000, 0, 0, 0) == 0)
        return succeeded(error_number, detail, detail_size, what);
    if (errno == ENOSYS)
        return refused(errno, error_number, detail, detail_size, what);
    return let_through(errno, error_number, detail, detail_size, what);
}
