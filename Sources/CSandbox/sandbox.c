// The helper's sandbox: resource limits, no_new_privs, a Landlock domain without rules and a seccomp
// filter, all applied by the helper to itself; and the probes its self-test runs to see them hold.
// Landlock and seccomp are called through syscall(): glibc 2.36 wraps neither, and libseccomp is not
// a dependency the package may add.

// syscall(), pipe2(), F_SETOWN_EX and the Linux-only constants need _GNU_SOURCE; defined here
// alone, as in CFileSystem, it cannot change how the system headers the Swift modules share are read.
// The system headers come before sandbox.h: compiled with -fmodules, its <stdint.h> is a module
// that reads glibc's features.h without _GNU_SOURCE, and that reading would be the only one.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#if defined(__has_include)
#if __has_include(<linux/landlock.h>)
#include <linux/landlock.h>
#endif
#endif

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

// The filter reads the low half of 64-bit arguments at the start of each 8-byte slot, and checks
// the architecture it was written for; anywhere else it would test the wrong bits or none.
#if defined(__x86_64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "the seccomp filter is written for x86_64 and aarch64 only"
#endif
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the seccomp filter reads the low half of arguments as little-endian"
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
#ifndef __NR_process_mrelease
#define __NR_process_mrelease 448
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif
#ifndef __NR_file_setattr
#define __NR_file_setattr 469
#endif

// The newest system call this filter was written against (listns, Linux 6.18). A deny list cannot
// refuse calls it has never heard of, so every higher number answers ENOSYS, as on a kernel too old
// to have it: libraries fall back from that, and a later kernel opens no hole in the list.
#define NEWEST_KNOWN_SYSCALL 470u

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

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#endif

// The x32 ABI's calls reach the same kernel with this bit set in the number; an x86_64 process has
// no use for them, and allowing them would let every refused call through under its x32 number.
#define X32_SYSCALL_BIT 0x40000000u

// ioctl commands that act on other processes or on a file other processes share, whatever
// descriptor they are sent to. The values are the kernel's, and the same on x86_64 and aarch64 (both
// use the generic encoding); they are written out because <linux/fs.h> clashes with glibc's headers
// and TCGETS2 is defined there in terms of a struct glibc does not declare.
#ifndef FIOSETOWN
#define FIOSETOWN 0x8901
#endif
#ifndef SIOCSPGRP
#define SIOCSPGRP 0x8902
#endif
#define IOCTL_FS_IOC_SETFLAGS 0x40086602u
#define IOCTL_FS_IOC32_SETFLAGS 0x40046602u
#define IOCTL_FS_IOC_SETVERSION 0x40087602u
#define IOCTL_FS_IOC32_SETVERSION 0x40047602u
#define IOCTL_EXT4_IOC_SETVERSION 0x40086604u
#define IOCTL_EXT4_IOC32_SETVERSION 0x40046604u
#define IOCTL_EXT4_IOC_MIGRATE 0x6609u
#define IOCTL_FS_IOC_FSSETXATTR 0x401C5820u
#define IOCTL_FS_IOC_ENABLE_VERITY 0x40806685u
// Terminal commands all have 0x54 ('T') as their type byte, the legacy ones (0x54xx) and the newer
// encoded ones alike.
#define IOCTL_TYPE_MASK 0xFF00u
#define IOCTL_TERMINAL_TYPE 0x5400u
#define IOCTL_TCGETS2 0x802C542Au

#ifndef F_SETOWN_EX
#define F_SETOWN_EX 15
#endif
#ifndef F_OFD_SETLK
#define F_OFD_SETLK 37
#endif
#ifndef F_OFD_SETLKW
#define F_OFD_SETLKW 38
#endif
#ifndef F_SETLEASE
#define F_SETLEASE 1024
#endif
#ifndef F_NOTIFY
#define F_NOTIFY 1026
#endif
#ifndef IOPRIO_WHO_PROCESS
#define IOPRIO_WHO_PROCESS 1
#endif
#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif
#ifndef PR_SET_CHILD_SUBREAPER
#define PR_SET_CHILD_SUBREAPER 36
#endif
#ifndef PR_SET_MM
#define PR_SET_MM 35
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif

static void set_message(char *buffer, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));

static void set_message(char *buffer, size_t size, const char *format, ...) {
    if (buffer == NULL || size == 0)
        return;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(buffer, size, format, arguments);
    va_end(arguments);
}

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
        set_message(error, error_size, "Asking the kernel for its Landlock version failed: %s.", strerror(saved));
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
        set_message(error, error_size, "Creating the Landlock ruleset (ABI %ld) failed: %s.", version, strerror(saved));
        return -1;
    }
    if (syscall(__NR_landlock_restrict_self, ruleset, 0U) != 0) {
        int saved = errno;
        close(ruleset);
        set_message(error, error_size, "Restricting the process with the Landlock ruleset failed: %s.", strerror(saved));
        return -1;
    }
    close(ruleset);
    return 0;
}

