// What the filter and its trap handler (trap.c) agree on: the architecture the filter is written
// for, the newest call it knows, and what it asks the handler to do.
#pragma once
#include <linux/audit.h>

// The filter reads the low half of 64-bit arguments at the start of each 8-byte slot, and checks
// the architecture it was written for; anywhere else it would test the wrong bits or none.
#if defined(__x86_64__)
#define FILTER_AUDIT_ARCH AUDIT_ARCH_X86_64
#define FILTER_ARCH_NAME "x86_64"
#elif defined(__aarch64__)
#define FILTER_AUDIT_ARCH AUDIT_ARCH_AARCH64
#define FILTER_ARCH_NAME "aarch64"
#else
#error "the seccomp filter is written for x86_64 and aarch64 only"
#endif
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the seccomp filter reads the low half of arguments as little-endian"
#endif

// The newest system call this filter was written against (listns, Linux 6.18). A number above it is
// a call the filter knows nothing about: it answers ENOSYS, as a kernel too old to have it does, and
// libraries fall back from that.
#define NEWEST_KNOWN_SYSCALL 470u

// What the trap handler is asked to do, in the data bits of SECCOMP_RET_TRAP (si_errno in the signal).
#define TRAP_REPORT 1u
#define TRAP_FSTATAT 2u
