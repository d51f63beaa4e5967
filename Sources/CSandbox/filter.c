// The seccomp filters of the image helpers: an allow-list of the system calls a helper makes, each
// with its reason, shared by the zygote and every helper it forks; and each helper's own filter on
// top of it. Every call not on the list is refused (EPERM), and one the filter was not written
// against answers ENOSYS, as on an older kernel. The list was found by tracing helpers (strace -f)
// over the hostile fixtures, the fuzz seeds, every source format (HEIC, AVIF, GIF and animated WebP
// among them), every output format, `auto` quality, HDR gain maps, watermarks, metadata policies,
// crops and dry runs; a call a library starts to make after an upgrade is refused and reported by
// number in the worker's log (see the trap handler below), never let through.
//
// Written as the kernel's classic BPF, by hand: glibc 2.36 wraps no seccomp call, and libseccomp is
// not a dependency the package may add.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "filter_abi.h"
#include "internal.h"

// Calls numbered 424 and up have one number on every architecture; Debian 12's headers (Linux 6.1)
// lack the later ones.
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_rseq
#define __NR_rseq 334
#endif


#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#endif

// The x32 ABI's calls reach the same kernel with this bit set in the number; an x86_64 process has
// no use for them, and every refused call would come through under its x32 number.
#define X32_SYSCALL_BIT 0x40000000u

#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#endif
#ifndef F_GETPIPE_SZ
#define F_GETPIPE_SZ 1032
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef IOPRIO_WHO_PROCESS
#define IOPRIO_WHO_PROCESS 1
#endif
// An I/O priority is its class in the bits from 13 up; class 1 is real time.
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_RT 1u
#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif
#ifndef SCHED_IDLE
#define SCHED_IDLE 5
#endif
#ifndef SCHED_BATCH
#define SCHED_BATCH 3
#endif


#define ALLOW SECCOMP_RET_ALLOW
#define REFUSE (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define ABSENT (SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA))
#define REPORT (SECCOMP_RET_TRAP | TRAP_REPORT)
#define FSTATAT (SECCOMP_RET_TRAP | TRAP_FSTATAT)

void ips_say(char *buffer, size_t size, const char *format, ...) {
    if (buffer == NULL || size == 0)
        return;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(buffer, size, format, arguments);
    va_end(arguments);
}

// ---- The program builder -------------------------------------------------------------------------

// Far below the kernel's limit of 4096; building past it is reported, not truncated.
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

// Loads the low 32 bits of argument `index`: every argument tested here is an int, a pid_t, an
// unsigned int or flags the kernel reads as 32 bits, so the high half cannot make the call act on a
// value other than the one the filter saw.
static void load_argument(struct program *program, unsigned index) {
    emit(program, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t) (offsetof(struct seccomp_data, args) + 8 * index));
}

static void load_number(struct program *program) {
    emit(program, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t) offsetof(struct seccomp_data, nr));
}

static void answer(struct program *program, uint32_t action) { emit(program, BPF_RET | BPF_K, 0, 0, action); }

// Answers `action` when the loaded value equals `value`, and goes on otherwise.
static void answer_if_equal(struct program *program, uint32_t value, uint32_t action) {
    emit(program, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, value);
    answer(program, action);
}

// Answers `action` when the loaded value has any of `bits`, and goes on otherwise.
static void answer_if_any(struct program *program, uint32_t bits, uint32_t action) {
    emit(program, BPF_JMP | BPF_JSET | BPF_K, 0, 1, bits);
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

// The checks every filter starts with: the architecture (a call through another one's entry, such
// as int 0x80 on x86_64, has other numbers for everything, and ends the process), the x32 bit, and
// numbers newer than the filter.
static void begin_program(struct program *program) {
    emit(program, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t) offsetof(struct seccomp_data, arch));
    emit(program, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, FILTER_AUDIT_ARCH);
    answer(program, SECCOMP_RET_KILL_PROCESS);
    load_number(program);
#if defined(__x86_64__)
    emit(program, BPF_JMP | BPF_JGE | BPF_K, 0, 1, X32_SYSCALL_BIT);
    answer(program, REFUSE);
#endif
    emit(program, BPF_JMP | BPF_JGT | BPF_K, 0, 1, NEWEST_KNOWN_SYSCALL);
    answer(program, ABSENT);
}

// ---- The shared allow-list -----------------------------------------------------------------------

// The argument checks of the calls the list marks CHECKED, each a block that ends in an answer.

