// pthread_cond_wait, pthread_cond_timedwait and pthread_cond_clockwait as the binary's own objects
// call them: a check, then glibc's call. `--wrap` rewrites only the references of the objects linked
// into the binary: in the debug build the tests run, SwiftNIO, PostgresNIO and imagepipe, while
// Foundation, Dispatch and the Swift runtime are shared libraries and call glibc directly. The static
// release build links those in too, so there the check sees their waits as well.
#ifdef __linux__
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>
#include "CWaitCheck.h"

int __real_pthread_cond_wait(pthread_cond_t *condition, pthread_mutex_t *mutex);
int __real_pthread_cond_timedwait(pthread_cond_t *condition, pthread_mutex_t *mutex, const struct timespec *deadline);
int __real_pthread_cond_clockwait(pthread_cond_t *condition, pthread_mutex_t *mutex, clockid_t clock, const struct timespec *deadline);

static _Atomic(void (*)(void)) check_hook;
static _Thread_local unsigned long waits;
static _Thread_local int checking;

void iwc_check_condition_waits(void (*check)(void)) {
    atomic_store_explicit(&check_hook, check, memory_order_release);
}

unsigned long iwc_condition_waits_on_this_thread(void) {
    return waits;
}

static void before_wait(void) {
    void (*check)(void) = atomic_load_explicit(&check_hook, memory_order_acquire);
    // The check may take a lock of its own; a wait inside it must not come back here.
    if (check == NULL || checking) return;
    waits++;
    checking = 1;
    check();
    checking = 0;
}

int __wrap_pthread_cond_wait(pthread_cond_t *condition, pthread_mutex_t *mutex) {
    before_wait();
    return __real_pthread_cond_wait(condition, mutex);
}

int __wrap_pthread_cond_timedwait(pthread_cond_t *condition, pthread_mutex_t *mutex, const struct timespec *deadline) {
    before_wait();
    return __real_pthread_cond_timedwait(condition, mutex, deadline);
}

int __wrap_pthread_cond_clockwait(pthread_cond_t *condition, pthread_mutex_t *mutex, clockid_t clock, const struct timespec *deadline) {
    before_wait();
    return __real_pthread_cond_clockwait(condition, mutex, clock, deadline);
}
#endif
