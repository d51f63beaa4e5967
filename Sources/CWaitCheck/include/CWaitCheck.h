// The hook through which IMAGEPIPE_CHECK_BLOCKING sees a thread about to wait on a condition variable.
#pragma once

/// Calls `check` on the waiting thread before each wait on a condition variable made by code linked
/// into the program (SwiftNIO's `wait()` and `ConditionLock`, the statically linked packages,
/// imagepipe's own): the link wraps `pthread_cond_wait`, `pthread_cond_timedwait` and
/// `pthread_cond_clockwait` (`--wrap`, see Package.swift). NULL, the default, stops the calls; a
/// wait then costs one load. Set once, it stays: the check itself decides whether a wait matters.
/// A wait that `check` itself makes is not checked again.
void iwc_check_condition_waits(void (*check)(void));

/// How many waits on a condition variable the calling thread has made while a check was set.
unsigned long iwc_condition_waits_on_this_thread(void);
