// The handler of the calls the seccomp filter traps (SIGSYS): fstat asked for through newfstatat is
// made here, and every other trapped call is answered EPERM and reported once by its number.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "filter_abi.h"
#include "internal.h"

static volatile sig_atomic_t reporting = 1;
// One report per call number in a process's life: a library that retries a refused call in a loop
// says so once.
static volatile unsigned char reported[NEWEST_KNOWN_SYSCALL + 1];

void ips_filter_set_reporting(int on) { reporting = on ? 1 : 0; }

// Writes a decimal number into `buffer` (at least 12 bytes), returning its length: snprintf is not
// async-signal-safe.
static size_t decimal(char *buffer, unsigned long value) {
    char digits[24];
    size_t count = 0;
    do {
        digits[count++] = (char) ('0' + value % 10);
        value /= 10;
    } while (value != 0 && count < sizeof digits);
    for (size_t i = 0; i < count; i++)
        buffer[i] = digits[count - 1 - i];
    return count;
}

static void report(unsigned number) {
    if (!reporting || number > NEWEST_KNOWN_SYSCALL || reported[number])
        return;
    reported[number] = 1;
    char line[160];
    size_t length = 0;
    const char *start = "image helper: the sandbox refused system call ";
    memcpy(line, start, strlen(start));
    length += strlen(start);
    length += decimal(line + length, number);
    const char *end = " (" FILTER_ARCH_NAME "), answering EPERM\n";
    memcpy(line + length, end, strlen(end));
    length += strlen(end);
    ssize_t ignored = write(STDERR_FILENO, line, length);
    (void) ignored;
}

// The call's arguments and its result, in the registers the kernel saved for the handler.
#if defined(__x86_64__)
static long argument(ucontext_t *context, int index) {
    static const int registers[6] = {REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9};
    return (long) context->uc_mcontext.gregs[registers[index]];
}
static void set_result(ucontext_t *context, long value) { context->uc_mcontext.gregs[REG_RAX] = (greg_t) value; }
#else
static long argument(ucontext_t *context, int index) { return (long) context->uc_mcontext.regs[index]; }
static void set_result(ucontext_t *context, long value) { context->uc_mcontext.regs[0] = (unsigned long long) value; }
#endif

// A trapped call never ran: the kernel skipped it and raised SIGSYS, and whatever this handler puts
// in the result register is what the call returns. newfstatat with AT_EMPTY_PATH and an empty path is
// glibc's fstat (since 2.33), and is made here as fstat on the descriptor: the filter cannot read the
// path, which for any other value the kernel would resolve, wherever the descriptor points, so the
// path is read here and never handed to the kernel. A handler a hostile image replaced changes only
// what its own helper's calls get back: the kernel never runs a trapped call.
static void on_trapped_call(int signal, siginfo_t *info, void *raw_context) {
    (void) signal;
    ucontext_t *context = raw_context;
    int saved = errno;
    long result = -EPERM;
    if (info->si_errno == (int) TRAP_FSTATAT && info->si_syscall == __NR_newfstatat) {
        const char *path = (const char *) argument(context, 1);
        long flags = argument(context, 3);
        if ((flags & AT_EMPTY_PATH) && path != NULL && path[0] == '\0') {
            long status = syscall(__NR_fstat, (int) argument(context, 0), (void *) argument(context, 2));
            result = status == 0 ? 0 : -errno;
        } else {
            report((unsigned) info->si_syscall);
        }
    } else {
        report((unsigned) info->si_syscall);
    }
    set_result(context, result);
    errno = saved;
}

int ips_filter_install_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_trapped_call;
    // SA_NODEFER: a trapped call made inside the handler (none is, but a library's signal handler may
    // run on top of it) must not find SIGSYS blocked, which would end the process.
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGSYS, &action, NULL);
}

