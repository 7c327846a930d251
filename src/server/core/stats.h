/* SPDX-License-Identifier: MIT */
/* Server statistics: counters and a latency histogram (no locking: the loop
 * thread owns them). */
#ifndef REPOSE_SERVER_STATS_H
#define REPOSE_SERVER_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "limits.h"

#define RPD_STATS_MAX_METHODS 64
/* Error counters: one slot per protocol error code, plus one for others. */
#define RPD_STATS_CODE_SLOTS (RPD_ERROR_CODE_COUNT + 1)
#define RPD_STATS_OTHER_SLOT (RPD_STATS_CODE_SLOTS - 1)
/* Log-linear latency histogram: 8 sub-buckets per power of two of ns. */
#define RPD_LAT_SUB 8
#define RPD_LAT_BUCKETS (64 * RPD_LAT_SUB)

typedef struct rpd_stats {
    uint64_t conn_current, conn_total, conn_rejected;
    uint64_t conn_tcp, conn_unix; /* open connections by transport */
    uint64_t http_rejected;       /* connections closed for speaking HTTP */
    uint64_t requests, notifications, errors, batches;
    uint64_t by_method[RPD_STATS_MAX_METHODS];
    /* A method's handler time, over the calls sampled (one in
     * RPD_LATENCY_SAMPLE on each thread): the mean in `stats`. */
    uint64_t method_ns[RPD_STATS_MAX_METHODS], method_timed[RPD_STATS_MAX_METHODS];
    uint64_t errors_by_code[RPD_STATS_CODE_SLOTS]; /* see rpd_stats_code_slot */
    /* Error replies of known methods, by method and code slot (every one
     * also counts in by_method and errors_by_code). */
    uint64_t method_errors[RPD_STATS_MAX_METHODS][RPD_STATS_CODE_SLOTS];
    uint64_t limits_hit[RPD_LIMIT_COUNT]; /* indexed by rpd_limit_id */
    uint64_t latency[RPD_LAT_BUCKETS];
    uint64_t latency_count, latency_sum_ns;
    /* Tree rebuilds handed to a worker (scene.h, rp_store_rebuild_take):
     * installed (a rebuild in place after repeated misses counts here too),
     * and dropped because the scene changed meanwhile. */
    uint64_t rebuilds_installed, rebuilds_dropped;
    /* plan: requests that ran a planner, those solved, those that timed
     * out, those stopped because their client had gone, and their time in
     * microseconds. */
    uint64_t plans, plans_solved, plans_timeout, plans_stopped, plan_us;
} rpd_stats;

/* What a light query tried on the loop can change in the counters, so
 * that a try whose answer is dropped (conn.c, run_light) is taken back
 * without a copy of all of rpd_stats (5 KB, mostly the latency histogram
 * and the per-method arrays): the request counters and the error and
 * limit counts are saved before the try (rpd_stats_mark); its method's
 * count and sampled time and its latency sample are noted by rpc.c as it
 * adds them, while core->light is set (rpd_stats_line). */
typedef struct rpd_stats_mark {
    uint64_t requests, notifications, errors, batches;
    uint64_t errors_by_code[RPD_STATS_CODE_SLOTS];
    uint64_t limits_hit[RPD_LIMIT_COUNT];
} rpd_stats_mark;

typedef struct rpd_stats_line {
    bool erred; /* method_errors[error_method][error_slot] was counted */
    size_t error_method;
    int error_slot;
    bool called;  /* by_method[method] was counted */
    bool timed;   /* and method_timed[method], with method_ns */
    bool sampled; /* a latency sample of latency_ns was recorded */
    size_t method;
    uint64_t method_ns, latency_ns;
} rpd_stats_line;

void rpd_stats_mark_take(const rpd_stats *s, rpd_stats_mark *m);
/* Puts the counters back as they were when m was taken, before the line
 * that l describes ran. */
void rpd_stats_mark_undo(rpd_stats *s, const rpd_stats_mark *m, const rpd_stats_line *l);

/* Adds every counter of src to dst (a worker's counts into the server's). */
void rpd_stats_add(rpd_stats *dst, const rpd_stats *src);

/* Monotonic clock in ns. */
uint64_t rpd_now_ns(void);
/* The same clock at the resolution of the kernel's tick (a few ms), where
 * the system has one that is cheaper to read (CLOCK_MONOTONIC_COARSE):
 * for time slices of tens of milliseconds, checked at every line. */
uint64_t rpd_now_coarse_ns(void);

/* Fills out with n random bytes from the kernel; without its generator
 * (early boot) with the clock, the pid and a counter: for ids that only
 * tell runs and files apart (run_id, the data directory's file ids), never
 * for secrets. */
void rpd_random_bytes(void *out, size_t n);

void rpd_stats_latency(rpd_stats *s, uint64_t ns);
/* The largest duration (ns) that falls in latency bucket b. */
uint64_t rpd_stats_bucket_upper(int b);
/* Latency at quantile q in [0,1], in ns (upper edge of its bucket); 0 when
 * nothing was recorded. */
uint64_t rpd_stats_quantile(const rpd_stats *s, double q);
/* Index into errors_by_code for a JSON-RPC code (RPD_STATS_OTHER_SLOT for a
 * code the protocol does not define), and back (0 for the other slot). */
int rpd_stats_code_slot(int code);
int rpd_stats_slot_code(int slot);

#endif /* REPOSE_SERVER_STATS_H */
