// A process's privilege read back, and given up: the zygote and every image helper start here when
// the worker runs as root (as in containers, `make demo` and many servers) or with any capability.
// capget, capset and the securebits are called directly: libcap is not a dependency the package may add.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "privilege.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_IS_SET 1
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif
#ifndef PR_GET_SECUREBITS
#define PR_GET_SECUREBITS 27
#define PR_SET_SECUREBITS 28
#endif
// <linux/securebits.h>'s values: each bit and its lock (the bit after it).
#define SECBIT_NOROOT (1u << 0)
#define SECBIT_NOROOT_LOCKED (1u << 1)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1u << 3)
#define SECBIT_KEEP_CAPS_LOCKED (1u << 5)
#define SECBIT_NO_CAP_AMBIENT_RAISE (1u << 6)
#define SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED (1u << 7)

// The bounding and ambient sets are read one capability at a time, up to the first the kernel does
// not know (EINVAL); 64 is past any kernel's last (CAP_CHECKPOINT_RESTORE is 40 in Linux 6.18).
#define CAPABILITY_LIMIT 64

static void say(char *buffer, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));

static void say(char *buffer, size_t size, const char *format, ...) {
    if (buffer == NULL || size == 0)
        return;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(buffer, size, format, arguments);
    va_end(arguments);
}

int ips_privilege_read(struct ips_privilege *privilege) {
    memset(privilege, 0, sizeof *privilege);
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (getresuid(&ruid, &euid, &suid) != 0 || getresgid(&rgid, &egid, &sgid) != 0)
        return -1;
    privilege->real_uid = ruid;
    privilege->effective_uid = euid;
    privilege->saved_uid = suid;
    privilege->real_gid = rgid;
    privilege->effective_gid = egid;
    privilege->saved_gid = sgid;
    // setfsuid answers the current value whatever it is given; -1 is never a valid id, so nothing changes.
    privilege->filesystem_uid = (uint32_t) setfsuid((uid_t) -1);
    privilege->filesystem_gid = (uint32_t) setfsgid((gid_t) -1);
    int groups = getgroups(0, NULL);
    if (groups < 0)
        return -1;
    privilege->groups = groups;

    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0)
        return -1;
    privilege->effective = (uint64_t) data[0].effective | ((uint64_t) data[1].effective << 32);
    privilege->permitted = (uint64_t) data[0].permitted | ((uint64_t) data[1].permitted << 32);
    privilege->inheritable = (uint64_t) data[0].inheritable | ((uint64_t) data[1].inheritable << 32);
    for (int capability = 0; capability < CAPABILITY_LIMIT; capability++) {
        int in_bounding = prctl(PR_CAPBSET_READ, capability, 0, 0, 0);
        if (in_bounding < 0)
            break;
        if (in_bounding == 1)
            privilege->bounding |= 1ull << capability;
        // Kernels before 4.3 have no ambient set: nothing to read there.
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, capability, 0, 0) == 1)
            privilege->ambient |= 1ull << capability;
    }
    int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    privilege->securebits = bits > 0 ? (uint32_t) bits : 0;
    int no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
    privilege->no_new_privs = no_new_privs > 0 ? 1 : 0;
    return 0;
}

static int any_root_uid(const struct ips_privilege *privilege) {
    return privilege->real_uid == 0 || privilege->effective_uid == 0 || privilege->saved_uid == 0 || privilege->filesystem_uid == 0;
}

int ips_privilege_is_held(const struct ips_privilege *privilege) {
    return any_root_uid(privilege) || privilege->effective != 0 || privilege->permitted != 0 || privilege->inheritable != 0
        || privilege->ambient != 0;
}