// Enough for the list below (about 500 instructions) with room to grow, and far below the kernel's
// limit of 4096; building past it is reported, not truncated.
#define PROGRAM_CAPACITY 1024

struct program {
    struct sock_filter code[PROGRAM_CAPACITY];
    unsigned length;
    int overflowed;
};

static void emit(struct program *program, uint16_t code, uint8_t jump_true, uint8_t jump_false, uint32_t k) {
    if (program->length >= PROGRAM_CAPACITY) {
        program->overflowed = 1;
        return;
    }
    program->code[program->length++] = (struct sock_filter) {code, jump_true, jump_false, k};
}

// Loads the low 32 bits of argument `index`: every argument tested below is an int, a pid_t or an
// unsigned int, or (clone's flags) cut to 32 bits by the kernel, so the high half cannot make the
// call act on a value other than the one the filter saw.
static void load_argument(struct program *program, unsigned index) {
    emit(program, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t) (offsetof(struct seccomp_data, args) + 8 * index));
}

static void answer(struct program *program, uint32_t action) {
    emit(program, BPF_RET | BPF_K, 0, 0, action);
}

// Answers `action` when the loaded number or argument equals `value`, and goes on otherwise.
static void answer_if_equal(struct program *program, uint32_t value, uint32_t action) {
    emit(program, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, value);
    answer(program, action);
}

// A block that looks at the arguments of the call `number`: begin_block emits the test that jumps
// past the block for every other call, and end_block, once the block is written, sets how far that
// is. Inside, the accumulator is overwritten by the arguments, so every path through a block must
// end in an answer; past it the number is still loaded, as only the jump leads there.
static unsigned begin_block(struct program *program, uint32_t number) {
    unsigned start = program->length;
    emit(program, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, number);
    return start;
}

static void end_block(struct program *program, unsigned start) {
    if (program->overflowed)
        return;
    unsigned distance = program->length - start - 1;
    // A conditional jump reaches at most 255 instructions ahead.
    if (distance > 255) {
        program->overflowed = 1;
        return;
    }
    program->code[start].jf = (uint8_t) distance;
}

#define ALLOW SECCOMP_RET_ALLOW
#define REFUSE (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define ABSENT (SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA))

