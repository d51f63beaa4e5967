// What the C harnesses that go through libvips share: setting it up as the worker does, and each call's end.
#ifndef FUZZ_LIBVIPS_H
#define FUZZ_LIBVIPS_H

#include "CVipsShim.h"
#include <stdlib.h>

/* As the worker sets libvips up: one thread per image, no operation cache, untrusted loaders
 * blocked, warnings kept per thread for the error text rather than printed. */
static inline void fuzz_start_libvips(const char *argv0) {
    if (ipv_init(argv0) != 0)
        abort();
    ipv_configure(1);
    ipv_set_warning_handler(NULL);
}

/* Takes the error text the call left (as the compressor does with every failure) and releases the
 * thread's libvips buffers, so that each input starts afresh and leaks show per input. */
static inline void fuzz_end_call(void) {
    char *error = ipv_take_error();
    ipv_free(error);
    ipv_thread_done();
}

#endif
