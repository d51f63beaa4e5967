// The sandbox an image helper process puts itself in before it reads any untrusted bytes, and the
// probes its self-test runs inside it to see that the refusals hold.
#pragma once
#include <stddef.h>
#include <stdint.h>

/// What the caller chooses about the sandbox; everything else in it is fixed.
struct ips_sandbox_options {
    /// RLIMIT_DATA in bytes, set as both the soft and the hard limit so the helper cannot raise it
    /// again; 0 or less leaves the limit as inherited. Since Linux 4.7 it counts private writable
    /// mappings too, so it bounds malloc, thread stacks and libvips' buffers alike, and a decoder
    /// asked for a huge image gets a failed allocation instead of pushing the host into swap.
    int64_t data_limit_bytes;
    /// RLIMIT_FSIZE in bytes, the largest file the helper may write or truncate to, set as both the
    /// soft and the hard limit (a lower inherited hard limit stays); 0 or less leaves it as
    /// inherited. It bounds the memory files a helper writes its outputs into: their pages are
    /// shared memory, which RLIMIT_DATA does not count, so without it a helper could hand the
    /// worker a file of gigabytes (or a sparse one, by ftruncate) to read. A write past it fails
    /// with EFBIG: the sandbox ignores SIGXFSZ, which would otherwise kill the helper with no word.
    int64_t file_size_limit_bytes;
};

/// What ips_sandbox_apply found out about the kernel while applying the sandbox.
struct ips_sandbox_result {
    /// The Landlock ABI version the kernel offered, or 0 when it has none (not built in, or not
    /// enabled at boot). At 0 the helper is left with the seccomp filter alone and can still open
    /// any file its user may, so the caller should say so in its log; it is not an error because
    /// refusing to decode on such a host would only move the work back into the unsandboxed worker.
    /// The ruleset uses every right the ABIs up to 7 define that this version has.
    int32_t landlock_abi;
};

/// Puts the calling process in its sandbox for good: ips_sandbox_apply_shared, then
/// ips_sandbox_apply_own. A helper started from the executable, and the self-test, apply it whole; the
/// zygote applies the shared part before it forks helpers, and each fork its own part.
///
/// The sandbox refuses everything that reaches past the helper's own memory, threads and
/// descriptors. Its seccomp filter is an allow-list (filter.c, one table with the reason for each
/// call): reading and writing the descriptors it holds, memory, its own threads and signals,
/// reading clocks and sleeping. Everything else is refused with EPERM (calls newer than the filter
/// answer ENOSYS), among them: sockets but the channel, exec, new processes, namespaces, mounts,
/// tracing, keyrings, BPF, io_uring, modules; every call that takes a path (opening, stat, access,
/// readlink, O_PATH), which leaves only the descriptors it was handed; clocks set; real-time
/// scheduling, a negative nice value, real-time I/O priority, locked memory; ioctl but FIONREAD,
/// FIONBIO, FIOCLEX, FIONCLEX and TCGETS (so no file system is frozen or shut down through the
/// source's descriptor); fcntl's F_SETOWN, locks, leases and F_NOTIFY; signals, limits and
/// priorities of any process but itself. A refused call is reported once by number on standard
/// error, which the worker logs as the helper's.
///
/// Call it from the process's only thread, after every file the helper needs is open and every
/// library is loaded and initialised, and before any untrusted input is read: Landlock binds only
/// the calling thread and the threads it starts later. Descriptors already open stay usable; the
/// parent should let the helper inherit only its channel, and hand it open files of its own (a file
/// opened anew, a pipe of its own), as the filter leaves fcntl's F_SETFL and lseek, which act on an
/// open file every descriptor of it shares.
///
/// Returns 0, with `result` filled in when not NULL, or -1 with a sentence naming the step that
/// failed and the system's reason in `error` (when not NULL and `error_size` is not 0). After a
/// failure part of the sandbox may already be in place, and the helper should exit rather than go on.
int ips_sandbox_apply(const struct ips_sandbox_options *options, struct ips_sandbox_result *result, char *error,
    size_t error_size);

/// The part of the sandbox every helper shares, in this order: no core dumps (RLIMIT_CORE 0, so a
/// crash in a decoder does not write image data to disk), no locked memory, no real-time priority
/// and no lower nice value (hard limits of 0), RLIMIT_DATA and RLIMIT_FSIZE when asked, SIGXFSZ
/// ignored, no_new_privs (required by Landlock and an unprivileged filter, and it keeps a set-uid
/// program from ever raising the process's rights), the handler of the calls the filter traps, and
/// the shared filter. Fails unless the process has one thread. Inherited by every fork.
int ips_sandbox_apply_shared(const struct ips_sandbox_options *options, char *error, size_t error_size);