// Describes what is left of `privilege` in `error`, or returns 0 when nothing is; `switched` says
// whether the ids were changed to `uid` and `gid`, and `bounding_dropped` whether the bounding set
// was to be emptied.
static int describe_left(const struct ips_privilege *privilege, int switched, uint32_t uid, uint32_t gid, int bounding_dropped,
    char *error, size_t error_size) {
    if (any_root_uid(privilege)) {
        say(error, error_size, "a user id is still 0 (real %u, effective %u, saved %u, file system %u)", privilege->real_uid,
            privilege->effective_uid, privilege->saved_uid, privilege->filesystem_uid);
        return -1;
    }
    if (switched
        && (privilege->real_uid != uid || privilege->effective_uid != uid || privilege->saved_uid != uid || privilege->filesystem_uid != uid
            || privilege->real_gid != gid || privilege->effective_gid != gid || privilege->saved_gid != gid
            || privilege->filesystem_gid != gid || privilege->groups != 0)) {
        say(error, error_size, "the process is uid %u gid %u with %d supplementary groups, not %u:%u alone", privilege->effective_uid,
            privilege->effective_gid, privilege->groups, uid, gid);
        return -1;
    }
    if (privilege->effective || privilege->permitted || privilege->inheritable || privilege->ambient) {
        say(error, error_size, "capabilities are left: effective %#llx, permitted %#llx, inheritable %#llx, ambient %#llx",
            (unsigned long long) privilege->effective, (unsigned long long) privilege->permitted,
            (unsigned long long) privilege->inheritable, (unsigned long long) privilege->ambient);
        return -1;
    }
    if (bounding_dropped && privilege->bounding) {
        say(error, error_size, "the bounding set still holds %#llx", (unsigned long long) privilege->bounding);
        return -1;
    }
    return 0;
}

int ips_privilege_drop(uint32_t uid, uint32_t gid, char *error, size_t error_size) {
    say(error, error_size, "%s", "");
    struct ips_privilege before;
    if (ips_privilege_read(&before) != 0) {
        say(error, error_size, "reading the process's ids and capabilities failed: %s", strerror(errno));
        return -1;
    }
    if (!ips_privilege_is_held(&before))
        return 0;
    int switching = any_root_uid(&before);
    if (switching && (uid == 0 || gid == 0 || uid == (uint32_t) -1 || gid == (uint32_t) -1)) {
        say(error, error_size, "helpers must run as a user other than root, and were given uid %u gid %u", uid, gid);
        return -1;
    }

    // With CAP_SETPCAP the securebits go first, while it is still held: locked, uid 0 can never
    // regain capabilities (by exec or a return to uid 0), a change of uid always clears them (no
    // keeping them, no fixup turned off), and none may be raised into the ambient set.
    int can_set_bounding = (before.effective >> CAP_SETPCAP) & 1;
    if (can_set_bounding) {
        uint32_t bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED
            | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0) {
            say(error, error_size, "locking the securebits failed: %s", strerror(errno));
            return -1;
        }
        for (int capability = 0; capability < CAPABILITY_LIMIT; capability++) {
            if (!((before.bounding >> capability) & 1))
                continue;
            if (prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0) {
                say(error, error_size, "dropping capability %d from the bounding set failed: %s", capability, strerror(errno));
                return -1;
            }
        }
    }
    // EINVAL: a kernel before 4.3, which has no ambient set to clear.
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
        say(error, error_size, "clearing the ambient capabilities failed: %s", strerror(errno));
        return -1;
    }
    if (switching) {
        // Groups first, while the process may still change them (CAP_SETGID goes with the uid).
        if (setgroups(0, NULL) != 0) {
            say(error, error_size, "dropping the supplementary groups failed: %s", strerror(errno));
            return -1;
        }
        if (setresgid(gid, gid, gid) != 0) {
            say(error, error_size, "switching to gid %u failed: %s%s", gid, strerror(errno),
                errno == EINVAL ? " (the group is not mapped in this user namespace; name another with --helper-user)" : "");
            return -1;
        }
        if (setresuid(uid, uid, uid) != 0) {
            say(error, error_size, "switching to uid %u failed: %s%s", uid, strerror(errno),
                errno == EINVAL ? " (the user is not mapped in this user namespace; name another with --helper-user)" : "");
            return -1;
        }
    }
    // A change away from uid 0 has cleared the permitted and effective sets already; clearing all
    // three here also covers a process that was never root but held capabilities.
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3];
    memset(none, 0, sizeof none);
    if (syscall(SYS_capset, &header, none) != 0) {
        say(error, error_size, "clearing the capability sets failed: %s", strerror(errno));
        return -1;
    }

    struct ips_privilege after;
    if (ips_privilege_read(&after) != 0) {
        say(error, error_size, "reading the process's ids and capabilities back failed: %s", strerror(errno));
        return -1;
    }
    if (describe_left(&after, switching, uid, gid, can_set_bounding, error, error_size) != 0)
        return -1;
    // The way back must be shut: a process that could become root again has dropped nothing.
    if (switching && (setresuid(0, 0, 0) == 0 || setresgid(0, 0, 0) == 0)) {
        say(error, error_size, "the process could switch back to root after dropping its privileges");
        return -1;
    }
    return 0;
}