// mmap: any mapping of the helper's own memory and descriptors (Orc compiles its resize programs
// into anonymous memory it maps writable and executable), but none locked into RAM (MAP_LOCKED),
// which would let a helper pin the machine's memory past the reach of the OOM killer's reclaim.
static void check_mmap(struct program *program) {
    unsigned block = begin_block(program, __NR_mmap);
    load_argument(program, 3);
    answer_if_any(program, MAP_LOCKED, REPORT);
    answer(program, ALLOW);
    end_block(program, block);
}

// ioctl: only what glibc and the libraries ask of a descriptor for themselves: how many bytes wait
// (FIONREAD), blocking or not (FIONBIO), close-on-exec (FIOCLEX, FIONCLEX), and whether it is a
// terminal (TCGETS, isatty's question). Everything else, whatever the descriptor, is refused: the
// source file the worker hands over lies on a file system the helper must not freeze (FIFREEZE),
// shut down (EXT4_IOC_SHUTDOWN) or mark (FS_IOC_SETFLAGS); a terminal inherited as standard error
// must not take keystrokes (TIOCSTI); and new commands come with every kernel.
static void check_ioctl(struct program *program) {
    unsigned block = begin_block(program, __NR_ioctl);
    load_argument(program, 1);
    const uint32_t commands[] = {FIONREAD, FIONBIO, FIOCLEX, FIONCLEX, TCGETS};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        answer_if_equal(program, commands[i], ALLOW);
    answer(program, REPORT);
    end_block(program, block);
}

// fcntl: duplicating descriptors, their flags and their status flags, a memory file's seals and a
// pipe's size, read. Refused: F_SETOWN and its kin (another process made the target of a
// descriptor's signals), record locks and leases (on the source, a file other processes share), and
// F_NOTIFY (a directory watched, as inotify would).
static void check_fcntl(struct program *program) {
    unsigned block = begin_block(program, __NR_fcntl);
    load_argument(program, 1);
    const uint32_t commands[] = {F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_ADD_SEALS, F_GET_SEALS, F_GETPIPE_SZ};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        answer_if_equal(program, commands[i], ALLOW);
    answer(program, REPORT);
    end_block(program, block);
}

// clone: threads, and (for the zygote) forks, which it makes with CLONE_PARENT so that each helper is
// its worker's own child. Never a namespace (a view of the system of its own). Each helper's own
// filter then allows threads alone, never with CLONE_PARENT. clone3 passes its flags in memory the
// filter cannot read: see the list.
static void check_clone(struct program *program) {
    unsigned block = begin_block(program, __NR_clone);
    load_argument(program, 0);
    answer_if_any(
        program, CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP, REPORT);
    answer(program, ALLOW);
    end_block(program, block);
}

// prctl: naming threads and memory (glib and libdispatch name their threads), reading the process's
// own settings, dropping the dumpable flag (never raising it: the flag keeps the user's other
// processes out of the helper's memory and /proc files), and, in the shared filter only, the death
// signal a forked helper asks for again (a fork clears it), which its own filter then refuses.
static void check_prctl(struct program *program) {
    unsigned block = begin_block(program, __NR_prctl);
    load_argument(program, 0);
    const uint32_t options[] = {PR_SET_NAME, PR_GET_NAME, PR_SET_VMA, PR_GET_DUMPABLE, PR_GET_SECCOMP, PR_GET_NO_NEW_PRIVS,
        PR_GET_PDEATHSIG, PR_SET_PDEATHSIG, PR_GET_TIMERSLACK, PR_GET_THP_DISABLE, PR_CAPBSET_READ};
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
        answer_if_equal(program, options[i], ALLOW);
    emit(program, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, PR_SET_DUMPABLE);
    answer(program, REPORT);
    load_argument(program, 1);
    answer_if_equal(program, 0, ALLOW);
    answer(program, REPORT);
    end_block(program, block);
}

// sched_setscheduler: the normal policies only (OTHER, BATCH, IDLE, with or without reset-on-fork);
// a real-time policy would let a helper starve the machine. The target is checked by the helper's
// own filter.
static void check_sched_setscheduler(struct program *program) {
    unsigned block = begin_block(program, __NR_sched_setscheduler);
    load_argument(program, 1);
    emit(program, BPF_ALU | BPF_AND | BPF_K, 0, 0, ~(uint32_t) SCHED_RESET_ON_FORK);
    const uint32_t policies[] = {SCHED_OTHER, SCHED_BATCH, SCHED_IDLE};
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
        answer_if_equal(program, policies[i], ALLOW);
    answer(program, REPORT);
    end_block(program, block);
}