/// The part of the sandbox that is each helper's own, applied by the helper itself (it names its own
/// pid): a Landlock domain with no rules (no file may be opened, created, truncated or executed, no
/// TCP port bound or connected to, no signal sent and no abstract socket reached outside the helper,
/// as far as the kernel's ABI version allows), and its own filter on top of the shared one (threads
/// only, signals and priorities for itself alone, the death signal kept, no further sandbox). Call
/// it after ips_sandbox_apply_shared, in this process or the one it was forked from, from the
/// process's only thread.
int ips_sandbox_apply_own(struct ips_sandbox_result *result, char *error, size_t error_size);

/// Whether the handler of trapped calls reports each refused call on standard error (on by default):
/// the self-test turns it off, its probes being meant to be refused.
void ips_sandbox_set_reporting(int on);

/// Runs the self-test probe `name` (see ips_sandbox_probe_name) in the calling process, which is
/// meant to be in the sandbox already. Each probe tries one thing the sandbox must refuse: opening
/// a socket ("socket"), connecting to TCP port 9 on the loopback address, or, with sockets refused,
/// calling connect on a socket already open (or on no descriptor), so that EPERM shows the filter
/// refusing connect itself ("connect"), opening /etc/passwd ("open-passwd"), creating a file in
/// /tmp ("create-file"), executing /bin/true ("exec"), making a process through clone without
/// CLONE_THREAD and, on x86_64, the fork call ("fork"), clone with CLONE_PARENT ("clone-parent"),
/// signalling the parent ("signal-parent"), its process group ("signal-group") or the parent
/// through sigqueue ("sigqueue-parent"), making the parent the owner of a descriptor's signals
/// ("fsetown-parent"), reading the parent's resource limits ("prlimit-parent"), setting the
/// parent's nice value ("setpriority-parent") and CPU affinity ("affinity-parent"), setting the
/// helper's death signal ("pdeathsig"), a new user namespace through unshare ("unshare") and
/// through clone ("clone-newuser"), clone3 ("clone3"), which answers ENOSYS so that glibc falls
/// back to clone, whose flags the filter sees, an inotify instance ("inotify"), flock and fchmod on a
/// descriptor ("flock", "fchmod"); privilege held, a user id 0 or any capability ("capabilities");
/// setting the clock ("clock-adjust", "clock-set"), SCHED_FIFO ("sched-fifo"), a lower nice value
/// ("nice-negative"), real-time I/O priority ("ioprio-realtime"), locking memory ("mlock"), FIFREEZE
/// and an ioctl off the filter's list on a descriptor ("fifreeze", "ioctl-unlisted"), calls that
/// answer for a path ("stat", "stat-empty-path-flag", "access", "readlink", "open-path"), a call the
/// filter does not list ("unlisted-call") and one newer than the filter ("unknown-call", ENOSYS).
///
/// No probe leaves anything changed when the sandbox fails to refuse it, and none needs a child
/// process (which the sandbox refuses to make): the file is removed, signal 0 only checks
/// permission, the parent's limits are read and not set, its nice value, CPU set and the death
/// signal are set to what they are, flock, fchmod and the ioctls act on a memory file of the probe's
/// own (whose file system cannot be frozen), a lower nice value or real-time I/O priority let through
/// is set back, the clock and SCHED_FIFO are asked for with values the kernel refuses, a
/// process made by "fork" leaves at once and is waited for, and exec, unshare, "clone-parent" and
/// "clone-newuser" run in the calling process with arguments the kernel itself refuses (an
/// over-long argument, a flag unshare does not take, a thread without CLONE_SIGHAND) once the
/// sandbox lets them through: EPERM (or Landlock's EACCES for exec) is the sandbox's refusal, and
/// any other answer the sandbox letting the call through.
///
/// Returns 0 when the attempt was refused, with the errno it was refused with in `*error_number`;
/// 1 when it succeeded or got past the sandbox, with `*error_number` 0; and -1 when the probe could
/// not run (an unknown name, or a pipe, memory file or reading the probe needs failed), with that
/// errno. `detail` (when not NULL and `detail_size` is not 0) receives a sentence saying what was
/// tried and what answered.
int ips_sandbox_probe(const char *name, int *error_number, char *detail, size_t detail_size);

/// The name of probe number `index`, counting from 0, or NULL past the last: a self-test runs
/// them all by counting up until NULL, and so also runs the probes added after it was written.
const char *ips_sandbox_probe_name(size_t index);

/// The threads of the calling process, from /proc/self/status; -1 with errno when it cannot be read.
int ips_thread_count(void);

/// What this kernel offers the sandbox, for `imagepipe version --verbose`: the Landlock ABI (0 when
/// the kernel has none), whether seccomp filters may be installed and can trap and answer with an
/// errno (1 or 0), and the number of calls the shared filter's allow-list names.
struct ips_sandbox_support {
    int32_t landlock_abi;
    int32_t seccomp_filters;
    int32_t allowed_calls;
};

/// Reads what this kernel offers the sandbox, changing nothing.
struct ips_sandbox_support ips_sandbox_support(void);