// Answered EPERM whatever their arguments: none is used by the decoders, glib, malloc or the
// channel, and each would let a helper that an exploit took over reach beyond its own memory and
// descriptors. A plain refusal rather than a kill, so probes and libraries see a failed call.
static const uint32_t refused_calls[] = {
    // New sockets and connections; the channel was connected before the sandbox and is used with
    // sendmsg and recvmsg. send() and recv() are sendto and recvfrom in glibc and are refused too.
#ifdef __NR_socket
    __NR_socket,
#endif
#ifdef __NR_socketpair
    __NR_socketpair,
#endif
#ifdef __NR_connect
    __NR_connect,
#endif
#ifdef __NR_bind
    __NR_bind,
#endif
#ifdef __NR_listen
    __NR_listen,
#endif
#ifdef __NR_accept
    __NR_accept,
#endif
#ifdef __NR_accept4
    __NR_accept4,
#endif
#ifdef __NR_sendto
    __NR_sendto,
#endif
#ifdef __NR_recvfrom
    __NR_recvfrom,
#endif
#ifdef __NR_sendmmsg
    __NR_sendmmsg,
#endif
#ifdef __NR_recvmmsg
    __NR_recvmmsg,
#endif
#ifdef __NR_socketcall
    __NR_socketcall,
#endif
    // Running other programs.
#ifdef __NR_execve
    __NR_execve,
#endif
#ifdef __NR_execveat
    __NR_execveat,
#endif
    // Reaching into other processes. tkill names a thread without its process, so it cannot be
    // checked like tgkill; glibc uses tgkill.
#ifdef __NR_ptrace
    __NR_ptrace,
#endif
#ifdef __NR_process_vm_readv
    __NR_process_vm_readv,
#endif
#ifdef __NR_process_vm_writev
    __NR_process_vm_writev,
#endif
#ifdef __NR_pidfd_open
    __NR_pidfd_open,
#endif
#ifdef __NR_pidfd_getfd
    __NR_pidfd_getfd,
#endif
#ifdef __NR_pidfd_send_signal
    __NR_pidfd_send_signal,
#endif
#ifdef __NR_process_madvise
    __NR_process_madvise,
#endif
#ifdef __NR_process_mrelease
    __NR_process_mrelease,
#endif
#ifdef __NR_kcmp
    __NR_kcmp,
#endif
#ifdef __NR_tkill
    __NR_tkill,
#endif
    // The robust-futex list of any process the helper may trace: an address in another process.
#ifdef __NR_get_robust_list
    __NR_get_robust_list,
#endif
    // Other processes, and leaving the process group. A helper makes threads only (clone with
    // CLONE_THREAD, checked below): a process it made would be nobody's to wait for (the worker
    // waits only for its helpers' pids), could outlive it and could fill the user's process table.
    // fork and vfork are x86_64's own calls; glibc forks with clone. The worker starts each helper
    // in a process group of its own, so that a terminal's Ctrl-C reaches the worker only: setpgid
    // could move it into another group of the session (the worker's), setsid out of the session.
#ifdef __NR_fork
    __NR_fork,
#endif
#ifdef __NR_vfork
    __NR_vfork,
#endif
#ifdef __NR_setsid
    __NR_setsid,
#endif
#ifdef __NR_setpgid
    __NR_setpgid,
#endif
    // Watching files: inotify watches are set by path, Landlock does not check them, and a helper
    // watching an upload directory would learn the names of other uploads as they arrive. fanotify
    // likewise (and marks whole mounts).
#ifdef __NR_inotify_init
    __NR_inotify_init,
#endif
#ifdef __NR_inotify_init1
    __NR_inotify_init1,
#endif
#ifdef __NR_inotify_add_watch
    __NR_inotify_add_watch,
#endif
#ifdef __NR_inotify_rm_watch
    __NR_inotify_rm_watch,
#endif
#ifdef __NR_fanotify_init
    __NR_fanotify_init,
#endif
#ifdef __NR_fanotify_mark
    __NR_fanotify_mark,
#endif
    // Namespaces, mounts and the root directory: the ways out of a file-system view.
#ifdef __NR_unshare
    __NR_unshare,
#endif
#ifdef __NR_setns
    __NR_setns,
#endif
#ifdef __NR_mount
    __NR_mount,
#endif
#ifdef __NR_umount
    __NR_umount,
#endif
#ifdef __NR_umount2
    __NR_umount2,
#endif
#ifdef __NR_pivot_root
    __NR_pivot_root,
#endif
#ifdef __NR_chroot
    __NR_chroot,
#endif
#ifdef __NR_fsopen
    __NR_fsopen,
#endif
#ifdef __NR_fsconfig
    __NR_fsconfig,
#endif
#ifdef __NR_fsmount
    __NR_fsmount,
#endif
#ifdef __NR_fspick
    __NR_fspick,
#endif
#ifdef __NR_move_mount
    __NR_move_mount,
#endif
#ifdef __NR_open_tree
    __NR_open_tree,
#endif
#ifdef __NR_open_tree_attr
    __NR_open_tree_attr,
#endif
#ifdef __NR_mount_setattr
    __NR_mount_setattr,
#endif
    // Kernel attack surface with a long record of exploits, and nothing a decoder needs.
#ifdef __NR_add_key
    __NR_add_key,
#endif
#ifdef __NR_request_key
    __NR_request_key,
#endif
#ifdef __NR_keyctl
    __NR_keyctl,
#endif
#ifdef __NR_bpf
    __NR_bpf,
#endif
#ifdef __NR_perf_event_open
    __NR_perf_event_open,
#endif
#ifdef __NR_userfaultfd
    __NR_userfaultfd,
#endif
#ifdef __NR_io_uring_setup
    __NR_io_uring_setup,
#endif
#ifdef __NR_io_uring_enter
    __NR_io_uring_enter,
#endif
#ifdef __NR_io_uring_register
    __NR_io_uring_register,
#endif
    // The kernel itself, its modules and the machine: refused even when the helper runs with
    // capabilities, as root in a container would.
#ifdef __NR_kexec_load
    __NR_kexec_load,
#endif
#ifdef __NR_kexec_file_load
    __NR_kexec_file_load,
#endif
#ifdef __NR_init_module
    __NR_init_module,
#endif
#ifdef __NR_finit_module
    __NR_finit_module,
#endif
#ifdef __NR_delete_module
    __NR_delete_module,
#endif
#ifdef __NR_open_by_handle_at
    __NR_open_by_handle_at,
#endif
#ifdef __NR_name_to_handle_at
    __NR_name_to_handle_at,
#endif
#ifdef __NR_personality
    __NR_personality,
#endif
#ifdef __NR_swapon
    __NR_swapon,
#endif
#ifdef __NR_swapoff
    __NR_swapoff,
#endif
#ifdef __NR_reboot
    __NR_reboot,
#endif
#ifdef __NR_acct
    __NR_acct,
#endif
#ifdef __NR_quotactl
    __NR_quotactl,
#endif
#ifdef __NR_quotactl_fd
    __NR_quotactl_fd,
#endif
#ifdef __NR_syslog
    __NR_syslog,
#endif
#ifdef __NR_vhangup
    __NR_vhangup,
#endif
#ifdef __NR_iopl
    __NR_iopl,
#endif
#ifdef __NR_ioperm
    __NR_ioperm,
#endif
#ifdef __NR_modify_ldt
    __NR_modify_ldt,
#endif
#ifdef __NR_lookup_dcookie
    __NR_lookup_dcookie,
#endif
#ifdef __NR_uselib
    __NR_uselib,
#endif
#ifdef __NR_ustat
    __NR_ustat,
#endif
#ifdef __NR_sysfs
    __NR_sysfs,
#endif
#ifdef __NR__sysctl
    __NR__sysctl,
#endif
#ifdef __NR_nfsservctl
    __NR_nfsservctl,
#endif
#ifdef __NR_settimeofday
    __NR_settimeofday,
#endif
#ifdef __NR_clock_settime
    __NR_clock_settime,
#endif
#ifdef __NR_sethostname
    __NR_sethostname,
#endif
#ifdef __NR_setdomainname
    __NR_setdomainname,
#endif
    // Changes of identity.
#ifdef __NR_setuid
    __NR_setuid,
#endif
#ifdef __NR_setgid
    __NR_setgid,
#endif
#ifdef __NR_setreuid
    __NR_setreuid,
#endif
#ifdef __NR_setregid
    __NR_setregid,
#endif
#ifdef __NR_setresuid
    __NR_setresuid,
#endif
#ifdef __NR_setresgid
    __NR_setresgid,
#endif
#ifdef __NR_setgroups
    __NR_setgroups,
#endif
#ifdef __NR_setfsuid
    __NR_setfsuid,
#endif
#ifdef __NR_setfsgid
    __NR_setfsgid,
#endif
    // Changes to existing files by path that Landlock does not cover at any ABI up to 7: it decides
    // opening, creating, removing, renaming and truncating (ABI 3), not modes, owners, times or
    // extended attributes. truncate by path is here for kernels older than ABI 3.
#ifdef __NR_chmod
    __NR_chmod,
#endif
#ifdef __NR_fchmodat
    __NR_fchmodat,
#endif
#ifdef __NR_fchmodat2
    __NR_fchmodat2,
#endif
#ifdef __NR_chown
    __NR_chown,
#endif
#ifdef __NR_lchown
    __NR_lchown,
#endif
#ifdef __NR_fchownat
    __NR_fchownat,
#endif
#ifdef __NR_utime
    __NR_utime,
#endif
#ifdef __NR_utimes
    __NR_utimes,
#endif
#ifdef __NR_futimesat
    __NR_futimesat,
#endif
#ifdef __NR_utimensat
    __NR_utimensat,
#endif
#ifdef __NR_setxattr
    __NR_setxattr,
#endif
#ifdef __NR_lsetxattr
    __NR_lsetxattr,
#endif
#ifdef __NR_removexattr
    __NR_removexattr,
#endif
#ifdef __NR_lremovexattr
    __NR_lremovexattr,
#endif
#ifdef __NR_setxattrat
    __NR_setxattrat,
#endif
#ifdef __NR_removexattrat
    __NR_removexattrat,
#endif
#ifdef __NR_file_setattr
    __NR_file_setattr,
#endif
#ifdef __NR_truncate
    __NR_truncate,
#endif
    // The same changes through a descriptor. Landlock decides when a file is opened; a descriptor
    // opened before the sandbox, such as the source file the worker hands over (the worker's own
    // upload, shared with it and with the queue), keeps every right its opening gave. A read-only
    // descriptor is enough to change the mode, the owner or the extended attributes of a file the
    // helper's user owns, and to lock it (flock, and fcntl's locks and leases below), so that
    // another process that locks the same file waits on the helper or takes the file for in use.
    // ftruncate, fallocate and writes need a writable descriptor and stay allowed for the helper's
    // memory files.
#ifdef __NR_fchmod
    __NR_fchmod,
#endif
#ifdef __NR_fchown
    __NR_fchown,
#endif
#ifdef __NR_fsetxattr
    __NR_fsetxattr,
#endif
#ifdef __NR_fremovexattr
    __NR_fremovexattr,
#endif
#ifdef __NR_flock
    __NR_flock,
#endif
    // Writing back every dirty page of every file system, or of the whole one a descriptor is on:
    // other processes' files and their I/O, nothing of the helper's.
#ifdef __NR_sync
    __NR_sync,
#endif
#ifdef __NR_syncfs
    __NR_syncfs,
#endif
    // System V IPC and POSIX message queues: shared by key or name with every process of the same
    // user in the IPC namespace, and outside Landlock's file-system rules.
#ifdef __NR_shmget
    __NR_shmget,
#endif
#ifdef __NR_shmat
    __NR_shmat,
#endif
#ifdef __NR_shmctl
    __NR_shmctl,
#endif
#ifdef __NR_shmdt
    __NR_shmdt,
#endif
#ifdef __NR_semget
    __NR_semget,
#endif
#ifdef __NR_semop
    __NR_semop,
#endif
#ifdef __NR_semtimedop
    __NR_semtimedop,
#endif
#ifdef __NR_semctl
    __NR_semctl,
#endif
#ifdef __NR_msgget
    __NR_msgget,
#endif
#ifdef __NR_msgsnd
    __NR_msgsnd,
#endif
#ifdef __NR_msgrcv
    __NR_msgrcv,
#endif
#ifdef __NR_msgctl
    __NR_msgctl,
#endif
#ifdef __NR_mq_open
    __NR_mq_open,
#endif
#ifdef __NR_mq_unlink
    __NR_mq_unlink,
#endif
#ifdef __NR_mq_timedsend
    __NR_mq_timedsend,
#endif
#ifdef __NR_mq_timedreceive
    __NR_mq_timedreceive,
#endif
#ifdef __NR_mq_notify
    __NR_mq_notify,
#endif
#ifdef __NR_mq_getsetattr
    __NR_mq_getsetattr,
#endif
    // The sandbox itself: no new Landlock domain or seccomp filter after this one. Neither could
    // loosen what is in place, but a helper has no reason to stack more, and refusing keeps the
    // set of filters the one the self-test checked.
    __NR_landlock_create_ruleset,
    __NR_landlock_add_rule,
    __NR_landlock_restrict_self,
#ifdef __NR_seccomp
    __NR_seccomp,
#endif
};

