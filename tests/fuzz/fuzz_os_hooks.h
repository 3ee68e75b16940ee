/* SPDX-License-Identifier: MIT */
/*
 * fuzz_os_hooks.h - what the fuzz harness can do to the OS shim it links the
 * core against (fuzz_os.c): make runs reproducible and inject failures.
 */
#ifndef TB5_FUZZ_OS_HOOKS_H
#define TB5_FUZZ_OS_HOOKS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Start an input: same random numbers, same clock, no pending faults. */
void tb5_fuzz_os_reset(uint64_t seed);
/* The next tb5_os_zalloc() returns NULL. */
void tb5_fuzz_os_fail_next_alloc(void);
/* Whether a planned allocation failure is still pending. */
int tb5_fuzz_os_alloc_fail_pending(void);
/* Move the monotonic clock on. */
void tb5_fuzz_os_advance_ns(uint64_t ns);
/* Core locks held right now (the harness checks callbacks run under one). */
unsigned tb5_fuzz_os_locks_held(void);
/* Locks created and not yet destroyed (a leak check beside LeakSanitizer). */
unsigned tb5_fuzz_os_locks_live(void);

#ifdef __cplusplus
}
#endif

#endif /* TB5_FUZZ_OS_HOOKS_H */
