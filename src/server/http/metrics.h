/* SPDX-License-Identifier: MIT */
/*
 * The daemon's state in the Prometheus text format (version 0.0.4), for
 * GET /metrics (http.c).  The families are listed in proto/PROTOCOL.md,
 * "HTTP".  Runs on the loop thread, which owns the counters it reads.
 */
#ifndef REPOSE_SERVER_METRICS_H
#define REPOSE_SERVER_METRICS_H

#include <stdbool.h>

#include "codec/codec.h"
#include "server/core/core.h"

/* What only the transport knows: the open HTTP connections and whether the
 * daemon is ready (healthz's answer). */
typedef struct rpd_metrics_extra {
    uint64_t http_open, http_total, http_refused;
    bool ready;
    /* Open WebSockets: each is an HTTP connection and, through its bridge,
     * a TCP connection of the daemon; counted once, as "ws". */
    uint64_t ws_open;
} rpd_metrics_extra;

/* Appends the exposition to w (which grows; rp_jw_failed when out of
 * memory). */
void rpd_metrics_write(const rpd_core *core, const rpd_metrics_extra *x, rp_jw *w);

#endif /* REPOSE_SERVER_METRICS_H */