// Builds the filter for a process whose pid is `own_pid`. The pid is a constant in the filter,
// which is why the sandbox is applied by the helper after it starts, not inherited from the parent.
static void build_filter(struct program *program, uint32_t own_pid) {
    // A call made through another architecture's entry (int 0x80 on x86_64) has other numbers for
    // everything; the list below would be meaningless for it, so it ends the process.
    emit(program, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t) offsetof(struct seccomp_data, arch));
    emit(program, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, SANDBOX_AUDIT_ARCH);
    answer(program, SECCOMP_RET_KILL_PROCESS);

    emit(program, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t) offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    emit(program, BPF_JMP | BPF_JGE | BPF_K, 0, 1, X32_SYSCALL_BIT);
    answer(program, REFUSE);
#endif
    emit(program, BPF_JMP | BPF_JGT | BPF_K, 0, 1, NEWEST_KNOWN_SYSCALL);
    answer(program, ABSENT);

    // The calls whose arguments are looked at come first: the kernel skips the filter for calls it
    // has proved always allowed, but runs it for these every time, and fcntl and ioctl are frequent.
    unsigned block;

    // fcntl: F_SETOWN and F_SETOWN_EX make another process (the parent) the target of the signal a
    // descriptor sends when it becomes ready, a way around the checks on kill below. The record
    // locks (F_SETLK, F_SETLKW and their open-file-description forms) and leases act on a file other
    // processes share, as flock does (see refused_calls); a lease would also hold back anyone else's
    // opening of the file for the lease-break time. F_NOTIFY watches a directory as inotify does.
    // F_GETLK and F_GETLEASE only read, and stay.
    block = begin_block(program, __NR_fcntl);
    load_argument(program, 1);
    const uint32_t refused_fcntl[] = {F_SETOWN, F_SETOWN_EX, F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE,
        F_NOTIFY};
    for (size_t i = 0; i < sizeof refused_fcntl / sizeof refused_fcntl[0]; i++)
        answer_if_equal(program, refused_fcntl[i], REFUSE);
    answer(program, ALLOW);
    end_block(program, block);

    // ioctl: FIOSETOWN and SIOCSPGRP do what F_SETOWN does. The file-system commands change a file
    // through a read-only descriptor when the helper's user owns it, as it may own the source file
    // the helper is handed: its attribute flags (append-only, no-dump, ...), its generation, its
    // project, its layout (ext4's migration to extents), or fs-verity, which makes it read-only for
    // good. On a terminal, a descriptor such as an inherited standard error reaches what every
    // process of the session shares: the keystrokes pushed into it (TIOCSTI, TIOCLINUX), its modes,
    // its window size (which signals the foreground group), its foreground group and its session.
    // There, only the commands that read are allowed; every other command of type 'T' is refused,
    // those that change it and those added later. The generic FIO* commands share the 'T' range and
    // stay: FIONREAD, FIONBIO, FIOASYNC (whose signal goes to the descriptor's owner, which the
    // helper cannot set), FIOCLEX, FIONCLEX, FIOQSIZE. Landlock's IOCTL_DEV right is checked when a
    // device is opened, so it does not cover an inherited one.
    block = begin_block(program, __NR_ioctl);
    load_argument(program, 1);
    const uint32_t refused_ioctl[] = {FIOSETOWN, SIOCSPGRP, IOCTL_FS_IOC_SETFLAGS, IOCTL_FS_IOC32_SETFLAGS,
        IOCTL_FS_IOC_SETVERSION, IOCTL_FS_IOC32_SETVERSION, IOCTL_EXT4_IOC_SETVERSION, IOCTL_EXT4_IOC32_SETVERSION,
        IOCTL_EXT4_IOC_MIGRATE, IOCTL_FS_IOC_FSSETXATTR, IOCTL_FS_IOC_ENABLE_VERITY};
    for (size_t i = 0; i < sizeof refused_ioctl / sizeof refused_ioctl[0]; i++)
        answer_if_equal(program, refused_ioctl[i], REFUSE);
    const uint32_t reading_terminal_ioctl[] = {TCGETS, IOCTL_TCGETS2, TCGETA, TIOCGWINSZ, TIOCGPGRP, TIOCGSID, TIOCOUTQ,
        TIOCGETD, TIOCMGET, TIOCGPTN, TIOCGPKT, TIOCGPTLCK, TIOCGEXCL, TIOCGDEV, FIONREAD, FIONBIO, FIOASYNC, FIOCLEX,
        FIONCLEX, FIOQSIZE};
    for (size_t i = 0; i < sizeof reading_terminal_ioctl / sizeof reading_terminal_ioctl[0]; i++)
        answer_if_equal(program, reading_terminal_ioctl[i], ALLOW);
    emit(program, BPF_ALU | BPF_AND | BPF_K, 0, 0, IOCTL_TYPE_MASK);
    answer_if_equal(program, IOCTL_TERMINAL_TYPE, REFUSE);
    answer(program, ALLOW);
    end_block(program, block);

    // clone: threads only. glibc's pthread_create passes CLONE_THREAD (which the kernel accepts only
    // with CLONE_SIGHAND and CLONE_VM: a thread of this very process); fork(), posix_spawn() and
    // system() pass no CLONE_THREAD and are refused, for the reasons fork is (see refused_calls).
    // CLONE_PARENT makes the new process a child of the helper's parent, the worker, which never
    // waits for it; it is refused whatever comes with it, even CLONE_THREAD, beside which it would
    // change nothing, so that the rule has no exception to get wrong. A namespace flag would start
    // a child outside the helper's view of the system. The flags are the first argument on
    // both architectures, cut to 32 bits by the kernel. (clone3 passes them in memory the filter
    // cannot read; it is answered below.)
    block = begin_block(program, __NR_clone);
    load_argument(program, 0);
    emit(program, BPF_JMP | BPF_JSET | BPF_K, 0, 1,
        CLONE_PARENT | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
            | CLONE_NEWCGROUP);
    answer(program, REFUSE);
    emit(program, BPF_JMP | BPF_JSET | BPF_K, 0, 1, CLONE_THREAD);
    answer(program, ALLOW);
    answer(program, REFUSE);
    end_block(program, block);

    // kill: only the helper itself. Not 0, which means its process group, and the helper may share
    // the parent's; nor any negative group. raise() and abort() use tgkill, not kill.
    // tgkill, rt_sigqueueinfo and rt_tgsigqueueinfo name the target process first: only the helper
    // itself, so that raise(), pthread_kill() and sigqueue() to itself work and nothing else does.
    const uint32_t own_signals[] = {__NR_kill, __NR_tgkill, __NR_rt_sigqueueinfo, __NR_rt_tgsigqueueinfo};
    for (size_t i = 0; i < sizeof own_signals / sizeof own_signals[0]; i++) {
        block = begin_block(program, own_signals[i]);
        load_argument(program, 0);
        answer_if_equal(program, own_pid, ALLOW);
        answer(program, REFUSE);
        end_block(program, block);
    }

    // Calls that name the process they act on first, as 0 for the caller or as a pid: only the
    // helper itself. On another process of the helper's user they would set its resource limits
    // (prlimit64: no descriptors, no CPU time for the worker), its CPU affinity, scheduling policy
    // and priority (the worker pinned to one CPU or put on SCHED_IDLE), or move its memory between
    // NUMA nodes; glibc's getrlimit and setrlimit pass 0, and libdispatch's threads set their nice
    // value with 0. The kernel also takes a thread id here, and the filter cannot tell one of the
    // helper's threads from another process's pid, so a thread other than the first can set only
    // itself, with 0; glibc calls sched_setaffinity and sched_setscheduler with a new thread's id
    // only for a pthread_create given an explicit CPU set or policy, which nothing in the helper
    // asks for (libgomp would, for OMP_PROC_BIND or GOMP_CPU_AFFINITY, which a helper's environment
    // does not carry). sched_setattr takes 0 only, not the helper's own pid: GLib's thread pools
    // try it with the calling thread's id to decide whether their threads may copy the creating
    // thread's scheduling, and would then have each new thread call it with its own id, which the
    // filter refuses and GLib reports as a critical warning; refused from the start, GLib starts its
    // pool threads from a thread of its own instead, and says nothing.
    const uint32_t own_process_calls[] = {__NR_prlimit64, __NR_sched_setaffinity, __NR_sched_setscheduler,
        __NR_sched_setparam, __NR_migrate_pages, __NR_move_pages};
    for (size_t i = 0; i < sizeof own_process_calls / sizeof own_process_calls[0]; i++) {
        block = begin_block(program, own_process_calls[i]);
        load_argument(program, 0);
        answer_if_equal(program, 0, ALLOW);
        answer_if_equal(program, own_pid, ALLOW);
        answer(program, REFUSE);
        end_block(program, block);
    }
    block = begin_block(program, __NR_sched_setattr);
    load_argument(program, 0);
    answer_if_equal(program, 0, ALLOW);
    answer(program, REFUSE);
    end_block(program, block);

    // setpriority and ioprio_set name the kind of target first: a process (or thread) by id, which
    // is then checked as above, or a process group or a user, which would reach every process of
    // the helper's user at once and is refused.
    const uint32_t priority_calls[][2] = {{__NR_setpriority, PRIO_PROCESS}, {__NR_ioprio_set, IOPRIO_WHO_PROCESS}};
    for (size_t i = 0; i < sizeof priority_calls / sizeof priority_calls[0]; i++) {
        block = begin_block(program, priority_calls[i][0]);
        load_argument(program, 0);
        emit(program, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, priority_calls[i][1]);
        answer(program, REFUSE);
        load_argument(program, 1);
        answer_if_equal(program, 0, ALLOW);
        answer_if_equal(program, own_pid, ALLOW);
        answer(program, REFUSE);
        end_block(program, block);
    }

    // prctl stays: glib and libdispatch name their threads with PR_SET_NAME, and libraries read
    // with the PR_GET_ options and name memory with PR_SET_VMA. Refused: the old way to install a
    // seccomp filter; PR_SET_PDEATHSIG, which the helper sets before the sandbox so that it dies
    // with its worker and could otherwise clear; PR_SET_PTRACER, which would let another process
    // trace it; PR_SET_CHILD_SUBREAPER, and PR_SET_MM (its command line and executable as ps and
    // /proc show them, for a helper with CAP_SYS_RESOURCE, as root in a container has), neither of
    // use to a helper; and PR_SET_DUMPABLE except to 0, so that
    // whatever drops the flag (its core dumps and the tracing and /proc access of the user's other
    // processes) cannot raise it again. (The sandbox leaves the flag as exec set it: where a lease
    // cannot tell, the queue's check for a file still being written reads every process's
    // /proc/PID/fd, which a process that is not dumpable hides from the user's other processes.)
    block = begin_block(program, __NR_prctl);
    load_argument(program, 0);
    const uint32_t refused_prctl[] = {PR_SET_SECCOMP, PR_SET_PDEATHSIG, PR_SET_PTRACER, PR_SET_CHILD_SUBREAPER,
        PR_SET_MM};
    for (size_t i = 0; i < sizeof refused_prctl / sizeof refused_prctl[0]; i++)
        answer_if_equal(program, refused_prctl[i], REFUSE);
    emit(program, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, PR_SET_DUMPABLE);
    answer(program, ALLOW);
    load_argument(program, 1);
    answer_if_equal(program, 0, ALLOW);
    answer(program, REFUSE);
    end_block(program, block);

    // clone3: ENOSYS, not EPERM, so glibc's pthread_create and posix_spawn take it for an old kernel
    // and fall back to clone, whose flags the filter can read.
    answer_if_equal(program, __NR_clone3, ABSENT);

    for (size_t i = 0; i < sizeof refused_calls / sizeof refused_calls[0]; i++)
        answer_if_equal(program, refused_calls[i], REFUSE);

    answer(program, ALLOW);
}