// setpriority: a process's nice value (not a group's or a user's, which reach every process of the
// helper's user), and never below 0: no helper runs ahead of its worker.
static void check_setpriority(struct program *program) {
    unsigned block = begin_block(program, __NR_setpriority);
    load_argument(program, 0);
    emit(program, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, PRIO_PROCESS);
    answer(program, REPORT);
    load_argument(program, 2);
    // A negative nice value has its top bit set.
    answer_if_any(program, 0x80000000u, REPORT);
    answer(program, ALLOW);
    end_block(program, block);
}

// ioprio_set: a process's I/O priority, in any class but real time.
static void check_ioprio_set(struct program *program) {
    unsigned block = begin_block(program, __NR_ioprio_set);
    load_argument(program, 0);
    emit(program, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, IOPRIO_WHO_PROCESS);
    answer(program, REPORT);
    load_argument(program, 2);
    emit(program, BPF_ALU | BPF_RSH | BPF_K, 0, 0, IOPRIO_CLASS_SHIFT);
    answer_if_equal(program, IOPRIO_CLASS_RT, REPORT);
    answer(program, ALLOW);
    end_block(program, block);
}

enum verdict {
    /// Allowed with any arguments.
    ANY,
    /// Allowed as its check (a block above) decides.
    CHECKED,
    /// Refused (EPERM) without a word: libraries try it in the normal course of a job and go on
    /// without (a configuration file they look for), so reporting it would only fill the log.
    QUIET,
    /// Answered ENOSYS, as a kernel without the call would, so that glibc falls back to an older one.
    OLDER,
    /// Made by the trap handler in a form that takes no path (see the handler).
    EMULATED,
};

struct rule {
    uint32_t number;
    enum verdict verdict;
    void (*check)(struct program *program);
};

