/* SPDX-License-Identifier: MIT */
/*
 * reposed --http HOST:PORT: an HTTP listener on the daemon's libuv loop,
 * served by libwebsockets (its libuv event library, on our loop): GET
 * /metrics (Prometheus text, metrics.h), GET /healthz, and a WebSocket at
 * /ws speaking the daemon's JSON-RPC, one message a request.  The paths, the
 * token rule and the answers are in proto/PROTOCOL.md, "HTTP"; why
 * libwebsockets is in docs/ARCHITECTURE.md, "HTTP".
 */
#ifndef REPOSE_SERVER_HTTP_H
#define REPOSE_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "server/core/core.h"

typedef struct rpd_http rpd_http;

/* The daemon's readiness as /healthz reports it: true, or false with a
 * reason (a short sentence in why). */
typedef bool (*rpd_http_ready_fn)(void *ctx, char *why, size_t cap);

typedef struct rpd_http_config {
    const char *addr; /* "HOST:PORT", numeric host or localhost; port 0 picks one */
    bool insecure;    /* allow a host other than loopback */
    rpd_http_ready_fn ready;
    void *ready_ctx;
    /* /ws: hands the daemon its end of a WebSocket's bridge, a socket pair
     * carrying one JSON-RPC line per message (rpd_conn_adopt_ws). */
    void (*adopt)(void *ctx, int fd);
    void *adopt_ctx;
    /* Called (from the loop, not inside libwebsockets) when the last
     * WebSocket bridge has gone after rpd_http_drain. */
    void (*drained)(void *ctx);
    void *drained_ctx;
} rpd_http_config;

/* Starts listening; false (logged) when the address is malformed, not
 * loopback without insecure, or cannot be bound.  Logs "listening on http
 * HOST:PORT".  *out may be set either way: rpd_http_free it. */
bool rpd_http_start(uv_loop_t *loop, rpd_core *core, const rpd_http_config *cfg, rpd_http **out);
/* The daemon is stopping: new HTTP connections and WebSockets are closed
 * as they come, /healthz (on a connection kept alive) says why, and the
 * open WebSockets go on until the daemon's end of their bridge closes and
 * what it wrote has been sent; then cfg.drained.  NULL: a no-op. */
void rpd_http_drain(rpd_http *h);
/* WebSocket bridges not yet gone (0 for NULL). */
size_t rpd_http_bridges(const rpd_http *h);
/* Stops listening and closes every HTTP connection; their handles close
 * as the loop goes on running (libwebsockets may call back meanwhile).
 * Again, or NULL: a no-op. */
void rpd_http_stop(rpd_http *h);
/* Open HTTP connections (repose_connections{transport="http"}). */
uint64_t rpd_http_open(const rpd_http *h);
/* Frees what is left once the loop has stopped (running it again while
 * libwebsockets closes its last handles), before uv_loop_close.  NULL is
 * a no-op. */
void rpd_http_free(rpd_http *h, uv_loop_t *loop);

#endif /* REPOSE_SERVER_HTTP_H */
