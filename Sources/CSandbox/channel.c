// The channel between a worker and its image helpers, and how helpers are started and reaped.
#define _GNU_SOURCE
#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

// The most descriptors one message carries: a source in, or a job's outputs back.
#define IPS_MAX_FDS 64

int ips_channel_pair(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds);
}

/* Waits up to `timeout_ms` (-1: no limit) for `events` on `socket`: 0 when they came, -1 with errno
 * (ETIMEDOUT when they did not come in time). */
static int wait_for(int socket, short events, int timeout_ms) {
    struct pollfd waiting = {.fd = socket, .events = events};
    int ready;
    do ready = poll(&waiting, 1, timeout_ms);
    while (ready < 0 && errno == EINTR);
    if (ready < 0) return -1;
    if (ready == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return 0;
}

ssize_t ips_send(int socket, const void *bytes, size_t length, const int *fds, int fd_count, int timeout_ms) {
    if (fd_count < 0 || fd_count > IPS_MAX_FDS) {
        errno = EINVAL;
        return -1;
    }
    struct iovec iov = {.iov_base = (void *) bytes, .iov_len = length};
    union {
        char buffer[CMSG_SPACE(sizeof(int) * IPS_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct msghdr message = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd_count > 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * fd_count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * fd_count);
        memcpy(CMSG_DATA(header), fds, sizeof(int) * fd_count);
    }
    for (;;) {
        // Never blocking in sendmsg itself: a full socket is waited on with the deadline.
        ssize_t sent = sendmsg(socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent >= 0) return sent;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (wait_for(socket, POLLOUT, timeout_ms) != 0) return -1;
    }
}

ssize_t ips_receive(int socket, void *bytes, size_t capacity, int *fds, int max_fds, int *fd_count, int timeout_ms) {
    *fd_count = 0;
    if (timeout_ms >= 0 && wait_for(socket, POLLIN, timeout_ms) != 0) return -1;
    struct iovec iov = {.iov_base = bytes, .iov_len = capacity};
    union {
        char buffer[CMSG_SPACE(sizeof(int) * IPS_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct msghdr message = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
    ssize_t got;
    do got = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    while (got < 0 && errno == EINTR);
    // A peer that ended with a message of ours unread makes the next receive fail ECONNRESET once,
    // ahead of what it sent before ending: a helper that says why it cannot start, and exits before
    // reading its start message, would lose its reason. What it sent is read after the error.
    if (got < 0 && errno == ECONNRESET) {
        do got = recvmsg(socket, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        while (got < 0 && errno == EINTR);
        if (got < 0) errno = ECONNRESET;
    }
    if (got < 0) return -1;
    // Every descriptor that came is either handed over or closed: a peer cannot leak them into us.
    int received = 0;
    int overflow = 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int count = (int) ((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *incoming = (int *) CMSG_DATA(header);
        for (int index = 0; index < count; index++) {
            if (received < max_fds && !overflow) {
                fds[received++] = incoming[index];
            } else {
                overflow = 1;
                close(incoming[index]);
            }
        }
    }
    if (overflow || (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        for (int index = 0; index < received; index++) close(fds[index]);
        errno = EMSGSIZE;
        return -1;
    }
    *fd_count = received;
    return got;
}

int ips_pipe(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

pid_t ips_spawn(const char *path, char *const argv[], char *const envp[], int channel, int output) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    if (posix_spawn_file_actions_init(&actions) != 0) return -1;
    if (posix_spawnattr_init(&attributes) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return -1;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int failed = 0;
    // The output pipe first: it may itself be number 3, which the channel takes next (dup2 clears
    // close-on-exec, also where a descriptor already has its number).
    failed |= posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    failed |= posix_spawn_file_actions_adddup2(&actions, output, 1);
    failed |= posix_spawn_file_actions_adddup2(&actions, output, 2);
    failed |= posix_spawn_file_actions_adddup2(&actions, channel, 3);
    // Nothing else of the worker's: no store connection, no database socket, no other job's file.
    failed |= posix_spawn_file_actions_addclosefrom_np(&actions, 4);
    failed |= posix_spawnattr_setsigmask(&attributes, &none);
    failed |= posix_spawnattr_setsigdefault(&attributes, &all);
    // A group of its own: a terminal's Ctrl-C reaches the worker, which drains, not its helpers.
    failed |= posix_spawnattr_setpgroup(&attributes, 0);
    failed |= posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    pid_t pid = -1;
    int status = failed ? EINVAL : posix_spawn(&pid, path, &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (status != 0) {
        errno = status;
        return -1;
    }
    return pid;
}

pid_t ips_wait(pid_t pid, int *status, int no_hang) {
    pid_t got;
    do got = waitpid(pid, status, no_hang ? WNOHANG : 0);
    while (got < 0 && errno == EINTR);
    return got;
}

int ips_has_ended(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int status;
    do status = waitid(P_PID, (id_t) pid, &info, WEXITED | WNOHANG | WNOWAIT);
    while (status < 0 && errno == EINTR);
    return status == 0 && info.si_pid == pid;
}

int ips_status_signal(int status) { return WIFSIGNALED(status) ? WTERMSIG(status) : 0; }

int ips_status_exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

int ips_memory_file(const char *name) { return memfd_create(name, MFD_CLOEXEC); }

int ips_write_all(int fd, const void *bytes, size_t length, off_t offset) {
    const char *next = bytes;
    while (length > 0) {
        ssize_t written = pwrite(fd, next, length, offset);
        if (written < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        next += written;
        length -= (size_t) written;
        offset += written;
    }
    return 0;
}

int ips_die_with_parent(pid_t parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -1;
    return getppid() == parent ? 0 : -1;
}

int ips_make_undumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

void ips_ignore_stop_signals(void) {
    int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
    for (size_t index = 0; index < sizeof signals / sizeof signals[0]; index++) signal(signals[index], SIG_IGN);
}