// Every call the shared filter lets through, one entry each with why. The argument-checked ones come
// first, the most frequent first: the kernel skips the filter for a call it has proved always
// allowed, but runs it for these each time.
static const struct rule shared_rules[] = {
    // Locks and condition variables, every operation: a helper's threads make thousands of futex
    // calls an image, and a call whose arguments the filter reads runs the filter each time (both
    // filters: about 0.1 ms an image, a tenth of a small image's work), where one it allows whatever
    // the arguments the kernel lets through without running it.
    {__NR_futex, ANY, NULL},
    {__NR_mmap, CHECKED, check_mmap},               // malloc's large blocks, thread stacks, Orc's code
    {__NR_ioctl, CHECKED, check_ioctl},             // FIONREAD and kin; isatty
    {__NR_fcntl, CHECKED, check_fcntl},             // descriptor and status flags, memory-file seals
    {__NR_clone, CHECKED, check_clone},             // libvips' and glib's threads; the zygote's forks
    {__NR_prctl, CHECKED, check_prctl},             // thread names; the death signal of a new helper
    {__NR_sched_setscheduler, CHECKED, check_sched_setscheduler}, // normal policies only
    {__NR_setpriority, CHECKED, check_setpriority}, // libdispatch's threads lower their own priority
    {__NR_ioprio_set, CHECKED, check_ioprio_set},   // never real-time I/O
    // Reading and writing descriptors the helper holds: the channel, the source, its memory files,
    // its output pipe. Opening is refused (below), so these are the only descriptors there are.
    {__NR_read, ANY, NULL},       // the source, read through libvips' and the decoders' own buffers
    {__NR_write, ANY, NULL},      // standard error (the worker logs it), the memory files
    {__NR_readv, ANY, NULL},      // as read
    {__NR_writev, ANY, NULL},     // as write (glibc's stdio)
    {__NR_pread64, ANY, NULL},    // the source's header, read in place
    {__NR_pwrite64, ANY, NULL},   // each output into its memory file
    {__NR_preadv, ANY, NULL},     // as pread64
    {__NR_pwritev, ANY, NULL},    // as pwrite64
    {__NR_lseek, ANY, NULL},      // libvips reads the source from its start, and seeks in it
    {__NR_close, ANY, NULL},      // descriptors done with
    {__NR_close_range, ANY, NULL}, // a forked helper closes what it does not need
    {__NR_dup, ANY, NULL},        // libvips keeps a descriptor of its own for a source
    {__NR_dup3, ANY, NULL},       // a forked helper takes its channel and output as 1, 2 and 3
#ifdef __NR_dup2
    {__NR_dup2, ANY, NULL},       // as dup3, on x86_64
#endif
    {__NR_fstat, ANY, NULL},      // a descriptor's size and type (and what newfstatat becomes)
    {__NR_newfstatat, EMULATED, NULL}, // glibc's fstat: made as fstat when it names no path
    {__NR_ftruncate, ANY, NULL},  // a memory file sized
    {__NR_fallocate, ANY, NULL},  // as ftruncate
    {__NR_fadvise64, ANY, NULL},  // read-ahead hints on the source
    {__NR_memfd_create, ANY, NULL}, // a memory file for each output handed back
    {__NR_sendmsg, ANY, NULL},    // the channel: replies, with descriptors beside them
    {__NR_recvmsg, ANY, NULL},    // the channel: requests
#ifdef __NR_poll
    {__NR_poll, ANY, NULL},       // waiting on the channel with the job's deadline
#endif
    {__NR_ppoll, ANY, NULL},      // as poll
    // Memory.
    {__NR_brk, ANY, NULL},        // malloc's main heap
    {__NR_munmap, ANY, NULL},     // memory given back
    {__NR_mremap, ANY, NULL},     // realloc of large blocks
    {__NR_mprotect, ANY, NULL},   // thread stacks' guard pages, Orc's code made executable
    {__NR_madvise, ANY, NULL},    // malloc's trims (DONTNEED), huge pages
    {__NR_membarrier, ANY, NULL}, // the Swift runtime and liburcu-style readers
    {__NR_mincore, ANY, NULL},    // AddressSanitizer's checks of its own mappings (the tests' build)
    // Threads and the process's own life.
    {__NR_set_robust_list, ANY, NULL}, // every new thread
    {__NR_rseq, ANY, NULL},       // every new thread (glibc 2.35 and later)
    {__NR_clone3, OLDER, NULL},   // its flags are in memory the filter cannot read: glibc then uses clone
    {__NR_exit, ANY, NULL},       // a thread ends
    {__NR_exit_group, ANY, NULL}, // the helper ends
    {__NR_gettid, ANY, NULL},     // glib, the Swift runtime
    {__NR_getpid, ANY, NULL},     // raise(), the helper's own pid
    {__NR_getppid, ANY, NULL},    // a forked helper checks its worker is still there
    {__NR_kill, ANY, NULL},       // to itself: its own filter checks the pid
    {__NR_tgkill, ANY, NULL},     // raise() and abort(), to itself: as kill
    {__NR_rt_sigqueueinfo, ANY, NULL},   // as kill
    {__NR_rt_tgsigqueueinfo, ANY, NULL}, // as kill
    {__NR_sched_yield, ANY, NULL},       // spinning locks
    {__NR_sched_getaffinity, ANY, NULL}, // glib and libvips count the CPUs they may use
    {__NR_sched_setaffinity, ANY, NULL}, // to itself: its own filter checks the pid
    {__NR_sched_getparam, ANY, NULL},    // reading
    {__NR_sched_getscheduler, ANY, NULL}, // reading
    {__NR_sched_getattr, ANY, NULL},     // glib reads a thread's scheduling before its pools start
    {__NR_sched_setparam, ANY, NULL},    // to itself; with a normal policy the only priority is 0
    {__NR_sched_setattr, QUIET, NULL},   // glib's thread pools try it: its policy is in memory the filter cannot read
    {__NR_sched_get_priority_max, ANY, NULL}, // reading
    {__NR_sched_get_priority_min, ANY, NULL}, // reading
    {__NR_getpriority, ANY, NULL},       // reading
    {__NR_ioprio_get, ANY, NULL},        // reading
    {__NR_prlimit64, ANY, NULL},         // its own limits (getrlimit, setrlimit): its own filter checks the pid
    {__NR_getrusage, ANY, NULL},         // libvips' and glib's timers
    {__NR_times, ANY, NULL},             // as getrusage
    {__NR_sysinfo, ANY, NULL},           // glibc sizes its caches from the memory there is
    {__NR_getrandom, ANY, NULL},         // glib's and the Swift runtime's hashing seeds
    {__NR_umask, ANY, NULL},             // glib reads it (by setting it): the helper creates no file
    {__NR_getuid, ANY, NULL},            // reading its own identity
    {__NR_geteuid, ANY, NULL},
    {__NR_getgid, ANY, NULL},
    {__NR_getegid, ANY, NULL},
    {__NR_getresuid, ANY, NULL},
    {__NR_getresgid, ANY, NULL},
    {__NR_getgroups, ANY, NULL},
    {__NR_capget, ANY, NULL},            // reading its capabilities (none)
    {__NR_getpgid, ANY, NULL},
    {__NR_getsid, ANY, NULL},
#ifdef __NR_getpgrp
    {__NR_getpgrp, ANY, NULL},
#endif
    {__NR_getcpu, ANY, NULL},            // malloc picks an arena by CPU
    // Signals, to itself.
    {__NR_rt_sigaction, ANY, NULL},      // handlers (the trap handler among them)
    {__NR_rt_sigprocmask, ANY, NULL},    // every new thread blocks and unblocks signals
    {__NR_rt_sigreturn, ANY, NULL},      // the end of every handler
    {__NR_rt_sigpending, ANY, NULL},
    {__NR_rt_sigsuspend, ANY, NULL},
    {__NR_rt_sigtimedwait, ANY, NULL},
    {__NR_sigaltstack, ANY, NULL},       // the Swift runtime's and AddressSanitizer's handler stacks
    {__NR_restart_syscall, ANY, NULL},   // a sleep resumed after a signal
    // Time: reading clocks and sleeping. No call that sets a clock is here: settimeofday,
    // clock_settime, adjtimex and clock_adjtime would change the host's time, under which SigV4
    // signatures and TLS certificates are checked.
    {__NR_clock_gettime, ANY, NULL},     // where the vDSO does not answer
    {__NR_clock_getres, ANY, NULL},
    {__NR_gettimeofday, ANY, NULL},
#ifdef __NR_time
    {__NR_time, ANY, NULL},
#endif
    {__NR_nanosleep, ANY, NULL},         // glib's back-off
    {__NR_clock_nanosleep, ANY, NULL},   // as nanosleep (glibc 2.36's sleep)
    // The sandbox, once more: each forked helper applies its own Landlock domain and filter on top of
    // what it inherited; its own filter then refuses these.
    {__NR_landlock_create_ruleset, ANY, NULL},
    {__NR_landlock_restrict_self, ANY, NULL},
    {__NR_seccomp, ANY, NULL},
    // Opening by path: refused, quietly, as libraries look for files they can do without
    // (/usr/lib/ssl/openssl.cnf, /etc/localtime, /proc/sys/vm/overcommit_memory, Orc's /tmp/orcexec.*).
    // Every other call that takes a path (stat, access, readlink, statx, open_tree, and the rest) is
    // not on the list: refused and reported.
#ifdef __NR_open
    {__NR_open, QUIET, NULL},
#endif
    {__NR_openat, QUIET, NULL},
    {__NR_openat2, QUIET, NULL},
#ifdef __NR_creat
    {__NR_creat, QUIET, NULL},
#endif
};

