/* SPDX-License-Identifier: MIT */
/*
 * The event loop's state, shared by server.c (loop, listeners, signals,
 * timers, shutdown) and conn.c (connections).  Only this part of repose
 * touches libuv.  Nothing outside src/server/transport includes this.
 */
#ifndef REPOSE_SERVER_SERVER_INT_H
#define REPOSE_SERVER_SERVER_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "conn.h"
#include "server.h"
#include "server/protocol/rpc.h"

/* An output buffer larger than this is freed after use instead of kept;
 * an input buffer larger than this is freed when it holds nothing, and a
 * connection with at most this much of an incomplete line buffered is never
 * refused for max_input_bytes. */
#define RPD_KEEP_OUTPUT_BYTES (256u * 1024u)
#define RPD_KEEP_INPUT_BYTES (128u * 1024u)
/* Longest time one connection processes lines before letting the loop
 * serve others (timers, signals, other clients), ns. */
#define RPD_SLICE_NS (20u * 1000u * 1000u)
/* Bytes offered to each read. */
#define RPD_READ_CHUNK (64u * 1024u)
/* Grace period for flushing replies at shutdown, ms. */
#define RPD_SHUTDOWN_GRACE_MS 5000
/* How long a connection we are closing may linger, discarding input, so that
 * its last replies are not lost to a TCP reset (see linger_close), ms; and
 * how often lingering connections are checked. */
#define RPD_LINGER_MS 2000
#define RPD_SWEEP_MS 500
/* A watcher's connection that was written to less than this long ago gets
 * its next notifications batched into one write when the timer fires, ns
 * (and the timer's period, ms): fan-out to many watchers of a busy scene
 * costs one write per watcher per period, not one per change. */
#define RPD_WATCH_BATCH_NS (1000u * 1000u)
#define RPD_WATCH_BATCH_MS 1
/* Listening sockets: ours (at most one TCP and one Unix) or those passed by
 * systemd (socket activation, at most RPD_SD_MAX_FDS). */
#define RPD_MAX_LISTENERS RPD_SD_MAX_FDS
/* Backlog of pending connections for each listener. */
#define RPD_LISTEN_BACKLOG 511

/* A listening socket; the handle's data points at the server. */
typedef struct rpd_listener {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
} rpd_listener;

struct rpd_server {
    uv_loop_t *loop;
    rpd_core core;
    rpd_config cfg;
    rpd_listener listeners[RPD_MAX_LISTENERS];
    int n_listeners;         /* initialised handles in listeners[] */
    char *unix_path_created; /* unlinked at exit: only sockets we created */
    uv_signal_t sigterm, sigint, sigquit, sighup, sigusr1, sigusr2;
    uv_work_t warm;   /* a no-op that starts libuv's pool threads (server.c) */
    uv_idle_t resume; /* runs connections that yielded their time slice */
    bool resume_active;
    bool watch_more;    /* a watch flush left notifications for a later turn */
    size_t input_bytes; /* input buffer capacity of every connection */
    uv_timer_t grace;
    bool grace_started;
    uv_timer_t sweep;    /* closes connections that lingered too long */
    uv_timer_t watchdog; /* sends WATCHDOG=1 to systemd (sd.h) */
    bool watchdog_started;
    bool stopping;
    rpd_conn *conns;         /* doubly linked list */
    int threads;             /* worker threads (0: queries on the loop) */
    uint64_t jobs;           /* queries running on workers */
    bool rebuilding;         /* a tree rebuild runs on a worker (conn.c) */
    uv_timer_t watch_timer;  /* writes batched notifications (RPD_WATCH_BATCH_MS) */
    uint64_t watch_now_ns;   /* the clock before the current watch flush (conn.c) */
    rpd_conn *watch_pending; /* connections it will write to */
    uv_timer_t sync_timer;   /* --fsync everysec: starts the journal's fsync */
    bool sync_timer_started;
    uv_work_t sync_work; /* that fsync, on the pool */
    int sync_err;
    uint64_t sync_ns;
    uv_prepare_t group; /* --fsync always: the group's fsync, once per loop iteration */
    bool group_started;
    uv_work_t snap_work; /* a background snapshot (durable.h) */
    struct rpd_snap_job *snap_job;
    uv_async_t repl_async; /* --nats: the replica queued something (replica.h) */
    uv_timer_t repl_timer; /* --nats: proposals not back are sent again (rpd_replica_tick) */
    bool repl_started;
    /* --snapshot-publish: one publication at a time, and the stream
     * sequence the last one was started at. */
    bool publishing, caught_up;
    uint64_t published_at;
    /* Connections whose line waits for min_revision (conn.c), and the timer
     * that ends their waits at max_wait_ms (running only while there are). */
    size_t waiters;
    uv_timer_t wait_timer;
    struct rpd_http *http; /* --http (server/http/http.h) */
};

/* server.c, for conn.c: a connection is gone (a shutdown may wait for
 * the last); the loop's resume handle runs yielded connections at the
 * next iterations (rpd_conns_resume); watchers get what the store's
 * changes owe them, reading the clock once for all of them (what one
 * flush leaves, after RPD_WATCH_FLUSH_SENDS changes: watch.h, goes on at
 * the next loop turns); a tree rebuild a mutation asked for goes to a
 * worker (one at a time; none while stopping); and a background snapshot
 * starts when the journal asks for one. */
void rpd_server_conn_closed(rpd_server *srv);
void rpd_server_start_resume(rpd_server *srv);
void rpd_server_flush_watchers(rpd_server *srv);
void rpd_server_maintain(rpd_server *srv);
void rpd_server_snapshot_maybe(rpd_server *srv);
/* --snapshot-publish: starts publishing an image of the store when the
 * replica has applied that many messages since the last one. */
void rpd_server_replica_publish_maybe(rpd_server *srv);

#endif /* REPOSE_SERVER_SERVER_INT_H */
