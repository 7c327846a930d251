/*
 * reposed's event loop: listeners (TCP and Unix socket), connections,
 * signals and shutdown.  Only this part of repose touches libuv.
 */
#ifndef REPOSE_SERVER_SERVER_H
#define REPOSE_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "framer.h"
#include "server/protocol/rpc.h"
#include "sd.h"

/* Default listeners (protocol v1). */
#define RPD_DEFAULT_TCP "127.0.0.1:7411"
#define RPD_DEFAULT_UNIX "/tmp/reposed.sock"
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

/* Most worker threads (libuv's thread pool accepts up to 1024). */
#define RPD_MAX_THREADS 256

typedef struct rpd_config {
    const char *unix_path; /* NULL: no Unix socket */
    const char *tcp;       /* "HOST:PORT"; NULL: no TCP */
    const char *token_file; /* NULL: no auth */
    bool insecure_tcp;     /* allow a non-loopback TCP address without a token */
    /* Sockets passed by systemd; when non-NULL with n > 0 they replace
     * unix_path and tcp.  Borrowed: must outlive rpd_server_run. */
    const rpd_sd_fds *activation;
    rpd_limits limits;
    int threads; /* worker threads; 0: queries run on the loop; -1: one per CPU */
    const char *data_dir; /* NULL: memory only */
    int fsync;            /* rpd_fsync (durable.h) */
    bool repair;          /* cut a corrupt journal at the damage instead of refusing */
    uint64_t snapshot_after; /* journal bytes before a background snapshot */
} rpd_config;

typedef struct rpd_server rpd_server;

/* A listening socket; the handle's data points at the server. */
typedef struct rpd_listener {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
} rpd_listener;

/* A client connection.  The handle comes first; the struct is freed only in
 * the handle's close callback. */
typedef struct rpd_conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    rpd_server *srv;
    struct rpd_conn *prev, *next;
    rpd_framer in;
    rp_jw out;       /* replies not yet handed to uv_write */
    size_t inflight; /* bytes in uv_write requests not yet completed */
    bool reading;    /* uv_read_start is active */
    bool paused;     /* line processing stopped by backpressure */
    bool eof;        /* the peer has finished sending */
    bool closing;    /* close as soon as every reply is written */
    bool lingering;  /* write side shut down; discarding input until EOF */
    bool yielded;    /* used up its time slice; the server resumes it (rpd_conn_resume) */
    bool draining;   /* shutting down: no more reading; close once buffered lines are answered */
    uint64_t linger_since; /* uv_now() when lingering started */
    uint64_t connected_ms, last_line_ms, last_read_ms; /* uv_now() of those events */
    size_t input_counted; /* this connection's share of srv->input_bytes */
    size_t output_counted; /* its share of core.output_bytes (conn.c, count_output) */
    struct rpd_job *job;       /* the query running on a worker; lines wait for it */
    bool gone;                 /* closed while job ran: job's completion frees it */
    /* --fsync always: lines of this connection joined the group that
     * waits for the journal's fsync; the replies (out from sync_mark on)
     * and the lines not yet run wait for it (rpd_conn_sync_done). */
    bool sync_wait;
    uint64_t sync_epoch, sync_last; /* the first and last group (rpd_durable_group_epoch) */
    size_t sync_mark, sync_end; /* the replies from the first mutation on, in out */
    uint64_t watch_flushed_ns; /* last write of notifications (rpd_now_ns) */
    bool watch_pending;        /* in srv->watch_pending: notifications wait for the timer */
    struct rpd_conn *watch_next;
    uv_shutdown_t shutdown_req;
    rpd_session session;
} rpd_conn;

struct rpd_server {
    uv_loop_t *loop;
    rpd_core core;
    rpd_config cfg;
    rpd_listener listeners[RPD_MAX_LISTENERS];
    int n_listeners;         /* initialised handles in listeners[] */
    char *unix_path_created; /* unlinked at exit: only sockets we created */
    uv_signal_t sigterm, sigint, sigquit, sighup, sigusr1, sigusr2;
    uv_work_t warm; /* a no-op that starts libuv's pool threads (server.c) */
    uv_idle_t resume; /* runs connections that yielded their time slice */
    bool resume_active;
    bool watch_more; /* a watch flush left notifications for a later turn */
    size_t input_bytes; /* input buffer capacity of every connection */
    uv_timer_t grace;
    bool grace_started;
    uv_timer_t sweep; /* closes connections that lingered too long */
    uv_timer_t watchdog; /* sends WATCHDOG=1 to systemd (sd.h) */
    bool watchdog_started;
    bool stopping;
    rpd_conn *conns; /* doubly linked list */
    int threads;                /* worker threads (0: queries on the loop) */
    uint64_t jobs;              /* queries running on workers */
    bool rebuilding;            /* a tree rebuild runs on a worker (conn.c) */
    uv_timer_t watch_timer;     /* writes batched notifications (RPD_WATCH_BATCH_MS) */
    uint64_t watch_now_ns;      /* the clock before the current watch flush (conn.c) */
    rpd_conn *watch_pending;    /* connections it will write to */
    uv_timer_t sync_timer;      /* --fsync everysec: starts the journal's fsync */
    bool sync_timer_started;
    uv_work_t sync_work;        /* that fsync, on the pool */
    int sync_err;
    uint64_t sync_ns;
    uv_prepare_t group;         /* --fsync always: the group's fsync, once per loop iteration */
    bool group_started;
    uv_work_t snap_work;        /* a background snapshot (durable.h) */
    struct rpd_snap_job *snap_job;
};

/* Runs the daemon until SIGTERM/SIGINT; returns the process exit code. */
int rpd_server_run(const rpd_config *cfg);

/* conn.c */
void rpd_conn_accept(rpd_server *srv, uv_stream_t *listener, bool is_tcp);
void rpd_conn_close(rpd_conn *c);
/* Stops reading and closes once replies are flushed (shutdown). */
void rpd_conn_finish(rpd_conn *c);
/* Closes connections that have lingered longer than RPD_LINGER_MS and TCP
 * connections past their idle or auth timeout. */
void rpd_conn_sweep(rpd_server *srv);
/* Continues a connection that yielded its time slice (server.c calls it
 * from the resume idle handle). */
void rpd_conn_resume(rpd_conn *c);
/* Lets the watch code reach connections (installs rpd_watch_io) and sets
 * up the batching timer; rpd_conn_watch_close closes that timer. */
void rpd_conn_watch_io(rpd_server *srv);
void rpd_conn_watch_close(rpd_server *srv);
/* server.c: marks c as yielded and makes sure the resume handle runs. */
void rpd_conn_yield(rpd_conn *c);
/* Sends the watchers what the store's changes owe them, reading the clock
 * once for all of them; what one flush leaves (it stops after
 * RPD_WATCH_FLUSH_SENDS changes: watch.h) goes on at the next loop turns. */
void rpd_server_flush_watchers(rpd_server *srv);
/* server.c: called when a connection is gone. */
void rpd_server_conn_closed(rpd_server *srv);

/* conn.c: after a line ran on the loop, hands a tree rebuild a mutation
 * asked for to a worker (one at a time; none while stopping). */
void rpd_server_maintain(rpd_server *srv);
/* conn.c: the group c waited for has ended (err 0: its fsync is done;
 * else its mutations were undone and their replies become -32007). */
void rpd_conn_sync_done(rpd_conn *c, int err);
/* server.c: starts a background snapshot when the journal asks for one. */
void rpd_server_snapshot_maybe(rpd_server *srv);

#endif /* REPOSE_SERVER_SERVER_H */