int32_t ips_filter_allowed_count(void) {
    int32_t count = 0;
    for (size_t i = 0; i < sizeof shared_rules / sizeof shared_rules[0]; i++)
        if (shared_rules[i].verdict == ANY || shared_rules[i].verdict == CHECKED || shared_rules[i].verdict == EMULATED)
            count++;
    return count;
}

// Builds the shared filter: the rules above, then every other call answered REPORT.
static void build_shared(struct program *program) {
    begin_program(program);
    size_t count = sizeof shared_rules / sizeof shared_rules[0];
    for (size_t i = 0; i < count; i++)
        if (shared_rules[i].verdict == CHECKED)
            shared_rules[i].check(program);
    for (size_t i = 0; i < count; i++) {
        switch (shared_rules[i].verdict) {
        case ANY: answer_if_equal(program, shared_rules[i].number, ALLOW); break;
        case QUIET: answer_if_equal(program, shared_rules[i].number, REFUSE); break;
        case OLDER: answer_if_equal(program, shared_rules[i].number, ABSENT); break;
        case EMULATED: answer_if_equal(program, shared_rules[i].number, FSTATAT); break;
        case CHECKED: break;
        }
    }
    answer(program, REPORT);
}

// ---- Each helper's own filter --------------------------------------------------------------------

