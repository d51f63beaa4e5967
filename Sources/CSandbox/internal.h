// What the sandbox's C files share and nothing outside them needs: the filter's builder and its two
// programs, the handler of the calls the filter traps, and the one way they all write a message.
#pragma once
#include <stddef.h>
#include <stdint.h>

/// Formats into `buffer` (when it is not NULL and `size` is not 0).
void ips_say(char *buffer, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));

/// Installs the handler of the calls the filters trap (SIGSYS): an `fstat` asked for as
/// `newfstatat(fd, "", buf, AT_EMPTY_PATH)` is made as `fstat(fd, buf)`, and every other trapped call
/// is answered EPERM and reported once, by its number, on standard error (the helper's output pipe,
/// which the worker logs). 0, or -1 with errno.
int ips_filter_install_handler(void);

/// Whether the trap handler reports the calls it refuses (on by default; the self-test turns it off,
/// as each of its probes is meant to be refused).
void ips_filter_set_reporting(int on);

/// Installs the shared filter: the allow-list of every call an image helper, and the zygote that forks
/// helpers, makes once the sandbox is in place. Installed by the zygote (its forks inherit it) or by a
/// helper started from the executable. Needs no_new_privs. 0, or -1 with a sentence in `error`.
int ips_filter_install_shared(char *error, size_t error_size);

/// Installs the helper's own filter on top of the shared one: what only a helper may not do (make a
/// process, signal or reprioritise any process but itself, set its death signal, stack another
/// sandbox), with its own pid in the program. 0, or -1 with a sentence in `error`.
int ips_filter_install_own(uint32_t own_pid, char *error, size_t error_size);

/// The calls the shared filter lets through, with or without an argument check.
int32_t ips_filter_allowed_count(void);
