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

/// Puts the calling process in its sandbox for good, in this order: no core dumps (RLIMIT_CORE 0,
/// so a crash in a decoder does not write image data to disk), RLIMIT_DATA when asked,
/// no_new_privs (required by both Landlock and an unprivileged seccomp filter, and it keeps a
/// set-uid program from ever raising the helper's rights), a Landlock domain with no rules (no
/// file may be opened, created or executed, no TCP port bound or connected to, no signal sent and
/// no abstract socket reached outside the domain, as far as the kernel's ABI version allows), and a
/// seccomp filter that refuses with EPERM the system calls a decoder never needs: sockets other
/// than the ones already open, exec, namespaces, mounts, tracing, keyrings, BPF, io_uring, module
/// and kexec loading, changes of identity and of file metadata, and signals to other processes.
///
/// Call it once, from the process's only thread, after every file the helper needs is open and
/// every library is loaded and initialised, and before any untrusted input is read: Landlock binds
/// only the calling thread and the threads it starts later, so a second thread already running
/// would stay outside the domain, and the call fails rather than leave one there. Descriptors
/// already open stay usable; the parent should let the helper inherit only its channel.
///
/// Returns 0, with `result` filled in when not NULL, or -1 with a sentence naming the step that
/// failed and the system's reason in `error` (when not NULL and `error_size` is not 0). After a
/// failure part of the sandbox may already be in place, and the helper should exit rather than go on.
int ips_sandbox_apply(const struct ips_sandbox_options *options, struct ips_sandbox_result *result, char *error,
    size_t error_size);

/// Runs the self-test probe `name` (see ips_sandbox_probe_name) in the calling process, which is
/// meant to be in the sandbox already. Each probe tries one thing the sandbox must refuse: opening
/// a socket ("socket"), connecting to TCP port 9 on the loopback address ("connect"), opening
/// /etc/passwd ("open-passwd"), creating a file in /tmp ("create-file"), executing /bin/true
/// ("exec"), signalling the parent ("signal-parent"), its process group ("signal-group") or the
/// parent through sigqueue ("sigqueue-parent"), making the parent the owner of a descriptor's
/// signals ("fsetown-parent"), reading the parent's resource limits ("prlimit-parent"), a new user
/// namespace through unshare ("unshare") and through clone ("clone-newuser"), and clone3
/// ("clone3"), which answers ENOSYS so that glibc falls back to clone, whose flags the filter sees.
/// Whatever a probe does when the sandbox fails to refuse it is undone or harmless: the file is
/// removed, signal 0 only checks permission, the limits are read and not set, and exec and the
/// namespaces happen in a child process that exits at once.
///
/// Returns 0 when the attempt was refused, with the errno it was refused with in `*error_number`;
/// 1 when it succeeded, with `*error_number` 0; and -1 when the probe could not run (an unknown
/// name, or a pipe or fork the probe needs failed), with that errno. `detail` (when not NULL and
/// `detail_size` is not 0) receives a sentence saying what was tried and what answered.
int ips_sandbox_probe(const char *name, int *error_number, char *detail, size_t detail_size);

/// The name of probe number `index`, counting from 0, or NULL past the last: a self-test runs
/// them all by counting up until NULL, and so also runs the probes added after it was written.
const char *ips_sandbox_probe_name(size_t index);