// On top of the shared filter, a helper may not: make a process (clone only with CLONE_THREAD, never
// CLONE_PARENT; the zygote forks, a helper never does: a process it made would be nobody's to wait
// for and could outlive it), signal, limit or reprioritise any process but itself (the calls that name a process
// take 0 or its pid: the filter cannot tell a thread id of its own from another process's pid, so a
// thread other than the first sets its own with 0), set its death signal (so that it cannot stop
// dying with its worker), close ranges, or stack another Landlock domain or filter
// (the set the self-test checked stays the set there is). Everything else is as the shared filter says.
static void build_own(struct program *program, uint32_t own_pid) {
    begin_program(program);
    unsigned block = begin_block(program, __NR_clone);
    load_argument(program, 0);
    // CLONE_PARENT (a child of the worker's, which the zygote makes): refused whatever comes with it.
    answer_if_any(program, CLONE_PARENT, REPORT);
    emit(program, BPF_JMP | BPF_JSET | BPF_K, 0, 1, CLONE_THREAD);
    answer(program, ALLOW);
    answer(program, REPORT);
    end_block(program, block);

    const uint32_t own_signals[] = {__NR_kill, __NR_tgkill, __NR_rt_sigqueueinfo, __NR_rt_tgsigqueueinfo};
    for (size_t i = 0; i < sizeof own_signals / sizeof own_signals[0]; i++) {
        block = begin_block(program, own_signals[i]);
        load_argument(program, 0);
        answer_if_equal(program, own_pid, ALLOW);
        answer(program, REPORT);
        end_block(program, block);
    }
    const uint32_t own_process_first[] = {__NR_prlimit64, __NR_sched_setaffinity, __NR_sched_setscheduler, __NR_sched_setparam};
    for (size_t i = 0; i < sizeof own_process_first / sizeof own_process_first[0]; i++) {
        block = begin_block(program, own_process_first[i]);
        load_argument(program, 0);
        answer_if_equal(program, 0, ALLOW);
        answer_if_equal(program, own_pid, ALLOW);
        answer(program, REPORT);
        end_block(program, block);
    }
    const uint32_t own_process_second[] = {__NR_setpriority, __NR_ioprio_set};
    for (size_t i = 0; i < sizeof own_process_second / sizeof own_process_second[0]; i++) {
        block = begin_block(program, own_process_second[i]);
        load_argument(program, 1);
        answer_if_equal(program, 0, ALLOW);
        answer_if_equal(program, own_pid, ALLOW);
        answer(program, REPORT);
        end_block(program, block);
    }
    block = begin_block(program, __NR_prctl);
    load_argument(program, 0);
    answer_if_equal(program, PR_SET_PDEATHSIG, REPORT);
    answer(program, ALLOW);
    end_block(program, block);

    const uint32_t zygote_only[] = {__NR_close_range, __NR_landlock_create_ruleset, __NR_landlock_restrict_self, __NR_seccomp};
    for (size_t i = 0; i < sizeof zygote_only / sizeof zygote_only[0]; i++)
        answer_if_equal(program, zygote_only[i], REPORT);
    answer(program, ALLOW);
}

// ---- Installing ----------------------------------------------------------------------------------

// TSYNC puts the filter on every thread of the process; there is only one when the sandbox is
// applied, so it is a guard against a thread started behind its back, not a requirement. The prctl
// fallback is for kernels without the seccomp() call (before 3.17).
static int install(struct program *program, const char *which, char *error, size_t error_size) {
    if (program->overflowed) {
        ips_say(error, error_size, "Building the %s seccomp filter failed: it needs more than %d instructions.", which,
            PROGRAM_CAPACITY);
        return -1;
    }
    struct sock_fprog fprog = {.len = (unsigned short) program->length, .filter = program->code};
    long status = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog);
    if (status < 0 && errno == ENOSYS)
        status = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0);
    if (status < 0) {
        int saved = errno;
        ips_say(error, error_size, "Installing the %s seccomp filter failed: %s.", which, strerror(saved));
        return -1;
    }
    if (status > 0) {
        ips_say(error, error_size, "Installing the %s seccomp filter failed: thread %ld could not take it on.", which, status);
        return -1;
    }
    return 0;
}

int ips_filter_install_shared(char *error, size_t error_size) {
    static struct program program;
    memset(&program, 0, sizeof program);
    build_shared(&program);
    return install(&program, "shared", error, error_size);
}

int ips_filter_install_own(uint32_t own_pid, char *error, size_t error_size) {
    static struct program program;
    memset(&program, 0, sizeof program);
    build_own(&program, own_pid);
    return install(&program, "helper's own", error, error_size);
}
