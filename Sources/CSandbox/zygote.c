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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int ips_become_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

/* Waits, in a new helper, until the process that forked it has ended and the worker adopted it, then
 * asks to die with the worker: a helper must be the worker's child, so the worker can reap it and
 * read how it ended, and its death signal (which a fork clears) must follow the worker, not the
 * short-lived process in between. Up to five seconds. */
static int await_adoption(pid_t worker) {
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 50 * 1000};
    for (int tries = 0; tries < 100000; tries++) {
        pid_t parent = getppid();
        if (parent == worker) return ips_die_with_parent(worker);
        // Adopted by anything else: the worker is gone (or is no subreaper), nobody to serve.
        if (parent == 1) return -1;
        nanosleep(&pause, NULL);
    }
    return -1;
}

/* The new helper's descriptors, as ips_spawn gives an executed one: its channel as 3, its output
 * pipe as 1 and 2, standard input as inherited (/dev/null), nothing else. */
static int take_descriptors(int channel, int output) {
    if (dup2(output, 1) < 0 || dup2(output, 2) < 0) return -1;
    // dup2 onto 3 closes the zygote's control socket there.
    if (channel != 3 && dup2(channel, 3) < 0) return -1;
    return close_range(4, ~0U, 0);
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
        // The middle process tells the zygote who the helper is through this pipe.
        int told[2];
        int32_t reply = 0;
        pid_t middle = pipe2(told, O_CLOEXEC) == 0 ? fork() : -1;
        if (middle == 0) {
            close(told[0]);
            pid_t helper = fork();
            if (helper == 0) {
                close(told[1]);
                if (take_descriptors(fds[0], fds[1]) != 0 || await_adoption(worker) != 0) _exit(0);
                return 0;
            }
            // Then it ends: the helper is orphaned, and the worker (a subreaper) adopts it.
            int32_t pid = helper > 0 ? (int32_t) helper : -(int32_t) errno;
            ssize_t written;
            do written = write(told[1], &pid, sizeof pid);
            while (written < 0 && errno == EINTR);
            _exit(0);
        }
        if (middle < 0) {
            reply = -(int32_t) errno;
        } else {
            close(told[1]);
            ssize_t got;
            do got = read(told[0], &reply, sizeof reply);
            while (got < 0 && errno == EINTR);
            if (got != (ssize_t) sizeof reply) reply = -EAGAIN;
            close(told[0]);
            // The answer waits until the middle process is reaped: by then the kernel has handed the
            // helper to the worker, so the worker can wait for it (or kill and reap it) at once.
            int status;
            while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {}
        }
        close(fds[0]);
        close(fds[1]);
        if (send(control, &reply, sizeof reply, MSG_NOSIGNAL) < 0) return -1;
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
