/* SPDX-License-Identifier: MIT */
/*
 * Fork-join helpers for splitting one large request across cores: a query
 * running on a worker thread calls rpd_parallel_for, and helper threads
 * (rpd_pool_start) take pieces of it while the caller takes pieces too.
 * The caller never waits for a helper to become free, so a pool that is
 * busy (or has no helpers) only means the caller does more of the work.
 */
#ifndef REPOSE_SERVER_POOL_H
#define REPOSE_SERVER_POOL_H

#include <stdbool.h>
#include <stddef.h>

typedef void (*rpd_pfor_fn)(void *ctx, size_t i);

/* Starts `helpers` helper threads (0: none).  False when a thread could not
 * be started (those started are stopped again). */
bool rpd_pool_start(int helpers);
/* Stops and joins the helpers. */
void rpd_pool_stop(void);
/* Helper threads running. */
int rpd_pool_helpers(void);

/* Runs fn(ctx, i) for every i in [0, n), on the calling thread and any
 * helper that is free, and returns when all have run.  Pieces may run in
 * any order and at the same time: fn must only write what piece i owns. */
void rpd_parallel_for(size_t n, rpd_pfor_fn fn, void *ctx);

/* Lowers the calling thread's scheduling priority below the event loop's,
 * once per thread (worker and helper threads call it before their first
 * piece of work): the loop stays responsive while every core computes. */
void rpd_thread_yield_to_loop(void);

#endif /* REPOSE_SERVER_POOL_H */
