// The calls the worker and its image helpers talk and start each other with, which Glibc's Swift
// module lacks or cannot call (CMSG macros, posix_spawn's file actions, wait-status macros).
#pragma once
#include <stddef.h>
#include <sys/types.h>

/// A connected pair of SOCK_SEQPACKET sockets, both close-on-exec: message boundaries are kept, so
/// each message is read whole or not at all. 0, or -1 with errno.
int ips_channel_pair(int fds[2]);

/// Sends one message of `length` bytes with `fd_count` descriptors (SCM_RIGHTS), waiting at most
/// `timeout_ms` (-1: no limit) for room in the socket: a peer that stopped reading must not hold the
/// sender for ever. MSG_NOSIGNAL: a peer that died is an EPIPE, not a signal. Returns the bytes
/// sent, or -1 with errno (ETIMEDOUT when no room came in time).
ssize_t ips_send(int socket, const void *bytes, size_t length, const int *fds, int fd_count, int timeout_ms);

/// Waits up to `timeout_ms` (-1: no limit) for one message and reads it into `bytes`, with up to
/// `max_fds` descriptors (received close-on-exec). Returns its length; 0 when the peer closed its
/// end; -1 with errno (ETIMEDOUT when nothing came in time, EMSGSIZE when the message or its
/// descriptors did not fit: the descriptors that came are closed, the message is lost).
ssize_t ips_receive(int socket, void *bytes, size_t capacity, int *fds, int max_fds, int *fd_count, int timeout_ms);

/// Starts `path` with `argv` and `envp` (NULL-terminated) in a process group of its own, its
/// signal mask empty and every signal at its default; `channel` becomes its descriptor 3, standard
/// input reads /dev/null, standard output and standard error go to `output` (a pipe the worker
/// reads: a helper never writes to the worker's own log or terminal), and every other descriptor
/// is closed. Returns the pid, or -1 with errno.
pid_t ips_spawn(const char *path, char *const argv[], char *const envp[], int channel, int output);

/// A pipe, both ends close-on-exec: 0, or -1 with errno.
int ips_pipe(int fds[2]);

/// waitpid(pid, status, WNOHANG when `no_hang`), retried on EINTR: the pid, 0 while it runs, -1.
pid_t ips_wait(pid_t pid, int *status, int no_hang);

/// Whether the child `pid` has ended, without reaping it (waitid with WNOWAIT): 1 or 0.
int ips_has_ended(pid_t pid);

/// The signal that ended a process of this wait status, or 0 when it exited.
int ips_status_signal(int status);

/// The exit code of a process that exited, or -1 when a signal ended it.
int ips_status_exit_code(int status);

/// An anonymous memory file (memfd), close-on-exec, for bytes handed across the channel. -1 with errno.
int ips_memory_file(const char *name);

/// Writes all of `bytes` at `offset`, retried on EINTR and short writes: 0, or -1 with errno.
int ips_write_all(int fd, const void *bytes, size_t length, off_t offset);

/// Kills this process when the one that started it dies (PR_SET_PDEATHSIG with SIGKILL); -1 if
/// that parent (`parent`) is already gone, so a helper started just before its worker died ends too.
int ips_die_with_parent(pid_t parent);

/// Makes the calling process non-dumpable (PR_SET_DUMPABLE 0): its memory, environment and /proc
/// files are closed to the other processes of its user, its helpers among them. 0, or -1 with errno.
int ips_make_undumpable(void);

/// Ignores the signals a terminal or a service manager sends to a whole group or unit (SIGINT,
/// SIGTERM, SIGHUP, SIGQUIT) and SIGPIPE: a helper finishes its job while its worker drains, and
/// ends with the worker (ips_die_with_parent) or when its channel closes.
void ips_ignore_stop_signals(void);

/// Serves the worker's requests for helpers on `control`, in the zygote: for each, forks a helper
/// (with CLONE_PARENT: the worker's own child) whose channel and output are the two descriptors that
/// came with the request, and answers with its pid. Returns 0 in a new helper, once it has the
/// request's channel as descriptor 3, its output as 1 and 2, no other descriptor, and death with the
/// worker `worker` asked for; returns -1 in the zygote when the worker closed `control` or sent what
/// it never sends.
int ips_zygote_serve(int control, pid_t worker);

/// Asks the zygote on `control` for a helper with `channel` and `output` (the helper's ends), waiting
/// at most `timeout_ms`: its pid (a child of the calling process); -2 with errno when the zygote could
/// not fork (it stays usable); -1 with errno when the zygote is gone or did not answer in time.
pid_t ips_zygote_fork(int control, int channel, int output, int timeout_ms);