// Installs the filter. TSYNC puts it on every thread of the process; there is only one when
// ips_sandbox_apply gets here, so it is a guard against a thread started behind its back, not a
// requirement. The prctl fallback is for kernels without the seccomp() call (before 3.17).
static int apply_seccomp(uint32_t own_pid, char *error, size_t error_size) {
    struct program program;
    memset(&program, 0, sizeof program);
    build_filter(&program, own_pid);
    if (program.overflowed) {
        set_message(error, error_size, "Building the seccomp filter failed: it needs more than %d instructions.",
            PROGRAM_CAPACITY);
        return -1;
    }
    struct sock_fprog fprog = {.len = (unsigned short) program.length, .filter = program.code};
    long status = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog);
    if (status < 0 && errno == ENOSYS)
        status = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0);
    if (status < 0) {
        int saved = errno;
        set_message(error, error_size, "Installing the seccomp filter failed: %s.", strerror(saved));
        return -1;
    }
    if (status > 0) {
        set_message(error, error_size, "Installing the seccomp filter failed: thread %ld could not take it on.", status);
        return -1;
    }
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
        set_message(error, error_size, "Reading %s failed: %s.", name, strerror(saved));
        return -1;
    }
    rlim_t wanted = (rlim_t) bytes;
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted)
        wanted = limit.rlim_max;
    limit.rlim_cur = wanted;
    limit.rlim_max = wanted;
    if (setrlimit(resource, &limit) != 0) {
        int saved = errno;
        set_message(
            error, error_size, "Setting %s to %lld bytes failed: %s.", name, (long long) wanted, strerror(saved));
        return -1;
    }
    return 0;
}

