// What privilege a process holds (its user and group ids, its capability sets), and the one-way step
// that gives it all up: the first thing the zygote and every image helper do when started by root or
// with any capability.
#pragma once
#include <stddef.h>
#include <stdint.h>

/// A process's identity and privilege, as the kernel keeps them.
struct ips_privilege {
    uint32_t real_uid, effective_uid, saved_uid, filesystem_uid;
    uint32_t real_gid, effective_gid, saved_gid, filesystem_gid;
    /// Supplementary groups.
    int32_t groups;
    /// The capability sets, one bit per capability (bit n: capability n).
    uint64_t effective, permitted, inheritable, ambient, bounding;
    /// The securebits (SECBIT_*), and whether no_new_privs is set.
    uint32_t securebits;
    int32_t no_new_privs;
};

/// Reads the calling process's identity and capability sets. 0, or -1 with errno.
int ips_privilege_read(struct ips_privilege *privilege);

/// Whether `privilege` is privileged: uid 0 in any of its four user ids, or any capability in its
/// effective, permitted, inheritable or ambient set. The bounding set does not count: every process
/// has a full one unless something dropped it, and it only limits what an exec could gain.
int ips_privilege_is_held(const struct ips_privilege *privilege);

/// Gives up every privilege the calling process holds, for good; a process holding none is left as
/// it is. In order:
/// - with CAP_SETPCAP: the securebits set and locked so that uid 0 never regains capabilities (no
///   root fixup, no keeping capabilities across a change of uid, no ambient raise), and every
///   capability dropped from the bounding set;
/// - the ambient set cleared;
/// - when any user id is 0: the supplementary groups dropped and every group id, then every user id
///   (real, effective, saved, file system) set to `gid` and `uid`, which must not be 0;
/// - the effective, permitted and inheritable sets cleared.
/// Then it checks what is left, reading the process back: no uid or gid 0 where it switched, no
/// capability in any set (the bounding set too, where it could be dropped), and a return to uid 0
/// refused. A change of user id clears the parent-death signal and the dumpable flag: the caller
/// sets them again.
///
/// Returns 0; or -1 with a sentence naming the step that failed, or what is left, in `error`. After a
/// failure the process may be half-way, and must exit rather than go on.
int ips_privilege_drop(uint32_t uid, uint32_t gid, char *error, size_t error_size);
