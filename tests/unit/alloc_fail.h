/* SPDX-License-Identifier: MIT */
/*
 * Allocation-failure injection for tests (SQLite's approach): the test
 * executable is linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,
 * --wrap=free, so every call the project's static libraries (repose_static,
 * repose_codec, repose_rpc) and the test itself make to those functions
 * lands in the __wrap_ functions below.  cJSON is a shared library, so its
 * allocations are routed here through cJSON_InitHooks (af_install_json_hooks).
 *
 * When armed, the wrappers count allocation calls (malloc, calloc, realloc)
 * and make the N-th one return NULL, and optionally every one after it.
 * They also keep a count of live blocks, so a test can see that everything
 * allocated was freed without needing LeakSanitizer (which also runs, in the
 * sanitizer build).
 *
 * Single-threaded by design, like the daemon.
 */
#ifndef REPOSE_TEST_ALLOC_FAIL_H
#define REPOSE_TEST_ALLOC_FAIL_H

#include <stdbool.h>
#include <stddef.h>

/* The wrappers and the real functions, as the linker's --wrap names them. */
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t count, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
void *__real_malloc(size_t n);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

/* Starts counting allocation calls from zero.  With n > 0 the n-th call
 * from now fails (returns NULL, as an exhausted heap would); with
 * `persistent` every call after it fails too.  n == 0 counts without
 * failing. */
void af_arm(unsigned long n, bool persistent);
/* Stops failing and counting. */
void af_disarm(void);
/* Allocation calls since the last af_arm (failed ones included). */
unsigned long af_calls(void);
/* Calls made to fail since the last af_arm. */
unsigned long af_failures(void);
/* Of those, calls made by cJSON (through af_install_json_hooks). */
unsigned long af_json_failures(void);
/* Blocks allocated through the wrappers and not yet freed (a block that
 * reaches free through the wrappers but was allocated elsewhere would make
 * this drift, so tests only free what the wrapped code allocated). */
long af_live(void);
/* Points cJSON's allocator at the counting wrappers; a failure there also
 * calls rp_json_note_oom(), as the daemon's arena does.  cJSON's hooks are
 * process-wide; call again after anything that resets them. */
void af_install_json_hooks(void);

#endif /* REPOSE_TEST_ALLOC_FAIL_H */
