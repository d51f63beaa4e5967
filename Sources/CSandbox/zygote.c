// The zygote: one process that loaded libvips once and forks every image helper after the first.
#define _GNU_SOURCE
#include "channel.h"
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The new helper's descriptors, as ips_spawn gives an executed one: its channel as 3, its output
 * pipe as 1 and 2, standard input as inherited (/dev/null), nothing else. */
static int take_descriptors(int channel, int output) {
    if (dup2(output, 1) < 0 || dup2(output, 2) < 0) return -1;
    // dup2 onto 3 closes the zygote's control socket there.
    if (channel != 3 && dup2(channel, 3) < 0) return -1;
    return close_range(4, ~0U, 0);
}

/* A copy of this process that is the worker's own child, as a helper started from the file is: made
 * with CLONE_PARENT, so the worker reaps it and reads how it ended, and its death signal follows the
 * worker's thread that started the zygote. One fork, where a fork of a short-lived process in between
 * (orphaning the helper to the worker, which adopted it as a subreaper) cost a second fork and its
 * exit, about as much CPU again (docs/performance.md, "Image helpers").
 *
 * glibc has no fork that takes flags, so this is the system call itself. The zygote has one thread
 * and holds no lock, so the locks glibc's fork resets in a child are free already; glibc's cached
 * thread id is the zygote's in the child, which glibc uses for lock ownership alone (raise asks the
 * kernel), consistently, and no thread can reuse it while the zygote lives; no library here
 * registered a fork handler the helper needs. */
static pid_t fork_for_worker(void) {
    return (pid_t) syscall(SYS_clone, (unsigned long) (CLONE_PARENT | SIGCHLD), 0UL, 0UL, 0UL, 0UL);
}

int ips_zygote_serve(int control, pid_t worker) {
    for (;;) {
        char request;
        int fds[2] = {-1, -1};
        int count = 0;
        ssize_t got = ips_receive(control, &request, 1, fds, 2, &count, -1);
        if (got <= 0) return -1;
        if (got != 1 || request != 'f' || count != 2) {
            // The worker never sends anything else: a request out of shape ends the zygote.
            for (int index = 0; index < count; index++) close(fds[index]);
            return -1;
        }
        pid_t helper = fork_for_worker();
        if (helper == 0) {
            // The helper: its descriptors, and death with the worker, asked for again (a fork clears
            // it), which fails if the worker is already gone.
            if (take_descriptors(fds[0], fds[1]) != 0 || ips_die_with_parent(worker) != 0) _exit(0);
            return 0;
        }
        int32_t reply = helper > 0 ? (int32_t) helper : -(int32_t) errno;
        close(fds[0]);
        close(fds[1]);
        // sendmsg (through ips_send), which the filter lists; send() is sendto, which it does not.
        if (ips_send(control, &reply, sizeof reply, NULL, 0, -1) < 0) return -1;
    }
}

pid_t ips_zygote_fork(int control, int channel, int output, int timeout_ms) {
    char request = 'f';
    int fds[2] = {channel, output};
    if (ips_send(control, &request, 1, fds, 2, timeout_ms) < 0) return -1;
    int32_t reply = 0;
    int received[1];
    int count = 0;
    ssize_t got = ips_receive(control, &reply, sizeof reply, received, 1, &count, timeout_ms);
    for (int index = 0; index < count; index++) close(received[index]);
    if (got == 0) {
        errno = EPIPE;
        return -1;
    }
    if (got != (ssize_t) sizeof reply) {
        if (got >= 0) errno = EPROTO;
        return -1;
    }
    if (reply <= 0) {
        // The zygote is well, its fork failed (no memory, a process limit): -2, the reason in errno.
        errno = reply < 0 ? -reply : EPROTO;
        return reply < 0 ? -2 : -1;
    }
    return (pid_t) reply;
}
