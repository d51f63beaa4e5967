// What the self-test's probes share: the answers a probe gives, and the probes of probes_powers.c
// that the table in probes.c names.
#pragma once
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>

#include "internal.h"


// The three answers a probe gives, each with the errno and the sentence ips_sandbox_probe promises.
static inline int refused(int number, int *error_number, char *detail, size_t detail_size, const char *what) {
    *error_number = number;
    ips_say(detail, detail_size, "%s was refused: %s.", what, strerror(number));
    return 0;
}

static inline int succeeded(int *error_number, char *detail, size_t detail_size, const char *what) {
    *error_number = 0;
    ips_say(detail, detail_size, "%s succeeded.", what);
    return 1;
}

static inline int not_run(int number, int *error_number, char *detail, size_t detail_size, const char *what) {
    *error_number = number;
    ips_say(detail, detail_size, "%s failed, so the probe could not tell: %s.", what, strerror(number));
    return -1;
}

// The answer of an attempt made so that the kernel itself refuses it (its arguments are invalid, or
// name nothing) only once the sandbox has let it through: any answer but the sandbox's own is the
// sandbox letting it through.
static inline int let_through(int number, int *error_number, char *detail, size_t detail_size, const char *what) {
    *error_number = 0;
    ips_say(detail, detail_size, "%s got past the sandbox: the kernel answered %s.", what, strerror(number));
    return 1;
}

static inline void wait_for(pid_t child) {
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        continue;
}


int probe_capabilities(int *error_number, char *detail, size_t detail_size);
int probe_clock_adjust(int *error_number, char *detail, size_t detail_size);
int probe_clock_set(int *error_number, char *detail, size_t detail_size);
int probe_sched_fifo(int *error_number, char *detail, size_t detail_size);
int probe_nice_negative(int *error_number, char *detail, size_t detail_size);
int probe_ioprio_realtime(int *error_number, char *detail, size_t detail_size);
int probe_mlock(int *error_number, char *detail, size_t detail_size);
int probe_fifreeze(int *error_number, char *detail, size_t detail_size);
int probe_ioctl_unlisted(int *error_number, char *detail, size_t detail_size);
int probe_stat(int *error_number, char *detail, size_t detail_size);
int probe_stat_empty_path_flag(int *error_number, char *detail, size_t detail_size);
int probe_access(int *error_number, char *detail, size_t detail_size);
int probe_readlink(int *error_number, char *detail, size_t detail_size);
int probe_open_path(int *error_number, char *detail, size_t detail_size);
int probe_unlisted_call(int *error_number, char *detail, size_t detail_size);
int probe_unknown_call(int *error_number, char *detail, size_t detail_size);