int ips_sandbox_apply(const struct ips_sandbox_options *options, struct ips_sandbox_result *result, char *error,
    size_t error_size) {
    set_message(error, error_size, "%s", "");
    struct ips_sandbox_result found = {0};

    int threads = ips_thread_count();
    if (threads < 0) {
        int saved = errno;
        set_message(error, error_size,
            "Counting the process's threads in /proc/self/status failed: %s; the sandbox must know there is only one.",
            strerror(saved));
        return -1;
    }
    if (threads != 1) {
        set_message(error, error_size,
            "The process has %d threads; the sandbox must be applied while it has one, because Landlock would "
            "leave the others outside.",
            threads);
        return -1;
    }

    struct rlimit no_core = {0, 0};
    if (setrlimit(RLIMIT_CORE, &no_core) != 0) {
        int saved = errno;
        set_message(error, error_size, "Setting RLIMIT_CORE to 0 failed: %s.", strerror(saved));
        return -1;
    }

    // AddressSanitizer's allocator and quarantine map far more than the images need (the tests'
    // sanitized build): a data limit there would only make it fail. Every other build keeps it.
    if (options != NULL && !IPS_UNDER_ADDRESS_SANITIZER
        && set_hard_limit(RLIMIT_DATA, "RLIMIT_DATA", options->data_limit_bytes, error, error_size) != 0)
        return -1;
    if (options != NULL
        && set_hard_limit(RLIMIT_FSIZE, "RLIMIT_FSIZE", options->file_size_limit_bytes, error, error_size) != 0)
        return -1;

    // A write or a truncation past RLIMIT_FSIZE (set here or inherited) sends SIGXFSZ, whose default
    // ends the process with a core dump, mid-job and with nothing said; ignored, the call fails with
    // EFBIG instead, and the helper reports a failed job.
    struct sigaction ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&ignore.sa_mask);
    if (sigaction(SIGXFSZ, &ignore, NULL) != 0) {
        int saved = errno;
        set_message(error, error_size, "Ignoring SIGXFSZ failed: %s.", strerror(saved));
        return -1;
    }

    // no_new_privs first: landlock_restrict_self and an unprivileged seccomp filter require it.
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        int saved = errno;
        set_message(error, error_size, "Setting no_new_privs failed: %s.", strerror(saved));
        return -1;
    }

    // Landlock before seccomp, whose filter refuses the Landlock calls.
    if (apply_landlock(&found.landlock_abi, error, error_size) != 0)
        return -1;

    if (apply_seccomp((uint32_t) getpid(), error, error_size) != 0)
        return -1;

    if (result != NULL)
        *result = found;
    return 0;
}

// The three answers a probe gives, each with the errno and the sentence ips_sandbox_probe promises.
static int refused(int number, int *error_number, char *detail, size_t detail_size, const char *what) {
    *error_number = number;
    set_message(detail, detail_size, "%s was refused: %s.", what, strerror(number));
    return 0;
}

static int succeeded(int *error_number, char *detail, size_t detail_size, const char *what) {
    *error_number = 0;
    set_message(detail, detail_size, "%s succeeded.", what);
    return 1;
}

static int not_run(int number, int *error_number, char *detail, size_t detail_size, const char *what) {
    *error_number = number;
    set_message(detail, detail_size, "%s failed, so the probe could not tell: %s.", what, strerror(number));
    return -1;
}

// The answer of an attempt made so that the kernel itself refuses it (its arguments are invalid, or
// name nothing) only once the sandbox has let it through: any answer but the sandbox's own is the
// sandbox letting it through.
static int let_through(int number, int *error_number, char *detail, size_t detail_size, const char *what) {
    *error_number = 0;
    set_message(detail, detail_size, "%s got past the sandbox: the kernel answered %s.", what, strerror(number));
    return 1;
}

static void wait_for(pid_t child) {
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        continue;
}

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
            set_message(detail, detail_size,
                "socket(AF_INET, SOCK_STREAM) was refused (%s), and %s was refused: %s, the filter refusing connect "
                "itself.",
                strerror(socket_errno), what, strerror(connect_errno));
            return 0;
        }
        *error_number = 0;
        set_message(detail, detail_size,
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
        set_message(detail, detail_size,
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
        set_message(detail, detail_size,
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

// Without O_ASYNC on the pipe nothing is ever sent, so an F_SETOWN let through does no harm.
static int probe_fsetown_parent(int *error_number, char *detail, size_t detail_size) {
    const char *what = "fcntl(F_SETOWN, parent) on a pipe";
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0)
        return not_run(errno, error_number, detail, detail_size, "Making a pipe");
    int status = fcntl(pipe_fds[0], F_SETOWN, getppid());
    int saved = errno;
    close(pipe_fds[0]);
    close(pipe_fds[1]);
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
};

const char *ips_sandbox_probe_name(size_t index) {
    return index < sizeof probes / sizeof probes[0] ? probes[index].name : NULL;
}

int ips_sandbox_probe(const char *name, int *error_number, char *detail, size_t detail_size) {
    int ignored_errno;
    if (error_number == NULL)
        error_number = &ignored_errno;
    set_message(detail, detail_size, "%s", "");
    for (size_t i = 0; name != NULL && i < sizeof probes / sizeof probes[0]; i++)
        if (strcmp(name, probes[i].name) == 0)
            return probes[i].run(error_number, detail, detail_size);
    *error_number = EINVAL;
    set_message(detail, detail_size, "There is no probe named \"%s\".", name != NULL ? name : "(null)");
    return -1;
}
