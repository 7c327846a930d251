/* SPDX-License-Identifier: MIT */
/*
 * Client connections: read bytes into the framer, run complete lines through
 * the JSON-RPC layer, and write the replies.  One code path serves TCP and
 * Unix streams.
 *
 * Replies of all the lines found in one read are coalesced into one write.
 * Backpressure: when a client's unsent replies pass write_pause_bytes, line
 * processing and reading stop until the writes drain below half of that; a
 * client whose backlog (replies queued in libuv plus the reply being built)
 * passes write_kill_bytes is disconnected.
 *
 * Fairness: one connection processes lines for at most RPD_SLICE_NS at a
 * time; then it yields (stops reading) and the server's idle handle resumes
 * it on the next loop iteration, after other clients, timers and signals
 * had their turn.
 *
 * Memory: the request bytes buffered by all connections together are
 * counted (srv->input_bytes); a connection whose incomplete line would take
 * the total past max_input_bytes is refused with -32004 and closed.  An
 * idle connection's input buffer shrinks back.  The unsent replies and
 * notifications of all connections together are counted too
 * (core.output_bytes, see account_output): when they pass
 * max_output_bytes, the connections holding the most are closed until the
 * total is back under it (proto/PROTOCOL.md, Limits).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/protocol/arena.h"
#include "server/persistence/durable.h"
#include "server/core/log.h"
#include "server/core/pool.h"
#include "framer.h"
#include "server_int.h"
#include "server/notify/watch.h"
#include "server/protocol/methods.h"
#include "server/replica/replica.h"

/* A connection's life.  Transitions (all in this file):
 *
 *   OPEN       reads lines and answers them.
 *     -> DRAINING   rpd_conns_finish (shutdown): stops reading; answers the
 *                   lines it holds (queries run, mutations get -32006).
 *     -> CLOSING    refuse (a connection-level limit), an HTTP request, a
 *                   line over max_request_bytes: answers nothing more.
 *   DRAINING   -> CLOSING once its input is used up.
 *   CLOSING    closes once every reply is written: close_if_done ->
 *              linger_close, also for an OPEN connection whose peer sent
 *              EOF (eof) once its lines are answered.
 *     -> LINGERING  our write side is shut down (FIN after the last reply)
 *                   and input is read and dropped until the peer's EOF or
 *                   RPD_LINGER_MS (rpd_conn_sweep), so that a TCP reset
 *                   cannot destroy replies not yet delivered; or straight
 *                   to CLOSED when the peer already sent EOF.
 *   any        -> CLOSED    rpd_conn_close: uv_close, freed in on_close;
 *   CLOSED     -> GONE      on_close while a query of it runs on a worker:
 *                           the job's completion frees it.
 *
 * The order matters: a connection never goes back to an earlier state
 * (conn_closing: CLOSING and later). */
typedef enum rpd_conn_state {
    RPD_CONN_OPEN,
    RPD_CONN_DRAINING,
    RPD_CONN_CLOSING,
    RPD_CONN_LINGERING,
    RPD_CONN_CLOSED,
    RPD_CONN_GONE
} rpd_conn_state;

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
    rpd_conn_state state;
    /* What it is doing in OPEN and DRAINING (none of these is a state of
     * its life): */
    bool reading;          /* uv_read_start is active */
    bool paused;           /* line processing stopped by backpressure */
    bool eof;              /* the peer has finished sending (its lines are still answered) */
    bool yielded;          /* used up its time slice; the loop resumes it (rpd_conns_resume) */
    uint64_t linger_since; /* uv_now() when lingering started */
    uint64_t connected_ms, last_line_ms, last_read_ms; /* uv_now() of those events */
    uint64_t number;       /* core.stats.conn_total when it was accepted (logs) */
    const char *transport; /* "tcp", "unix" or "ws" (a WebSocket of --http, on a pipe) */
    size_t input_counted;  /* this connection's share of srv->input_bytes */
    size_t output_counted; /* its share of core.output_bytes (conn.c, count_output) */
    struct rpd_job *job;   /* the query running on a worker; lines wait for it */
    /* --fsync always: lines of this connection joined the group that
     * waits for the journal's fsync; the replies (out from sync_mark on)
     * and the lines not yet run wait for it (rpd_conn_sync_done). */
    bool sync_wait;
    uint64_t sync_epoch, sync_last; /* the first and last group (rpd_durable_group_epoch) */
    size_t sync_mark, sync_end;     /* the replies from the first mutation on, in out */
    rpd_outcomes outcomes;          /* the success replies among them (rpc.c records) */
    uint64_t watch_flushed_ns;      /* last write of notifications (rpd_now_ns) */
    bool watch_pending;             /* in srv->watch_pending: notifications wait for the timer */
    struct rpd_conn *watch_next;
    /* --nats: a batch line holding mutations, run a request at a time
     * (rpd_batch_split; conn_batch below). */
    struct conn_batch *batch;
    /* A line whose min_revision the store had not reached: it runs when the
     * store does, or at wait_until (uv_now ms); no later line runs first. */
    char *wait_line;
    size_t wait_len;
    uint64_t wait_revision, wait_until;
    uv_shutdown_t shutdown_req;
    rpd_session session;
} rpd_conn;

static void conn_close(rpd_conn *c);

/* CLOSING or later: it answers no more lines. */
static inline bool conn_closing(const rpd_conn *c)
{
    return c->state >= RPD_CONN_CLOSING;
}

/* Marks c as having used up its time slice; the loop's resume handle
 * runs it again at the next iterations (rpd_conns_resume). */
static void conn_yield(rpd_conn *c)
{
    c->yielded = true;
    rpd_server_start_resume(c->srv);
}

/* Answers nothing more and closes once its replies are written. */
static void close_after_replies(rpd_conn *c)
{
    if (c->state < RPD_CONN_CLOSING)
        c->state = RPD_CONN_CLOSING;
}

typedef struct write_req {
    uv_write_t req;
    rpd_conn *conn;
    char *buf;
    size_t len;
} write_req;

static void on_close(uv_handle_t *h);
static bool start_job(rpd_conn *c, const char *line, size_t len);
static void job_client_gone(struct rpd_job *j);
static void on_watch_timer(uv_timer_t *t);
static void watch_unpend(rpd_conn *c);
static void start_reading(rpd_conn *c);
static void process_lines(rpd_conn *c);

static size_t backlog(const rpd_conn *c)
{
    return c->inflight + c->out.len;
}

/* Records a change of this connection's unsent output in the total for all
 * connections; a closing connection holds nothing (its queued writes are
 * being cancelled and its buffers go with its close callback). */
static void count_output(rpd_conn *c)
{
    rpd_core *core = &c->srv->core;
    size_t now = uv_is_closing(&c->h.handle) ? 0 : backlog(c);
    core->output_bytes = core->output_bytes - c->output_counted + now;
    c->output_counted = now;
    if (core->output_bytes > core->output_peak)
        core->output_peak = core->output_bytes;
}

/* Closes the connections holding the most unsent output until the total
 * for all of them is within max_output_bytes, as Redis's
 * maxmemory-clients does.  The list is scanned only when the total is over
 * the cap, so once per disconnection, never on an ordinary write; a client
 * that reads its replies holds little or nothing and is reached only when
 * every larger holder is gone and the total is still over.  Victims are
 * closed without a word: an error line would be one more unsent reply. */
static void shed_output(rpd_server *srv)
{
    rpd_core *core = &srv->core;
    while (core->output_bytes > core->limits.max_output_bytes) {
        rpd_conn *victim = NULL;
        for (rpd_conn *c = srv->conns; c; c = c->next)
            if (!uv_is_closing(&c->h.handle) &&
                (!victim || c->output_counted > victim->output_counted))
                victim = c;
        if (!victim || victim->output_counted == 0)
            return; /* the total counts closing connections no longer */
        core->stats.limits_hit[RPD_LIMIT_max_output_bytes]++;
        rpd_log(RPD_LOG_WARN,
                "unsent output of all clients over %zu bytes; disconnecting the %s client "
                "holding the most (%zu bytes)",
                core->limits.max_output_bytes, victim->transport, victim->output_counted);
        conn_close(victim); /* counts its output out */
    }
}

/* count_output, then shed_output when the total went over the cap.  May
 * close c itself: callers check uv_is_closing. */
static void account_output(rpd_conn *c)
{
    count_output(c);
    if (c->srv->core.output_bytes > c->srv->core.limits.max_output_bytes)
        shed_output(c->srv);
}

/* Counts a freed output buffer towards returning memory to the system
 * (rpd_core_trim).  Only large ones: the small ones are reused by the next
 * replies, and counting them would trim for nothing. */
static void freed_output(rpd_server *srv, size_t bytes)
{
    if (bytes > RPD_KEEP_OUTPUT_BYTES)
        rpd_core_freed(&srv->core, bytes);
}

/* Records a change of this connection's input buffer capacity in the
 * server-wide total (and a freed one towards rpd_core_trim). */
static void account_input(rpd_conn *c)
{
    rpd_server *srv = c->srv;
    if (c->in.cap < c->input_counted) /* a buffer freed or trimmed */
        rpd_core_freed(&srv->core, c->input_counted - c->in.cap);
    srv->input_bytes = srv->input_bytes - c->input_counted + c->in.cap;
    c->input_counted = c->in.cap;
}

/* Closes now, dropping unsent replies. */
static void conn_close(rpd_conn *c)
{
    if (uv_is_closing(&c->h.handle))
        return;
    if (c->reading)
        uv_read_stop(&c->h.stream);
    c->reading = false;
    c->state = RPD_CONN_CLOSED;
    uv_close(&c->h.handle, on_close);
    count_output(c); /* what it held is going: no longer counted */
}

/* Input of a lingering connection is read into this and dropped. */
static char discard_buf[64 * 1024];

static void on_alloc_discard(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    *buf = uv_buf_init(discard_buf, sizeof discard_buf);
}

static void on_read_discard(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    if (nread < 0)
        conn_close(s->data); /* EOF or error: the peer is done */
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    rpd_conn *c = req->data;
    if (uv_is_closing(&c->h.handle))
        return;
    if (status < 0 || uv_read_start(&c->h.stream, on_alloc_discard, on_read_discard) < 0) {
        conn_close(c);
        return;
    }
    c->reading = true;
}

/* Ends a connection whose replies are all handed to the kernel.  Closing a
 * TCP socket that still has unread input makes the kernel send a reset,
 * which can destroy replies not yet delivered.  So, unless the peer already
 * sent EOF, shut down our write side (FIN after the last reply) and read and
 * discard until the peer closes, for at most RPD_LINGER_MS (rpd_conn_sweep,
 * or the shutdown grace timer). */
static void linger_close(rpd_conn *c)
{
    if (c->state == RPD_CONN_LINGERING || uv_is_closing(&c->h.handle))
        return;
    if (c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    if (c->eof) {
        conn_close(c);
        return;
    }
    c->state = RPD_CONN_LINGERING;
    c->linger_since = uv_now(c->srv->loop);
    c->shutdown_req.data = c;
    if (uv_shutdown(&c->shutdown_req, &c->h.stream, on_shutdown) < 0)
        conn_close(c);
}

static void close_if_done(rpd_conn *c)
{
    if ((conn_closing(c) || c->eof) && backlog(c) == 0 && !c->paused && !c->yielded && !c->job &&
        !c->sync_wait)
        linger_close(c);
}

static void on_write(uv_write_t *req, int status)
{
    write_req *wr = (write_req *)req;
    rpd_conn *c = wr->conn;
    c->inflight -= wr->len;
    /* Every buffer of a connection that goes counts: a stalled client's
     * many small writes add up. */
    if (status < 0 || uv_is_closing(&c->h.handle))
        rpd_core_freed(&c->srv->core, wr->len);
    else
        freed_output(c->srv, wr->len);
    free(wr->buf);
    free(wr);
    count_output(c);
    if (status < 0) {
        if (status != UV_ECANCELED)
            rpd_log(RPD_LOG_DEBUG, "write failed: %s", uv_strerror(status));
        conn_close(c);
        return;
    }
    if (uv_is_closing(&c->h.handle))
        return;
    if (rpd_watch_session_lagging(&c->session)) {
        c->srv->watch_now_ns = rpd_now_ns();
        rpd_watch_drained(c->srv->core.watch, &c->session, &c->srv->core.limits);
    }
    if (c->paused && backlog(c) < c->srv->core.limits.write_pause_bytes / 2) {
        c->paused = false;
        process_lines(c); /* may pause again, flushes, may close */
        if (uv_is_closing(&c->h.handle))
            return;
        if (!c->paused && !c->yielded && !c->eof && !conn_closing(c))
            start_reading(c);
        return;
    }
    close_if_done(c);
}

/* Empties the output buffer, keeping its allocation for the next replies
 * unless a large reply made it big. */
static void release_output(rpd_conn *c)
{
    freed_output(c->srv, c->out.cap); /* rp_jw_release frees it when that large */
    rp_jw_release(&c->out, RPD_KEEP_OUTPUT_BYTES);
}

/* Sends the buffered replies.  When nothing is queued in libuv, try to
 * write them right away (uv_try_write): usually the socket takes everything,
 * and the output buffer is kept for the next replies, with no write request
 * and no callback.  Whatever is left moves into a write request (the buffer
 * itself when nothing was written, no copy). */
static void send_output(rpd_conn *c)
{
    /* Replies behind a mutation waiting for the journal's fsync wait too. */
    if (c->out.len == 0 || c->sync_wait || uv_is_closing(&c->h.handle))
        return;
    if (rp_jw_failed(&c->out)) {
        rpd_log(RPD_LOG_ERROR, "out of memory building replies; closing a connection");
        conn_close(c);
        return;
    }
    size_t done = 0;
    if (c->inflight == 0) {
        uv_buf_t b = uv_buf_init(c->out.buf, (unsigned)c->out.len);
        int n = uv_try_write(&c->h.stream, &b, 1);
        if (n > 0)
            done = (size_t)n;
        else if (n != UV_EAGAIN && n != UV_ENOSYS) {
            rpd_log(RPD_LOG_DEBUG, "write failed: %s", uv_strerror(n));
            conn_close(c);
            return;
        }
        if (done == c->out.len) {
            release_output(c);
            /* Written at once: no write callback will tell the watch code
             * that the output drained. */
            if (rpd_watch_session_lagging(&c->session)) {
                c->srv->watch_now_ns = rpd_now_ns();
                rpd_watch_drained(c->srv->core.watch, &c->session, &c->srv->core.limits);
            }
            return;
        }
    }
    write_req *wr = malloc(sizeof *wr);
    if (!wr) {
        conn_close(c);
        return;
    }
    wr->conn = c;
    if (done == 0) {
        wr->buf = rp_jw_detach(&c->out, &wr->len);
    } else {
        wr->len = c->out.len - done;
        wr->buf = malloc(wr->len);
        if (!wr->buf) {
            free(wr);
            conn_close(c);
            return;
        }
        memcpy(wr->buf, c->out.buf + done, wr->len);
        release_output(c);
    }
    uv_buf_t b = uv_buf_init(wr->buf, (unsigned)wr->len);
    c->inflight += wr->len;
    int rc = uv_write(&wr->req, &c->h.stream, &b, 1, on_write);
    if (rc < 0) {
        c->inflight -= wr->len;
        free(wr->buf);
        free(wr);
        conn_close(c);
    }
}

/* Counts what was appended to the output (which may take the total for all
 * connections over max_output_bytes and close the largest holders, c among
 * them), sends it, and counts what the socket took at once. */
static void flush(rpd_conn *c)
{
    account_output(c);
    send_output(c);
    count_output(c);
}

/* Sends the HTTP 400 text to a client that spoke HTTP and closes its
 * connection without running anything more from it. */
static void refuse_http(rpd_conn *c)
{
    rpd_server *srv = c->srv;
    srv->core.stats.http_rejected++;
    rpd_log(RPD_LOG_WARN,
            "%s client sent an HTTP request; closing it (reposed speaks newline-delimited "
            "JSON-RPC, and a web page must not be able to drive it)",
            c->transport);
    rp_jw_raw(&c->out, rpd_http_reply, strlen(rpd_http_reply));
    close_after_replies(c);
}

static void run_line_here(rpd_conn *c, const char *line, size_t len, rpd_parsed *parsed);
static bool run_light(rpd_conn *c, const char *line, size_t len);

/* Runs one complete line: HTTP is refused, everything else goes to the
 * JSON-RPC layer, whose parse tree is dropped with the arena right after. */
static void run_line(rpd_conn *c, const char *line, size_t len)
{
    rpd_core *core = &c->srv->core;
    c->last_line_ms = uv_now(c->srv->loop);
    if (rpd_line_is_http(line, len)) {
        refuse_http(c);
        return;
    }
    /* Queries go to a worker (the connection's next lines wait for it, so
     * replies keep their order); when the job cannot be set up, the line
     * runs here as it would without workers.  Behind a mutation waiting for
     * its group's fsync it runs here too, so that its reply is held with
     * the mutation's (and answered -32007 if the group is undone). */
    if (c->srv->threads > 0 && !c->sync_wait && !rpd_session_locked(core, &c->session)) {
        /* One look at the line decides (rpd_line_place). */
        rpd_place place = rpd_line_place(line, len);
        /* A light query while the workers are idle: here, saving the two
         * thread hand-offs of a job (rpc.h, RPD_LIGHT_WORK). */
        if (place == RPD_PLACE_LIGHT && c->srv->jobs == 0 && run_light(c, line, len))
            return;
        if (place != RPD_PLACE_LOOP && start_job(c, line, len))
            return;
    }
    run_line_here(c, line, len, NULL);
}

/* Runs a light query on the loop within RPD_LIGHT_WORK; false, with
 * nothing written and the counters as they were, when it needed more (the
 * caller hands it to a worker). */
static bool run_light(rpd_conn *c, const char *line, size_t len)
{
    rpd_core *core = &c->srv->core;
    rpd_stats_mark saved; /* not all of rpd_stats: see rpd_stats_mark */
    rpd_stats_mark_take(&core->stats, &saved);
    memset(&core->light_line, 0, sizeof core->light_line);
    size_t mark = c->out.len;
    core->light = true;
    core->light_overrun = false;
    rpd_process_line(core, &c->session, line, len, &c->out);
    core->light = false;
    rpd_arena_reset();
    if (!core->light_overrun)
        return true;
    c->out.len = mark;
    rpd_stats_mark_undo(&core->stats, &saved, &core->light_line);
    return false;
}

/* Runs a line on the event loop (run_line, or one a worker parsed and
 * handed back: parsed non-NULL), holding its reply behind a group commit
 * it joined. */
static void run_line_here(rpd_conn *c, const char *line, size_t len, rpd_parsed *parsed)
{
    rpd_core *core = &c->srv->core;
    uint64_t seq = rpd_durable_group_seq(core->durable);
    size_t mark = c->out.len;
    /* --fsync always: the success replies are recorded, so that an undone
     * group can answer them -32007 (answer_undone). */
    if (!c->sync_wait) {
        c->outcomes.n = 0;
        c->outcomes.lost = false;
    }
    if (core->durable && rpd_durable_policy(core->durable) == RPD_FSYNC_ALWAYS)
        c->session.outcomes = &c->outcomes;
    if (parsed)
        rpd_run_parsed(core, &c->session, parsed, &c->out);
    else
        rpd_process_line(core, &c->session, line, len, &c->out);
    c->session.outcomes = NULL;
    rpd_arena_reset();
    if (rpd_durable_group_seq(core->durable) != seq) {
        /* --fsync always: the line wrote records that wait for the group's
         * fsync, at the end of this loop iteration (server.c).  Its reply
         * and everything after it wait too; the lines already received go
         * on running (their mutations join the group) until this turn of
         * process_lines ends. */
        uint64_t epoch = rpd_durable_group_epoch(core->durable);
        if (!c->sync_wait) {
            c->sync_wait = true;
            c->sync_epoch = epoch;
            c->sync_mark = mark;
        }
        c->sync_last = epoch;
    }
    if (c->sync_wait)
        c->sync_end = c->out.len;
    rpd_server_maintain(c->srv); /* a mutation may have asked for a tree rebuild */
    if (c->srv->waiters && c->wait_line == NULL)
        rpd_conns_wake_waiters(c->srv); /* it may have reached another's min_revision */
    /* After auth, the full request size applies. */
    if (c->in.max_line < core->limits.max_request_bytes && !rpd_session_locked(core, &c->session))
        c->in.max_line = core->limits.max_request_bytes;
}

/* Whether a client lets replies pile up: counted are the bytes libuv has
 * not written yet and the replies still in the output buffer.  Then the
 * new replies count towards the output of all clients, which may close
 * the largest holders (c among them).  True when c was closed. */
static bool over_output_limits(rpd_conn *c)
{
    rpd_core *core = &c->srv->core;
    if (backlog(c) > core->limits.write_kill_bytes) {
        core->stats.limits_hit[RPD_LIMIT_write_kill_bytes]++;
        rpd_log(RPD_LOG_WARN, "client not reading (%zu bytes of replies pending); disconnecting",
                backlog(c));
        conn_close(c);
        return true;
    }
    account_output(c);
    return uv_is_closing(&c->h.handle);
}

/* ---- --nats: batches holding mutations ------------------------------------------------ */

/* The requests of a batch line run as lines of their own, each mutation
 * waiting for the stream (proto/PROTOCOL.md, Replication); their replies
 * are gathered in `out` (the array so far) and written as one line when
 * the last has run. */
typedef struct conn_batch {
    char **elems;
    size_t n, next;
    rp_jw out;
    bool any;
} conn_batch;

/* Adds one request's reply line (none for a notification) to the array. */
static void batch_add(conn_batch *b, const rp_jw *reply)
{
    size_t n = reply->len;
    while (n && reply->buf[n - 1] == '\n')
        n--;
    if (!n)
        return;
    rp_jw_raw(&b->out, b->any ? "," : "[", 1);
    b->any = true;
    rp_jw_raw(&b->out, reply->buf, n);
}

static void batch_free(rpd_conn *c)
{
    if (!c->batch)
        return;
    rpd_batch_free(c->batch->elems, c->batch->n);
    rp_jw_free(&c->batch->out);
    free(c->batch);
    c->batch = NULL;
}

/* Runs the batch's requests until one waits for the stream or the last has
 * run; then the array goes out. */
static void batch_step(rpd_conn *c)
{
    conn_batch *b = c->batch;
    rpd_core *core = &c->srv->core;
    while (b->next < b->n && !c->session.repl_token && !uv_is_closing(&c->h.handle)) {
        const char *e = b->elems[b->next++];
        rp_jw reply;
        rp_jw_init(&reply);
        rpd_process_line(core, &c->session, e, strlen(e), &reply);
        rpd_arena_reset();
        batch_add(b, &reply);
        rp_jw_free(&reply);
    }
    if (b->next < b->n || c->session.repl_token)
        return;
    if (b->any) {
        rp_jw_raw(&c->out, b->out.buf, b->out.len);
        rp_jw_raw(&c->out, "]\n", 2);
    }
    batch_free(c);
}

/* Takes a batch line that holds a mutation (with --nats); true when it
 * was taken (it then runs through batch_step). */
static bool batch_begin(rpd_conn *c, const char *line, size_t len)
{
    char **elems;
    size_t n;
    if (!c->srv->core.replica)
        return false;
    bool split = rpd_batch_split(line, len, &elems, &n);
    rpd_arena_reset();
    if (!split)
        return false;
    conn_batch *b = calloc(1, sizeof *b);
    if (!b) {
        rpd_batch_free(elems, n);
        return false; /* answered as a batch: its mutations get -32600 */
    }
    b->elems = elems;
    b->n = n;
    rp_jw_init(&b->out);
    c->batch = b;
    c->srv->core.stats.batches++;
    batch_step(c);
    return true;
}

/* ---- min_revision: lines that wait for the store --------------------------------- */

void rpd_conns_wake_waiters(rpd_server *srv);

static void on_wait_timer(uv_timer_t *t)
{
    rpd_conns_wake_waiters(t->data);
}

/* A line asking for a min_revision beyond the store's: kept, to run once
 * the store gets there (the replica applies it, or a client here writes
 * it) or max_wait_ms has passed.  True when it waits. */
static bool begin_wait(rpd_conn *c, const char *line, size_t len)
{
    rpd_server *srv = c->srv;
    rpd_core *core = &srv->core;
    uint64_t want = rpd_line_min_revision(line, len, rp_store_revision(core->store));
    rpd_arena_reset();
    if (!want || !core->limits.max_wait_ms || core->shutting_down)
        return false;
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return false; /* it runs now, and answers -32004 */
    memcpy(copy, line, len);
    c->wait_line = copy;
    c->wait_len = len;
    c->wait_revision = want;
    c->wait_until = uv_now(srv->loop) + core->limits.max_wait_ms;
    if (srv->waiters++ == 0)
        uv_timer_start(&srv->wait_timer, on_wait_timer, 2, 2);
    return true;
}

static void end_wait(rpd_conn *c)
{
    rpd_server *srv = c->srv;
    free(c->wait_line);
    c->wait_line = NULL;
    if (--srv->waiters == 0)
        uv_timer_stop(&srv->wait_timer);
}

void rpd_conns_wake_waiters(rpd_server *srv)
{
    static bool waking; /* (a line run here ends in run_line_here, which calls this) */
    if (!srv->waiters || waking)
        return;
    waking = true;
    uint64_t now = uv_now(srv->loop), have = rp_store_revision(srv->core.store);
    rpd_conn *next;
    for (rpd_conn *c = srv->conns; c; c = next) {
        next = c->next;
        if (!c->wait_line || (have < c->wait_revision && now < c->wait_until &&
                              !srv->core.shutting_down && !conn_closing(c)))
            continue;
        char *line = c->wait_line;
        size_t len = c->wait_len;
        c->wait_line = NULL; /* (end_wait frees it after the run) */
        run_line(c, line, len);
        c->wait_line = line;
        end_wait(c);
        if (!uv_is_closing(&c->h.handle))
            conn_yield(c); /* its next lines, and the reply's flush, at the next turn */
    }
    waking = false;
}

void rpd_conns_wait_timer_init(rpd_server *srv)
{
    uv_timer_init(srv->loop, &srv->wait_timer);
    srv->wait_timer.data = srv;
    uv_unref((uv_handle_t *)&srv->wait_timer); /* never keeps the loop alive */
}

/* Runs complete buffered lines until the input is used up, backpressure
 * says stop, or the time slice is over, writing the replies as it goes. */
static void process_lines(rpd_conn *c)
{
    rpd_core *core = &c->srv->core;
    /* The slice is measured on the coarse clock: it is read before every
     * line, and its tick is small beside RPD_SLICE_NS. */
    uint64_t slice_end = rpd_now_coarse_ns() + RPD_SLICE_NS;
    bool held = c->sync_wait; /* from an earlier turn: wait for its fsync */
    for (;;) {
        /* (repl_token: a mutation it sent waits for the stream.) */
        while (!conn_closing(c) && !c->job && !held && !c->session.repl_token && !c->wait_line) {
            if (c->batch) { /* the rest of a batch whose mutation came back */
                batch_step(c);
                if (over_output_limits(c))
                    return;
                continue;
            }
            if (backlog(c) >= core->limits.write_pause_bytes) {
                c->paused = true;
                break;
            }
            /* (The clock is read only when a line is waiting.) */
            if (rpd_framer_pending(&c->in) > 0 && rpd_now_coarse_ns() >= slice_end) {
                conn_yield(c);
                break;
            }
            const char *line;
            size_t len;
            rpd_frame_status st = rpd_framer_next(&c->in, &line, &len);
            if (st == RPD_FRAME_LINE) {
                if (begin_wait(c, line, len))
                    break;
                if (!batch_begin(c, line, len))
                    run_line(c, line, len);
                if (over_output_limits(c))
                    return;
                continue;
            }
            if (st == RPD_FRAME_TOO_LONG) {
                bool before_auth = c->in.max_line < core->limits.max_request_bytes;
                rpd_reply_line_too_long(core, &c->out,
                                        before_auth ? RPD_LIMIT_max_request_bytes_before_auth
                                                    : RPD_LIMIT_max_request_bytes,
                                        c->in.max_line);
                rpd_log(RPD_LOG_DEBUG, "request line over %zu bytes; closing the connection",
                        c->in.max_line);
                close_after_replies(c);
                break;
            }
            /* RPD_FRAME_NEED_MORE: at end of stream, the unterminated tail
             * is the last request; a draining connection (shutdown) is
             * done once its complete lines are answered. */
            if (c->eof && rpd_framer_rest(&c->in, &line, &len))
                run_line(c, line, len);
            if (c->state == RPD_CONN_DRAINING)
                c->state = RPD_CONN_CLOSING;
            break;
        }
        if (over_output_limits(c))
            return;
        /* Changes the lines made go to their watchers (this connection's
         * own notifications after its replies). */
        rpd_server_flush_watchers(c->srv);
        flush(c);
        if (uv_is_closing(&c->h.handle))
            return;
        /* When the socket took everything at once, carry on right here: no
         * write callback will come to resume us. */
        if (c->paused && backlog(c) < core->limits.write_pause_bytes / 2) {
            c->paused = false;
            continue;
        }
        break;
    }
    if ((c->paused || conn_closing(c) || c->yielded || c->job || c->sync_wait ||
         c->session.repl_token || c->wait_line) &&
        c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    if (rpd_framer_pending(&c->in) == 0) {
        rpd_framer_trim(&c->in, RPD_KEEP_INPUT_BYTES);
        account_input(c);
    }
    close_if_done(c);
}

/* The replies from the first mutation of the undone group on become
 * -32007 wherever they said success (the mutations were undone; the reads
 * among them may have shown them): the ones rpc.c recorded in
 * c->outcomes.  Whatever the connection got after them stays after them. */
static void answer_undone(rpd_conn *c, int err)
{
    rpd_core *core = &c->srv->core;
    size_t tail = c->out.len - c->sync_end, n = c->sync_end - c->sync_mark;
    char *copy = c->outcomes.lost ? NULL : malloc(n + tail + 1);
    if (!copy) {
        rpd_log(RPD_LOG_ERROR, "out of memory answering an undone mutation; closing a connection");
        conn_close(c);
        return;
    }
    memcpy(copy, c->out.buf + c->sync_mark, n + tail);
    c->out.len = c->sync_mark;
    char reason[160];
    snprintf(reason, sizeof reason,
             "the journal's fsync failed: %s (the mutations waiting on "
             "it were undone)",
             strerror(err));
    rpd_reply_undone(core, copy, n, c->sync_mark, &c->outcomes, &c->out, reason);
    rp_jw_raw(&c->out, copy + n, tail);
    free(copy);
    c->outcomes.n = 0;
}

static void conn_sync_done(rpd_conn *c, int err)
{
    if (!c->sync_wait)
        return;
    c->sync_wait = false;
    if (uv_is_closing(&c->h.handle))
        return;
    if (err)
        answer_undone(c, err);
    flush(c);
    if (uv_is_closing(&c->h.handle))
        return;
    /* Its next lines run when the loop comes round (server.c's idle
     * handle), after this iteration's group is done. */
    conn_yield(c);
}

static void conn_resume(rpd_conn *c)
{
    c->yielded = false;
    if (uv_is_closing(&c->h.handle))
        return;
    process_lines(c);
    if (uv_is_closing(&c->h.handle))
        return;
    if (!c->paused && !c->yielded && !c->eof && !conn_closing(c))
        start_reading(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    rpd_conn *c = h->data;
    size_t avail = 0;
    char *p = rpd_framer_space(&c->in, RPD_READ_CHUNK, &avail);
    account_input(c);
    *buf = uv_buf_init(p, p ? (unsigned)(avail > 0x7fffffff ? 0x7fffffff : avail) : 0);
}

/* Sends a -32004 error line for a connection-level limit and closes once it
 * is written. */
static void refuse(rpd_conn *c, rpd_limit_id limit, size_t max, const char *what)
{
    rpd_error e;
    memset(&e, 0, sizeof e);
    rpd_error_limit(&e, limit, max, what);
    rpd_reply_error_line(&c->srv->core, &c->out, &e);
    close_after_replies(c);
    if (c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    flush(c);
    close_if_done(c);
}

/* Refuses a client whose incomplete request line would take the input
 * buffered by all clients past max_input_bytes.  A connection with little
 * buffered is never refused, so many small clients keep working. */
static bool over_input_limit(rpd_conn *c)
{
    rpd_server *srv = c->srv;
    rpd_core *core = &srv->core;
    if (srv->input_bytes <= core->limits.max_input_bytes ||
        rpd_framer_pending(&c->in) <= RPD_KEEP_INPUT_BYTES)
        return false;
    rpd_log(RPD_LOG_WARN,
            "request bytes buffered by all clients over %zu; closing a client "
            "with %zu bytes of an incomplete line",
            core->limits.max_input_bytes, rpd_framer_pending(&c->in));
    /* Its input is dropped now, not when the close completes. */
    rpd_framer_free(&c->in);
    account_input(c);
    refuse(c, RPD_LIMIT_max_input_bytes, core->limits.max_input_bytes,
           "the server holds too many incomplete requests; closing the connection");
    return true;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    rpd_conn *c = s->data;
    if (nread > 0) {
        rpd_framer_commit(&c->in, (size_t)nread);
        c->last_read_ms = uv_now(c->srv->loop);
        process_lines(c);
        if (!uv_is_closing(&c->h.handle) && !conn_closing(c))
            over_input_limit(c);
        return;
    }
    if (nread == 0)
        return; /* EAGAIN */
    uv_read_stop(s);
    c->reading = false;
    if (nread == UV_EOF) {
        c->eof = true;
        process_lines(c);
        return;
    }
    if (nread != UV_ECONNRESET)
        rpd_log(RPD_LOG_DEBUG, "read failed: %s", uv_strerror((int)nread));
    conn_close(c);
}

static void start_reading(rpd_conn *c)
{
    if (c->reading || c->state != RPD_CONN_OPEN || uv_is_closing(&c->h.handle))
        return;
    int rc = uv_read_start(&c->h.stream, on_alloc, on_read);
    if (rc < 0) {
        conn_close(c);
        return;
    }
    c->reading = true;
}

static void conn_finish(rpd_conn *c)
{
    if (uv_is_closing(&c->h.handle))
        return;
    if (c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    /* Lines already received but not yet processed (held back by
     * backpressure or a time slice) are answered, in slices as usual, so
     * that the grace timer can still end a long drain: queries run, and
     * with core->shutting_down set mutations get -32006.  Then the
     * connection closes (process_lines, once its input is used up). */
    if (c->state == RPD_CONN_OPEN)
        c->state = RPD_CONN_DRAINING;
    if (!c->paused && !c->yielded)
        process_lines(c);
}

static void on_close(uv_handle_t *h)
{
    rpd_conn *c = h->data;
    rpd_server *srv = c->srv;
    /* Watches end here, not in rpd_conn_close: the watch code may be walking
     * its watchers when a write fails and closes a connection. */
    rpd_watch_session_end(srv->core.watch, &c->session);
    watch_unpend(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    rpd_framer_free(&c->in);
    account_input(c);
    rpd_core_freed(&srv->core, c->out.cap); /* whatever its size: the connection is gone */
    rp_jw_free(&c->out);
    free(c->outcomes.v);
    free(c->session.repl_id); /* a proposal's reply now has no one to go to */
    batch_free(c);
    if (c->wait_line)
        end_wait(c);
    srv->core.stats.conn_current--;
    if (c->session.is_tcp)
        srv->core.stats.conn_tcp--;
    else
        srv->core.stats.conn_unix--;
    if (rpd_log_enabled(RPD_LOG_DEBUG)) {
        char fields[160];
        snprintf(fields, sizeof fields,
                 "\"connection\":%llu,\"transport\":\"%s\",\"open\":%llu,\"seconds\":%.3f",
                 (unsigned long long)c->number, c->transport,
                 (unsigned long long)srv->core.stats.conn_current,
                 (double)(uv_now(srv->loop) - c->connected_ms) / 1e3);
        rpd_log_event(RPD_LOG_DEBUG, "connection.close", fields, "client disconnected (%llu open)",
                      (unsigned long long)srv->core.stats.conn_current);
    }
    if (c->job) {
        c->state = RPD_CONN_GONE; /* the job's completion frees it */
        job_client_gone(c->job);  /* long work (a plan) stops early */
    } else
        free(c);
    rpd_server_conn_closed(srv);
}

/* A connection accepted on `listener`, or (listener NULL) the daemon's end
 * fd of a WebSocket bridge, a TCP client by its rules (http.c). */
static void conn_open(rpd_server *srv, uv_stream_t *listener, int fd, bool is_tcp)
{
    rpd_core *core = &srv->core;
    rpd_conn *c = calloc(1, sizeof *c);
    if (!c) {
        rpd_log(RPD_LOG_ERROR, "out of memory accepting a connection");
        if (!listener)
            close(fd);
        return;
    }
    c->srv = srv;
    c->transport = !listener ? "ws" : is_tcp ? "tcp" : "unix";
    c->session.is_tcp = is_tcp;
    c->session.owner = c;
    /* A connection that must auth first gets the small pre-auth line limit,
     * so an unauthenticated client cannot make the server buffer 16 MiB. */
    rpd_framer_init(&c->in, rpd_session_locked(core, &c->session)
                                ? core->limits.max_request_bytes_before_auth
                                : core->limits.max_request_bytes);
    rp_jw_init(&c->out);
    int rc = is_tcp && listener ? uv_tcp_init(srv->loop, &c->h.tcp)
                                : uv_pipe_init(srv->loop, &c->h.pipe, 0);
    if (rc < 0) {
        rpd_framer_free(&c->in);
        free(c);
        if (!listener)
            close(fd);
        return;
    }
    c->h.handle.data = c;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    core->stats.conn_current++;
    uint64_t *open = is_tcp ? &core->stats.conn_tcp : &core->stats.conn_unix;
    (*open)++;
    c->connected_ms = c->last_line_ms = c->last_read_ms = uv_now(srv->loop);
    if (listener ? uv_accept(listener, &c->h.stream) < 0 : uv_pipe_open(&c->h.pipe, fd) < 0) {
        if (!listener)
            close(fd);
        conn_close(c);
        return;
    }
    c->number = ++core->stats.conn_total;
    if (is_tcp && listener)
        uv_tcp_nodelay(&c->h.tcp, 1);
    if (rpd_log_enabled(RPD_LOG_DEBUG)) {
        char fields[160];
        snprintf(fields, sizeof fields, "\"connection\":%llu,\"transport\":\"%s\",\"open\":%llu",
                 (unsigned long long)c->number, c->transport,
                 (unsigned long long)core->stats.conn_current);
        rpd_log_event(RPD_LOG_DEBUG, "connection.open", fields, "%s client connected (%llu open)",
                      c->transport, (unsigned long long)core->stats.conn_current);
    }

    /* TCP and Unix clients have separate limits, so that remote clients
     * cannot take every slot and lock out local ones. */
    size_t max = is_tcp ? core->limits.max_tcp_connections : core->limits.max_unix_connections;
    if (*open > max) {
        core->stats.conn_rejected++;
        refuse(c, is_tcp ? RPD_LIMIT_max_tcp_connections : RPD_LIMIT_max_unix_connections, max,
               is_tcp ? "too many TCP connections" : "too many Unix socket connections");
        return;
    }
    if (srv->stopping) {
        conn_finish(c);
        return;
    }
    start_reading(c);
}

void rpd_conn_accept(rpd_server *srv, uv_stream_t *listener, bool is_tcp)
{
    conn_open(srv, listener, -1, is_tcp);
}

void rpd_conn_adopt_ws(rpd_server *srv, int fd)
{
    conn_open(srv, NULL, fd, true);
}

/* Closes TCP connections past their timeouts: idle_timeout_s without a
 * complete request line (which also ends a client that trickles bytes
 * without ever finishing a line), and auth_timeout_s without a successful
 * auth where one is required.  Called from the sweep timer. */
static void check_timeouts(rpd_conn *c, uint64_t now)
{
    rpd_core *core = &c->srv->core;
    if (!c->session.is_tcp || conn_closing(c) || uv_is_closing(&c->h.handle))
        return;
    if (core->limits.auth_timeout_s && rpd_session_locked(core, &c->session) &&
        now - c->connected_ms >= core->limits.auth_timeout_s * 1000) {
        rpd_log(RPD_LOG_INFO, "tcp client did not authenticate within %zu s; closing it",
                core->limits.auth_timeout_s);
        refuse(c, RPD_LIMIT_auth_timeout_s, core->limits.auth_timeout_s,
               "no successful auth in time; closing the connection");
        return;
    }
    /* A connection waiting for its replies to drain is not idle, nor one
     * that holds watches (it is there to listen). */
    if (core->limits.idle_timeout_s && backlog(c) == 0 && !c->session.watches &&
        now - c->last_line_ms >= core->limits.idle_timeout_s * 1000) {
        rpd_log(RPD_LOG_DEBUG, "tcp client idle for %zu s; closing it",
                core->limits.idle_timeout_s);
        refuse(c, RPD_LIMIT_idle_timeout_s, core->limits.idle_timeout_s,
               "no complete request in time; closing the connection");
    }
}

void rpd_conn_sweep(rpd_server *srv)
{
    uint64_t now = uv_now(srv->loop);
    rpd_conn *next;
    for (rpd_conn *c = srv->conns; c; c = next) {
        next = c->next; /* closing does not free c before the close callback */
        if (c->state == RPD_CONN_LINGERING && now - c->linger_since >= RPD_LINGER_MS)
            conn_close(c);
        else
            check_timeouts(c, now);
    }
}

/* ---- queries on worker threads --------------------------------------------- */

/* A query line running on a worker against a snapshot of the store. */
typedef struct rpd_job {
    uv_work_t work; /* first: the callbacks get this pointer */
    rpd_conn *conn;
    rpd_core core; /* the worker's copy: snapshot store, own counters */
    rpd_session session;
    char *line;
    size_t len;
    rp_jw out; /* the reply line */
    /* A line that holds a request of the event loop: parsed here, run
     * there (its tree lives in the worker's detached arena chunks). */
    bool for_loop;
    rpd_parsed parsed;
    rpd_arena_chunks *chunks;
    atomic_int gone; /* its connection has closed (core.client_gone) */
} rpd_job;

static void job_client_gone(rpd_job *j)
{
    atomic_store(&j->gone, 1);
}

/* Parses the line; runs it here when it holds queries only, else keeps
 * the parse for the event loop (rpc.h: rpd_line_wants_worker). */
static void job_run(uv_work_t *work)
{
    rpd_thread_yield_to_loop();
    rpd_job *j = (rpd_job *)work;
    j->for_loop =
        rpd_process_line_or_keep(&j->core, &j->session, j->line, j->len, &j->out, &j->parsed);
    if (j->for_loop)
        j->chunks = rpd_arena_detach(); /* the kept tree lives in them */
    else
        rpd_arena_free_thread();
}

static void job_done(uv_work_t *work, int status)
{
    rpd_job *j = (rpd_job *)work;
    rpd_conn *c = j->conn;
    rpd_server *srv = c->srv;
    srv->jobs--;
    rpd_stats_add(&srv->core.stats, &j->core.stats);
    rp_store_free(j->core.store); /* may free versions mutations replaced */
    c->job = NULL;
    if (c->state == RPD_CONN_GONE) {
        free(c);
    } else if (!uv_is_closing(&c->h.handle)) {
        if (status < 0 || rp_jw_failed(&j->out)) {
            rpd_log(RPD_LOG_ERROR, "a query on a worker could not finish; closing its connection");
            conn_close(c);
        } else if (j->for_loop) {
            /* A mutation, or a batch that holds one: it runs here, with the
             * event loop's budget, as if it had never left. */
            run_line_here(c, j->line, j->len, &j->parsed);
        } else if (c->out.len == 0) {
            rp_jw t = c->out; /* take the reply's buffer: no copy of a large reply */
            c->out = j->out;
            j->out = t;
        } else {
            rp_jw_raw(&c->out, j->out.buf, j->out.len);
        }
        if (!uv_is_closing(&c->h.handle))
            account_output(c); /* the reply was built off the books; may close c */
        if (!uv_is_closing(&c->h.handle)) {
            process_lines(c);
            if (!uv_is_closing(&c->h.handle) && !c->paused && !c->yielded && !c->eof &&
                !conn_closing(c) && !c->job)
                start_reading(c);
        }
    }
    rpd_parsed_free(&j->parsed); /* when it did not run */
    rpd_arena_chunks_free(j->chunks);
    free(j->line);
    freed_output(srv, j->out.cap); /* a large reply's buffer, or the one it replaced */
    rp_jw_free(&j->out);
    free(j);
    rpd_server_conn_closed(srv); /* a shutdown may have waited for it */
}

/* Hands the line to a worker with a snapshot of the store taken now.
 * False when out of memory. */
static bool start_job(rpd_conn *c, const char *line, size_t len)
{
    rpd_server *srv = c->srv;
    rpd_job *j = calloc(1, sizeof *j);
    if (!j)
        return false;
    j->line = malloc(len ? len : 1);
    rp_store *snap = rp_store_snapshot(srv->core.store);
    if (!j->line || !snap) {
        free(j->line);
        free(j);
        rp_store_free(snap);
        return false;
    }
    memcpy(j->line, line, len);
    j->len = len;
    j->conn = c;
    j->core = srv->core;
    j->core.worker = true;
    atomic_init(&j->gone, 0);
    j->core.client_gone = &j->gone;
    uv_os_fd_t fd;
    j->core.client_fd = uv_fileno(&c->h.handle, &fd) == 0 ? (int)fd : -1;
    j->core.store = snap;
    j->core.watch = NULL;
    memset(&j->core.stats, 0, sizeof j->core.stats);
    j->session = c->session;
    j->session.watches = NULL;
    rp_jw_init(&j->out);
    if (uv_queue_work(srv->loop, &j->work, job_run, job_done) < 0) {
        rp_store_free(snap);
        free(j->line);
        free(j);
        return false;
    }
    srv->jobs++;
    c->job = j;
    return true;
}

/* ---- tree rebuilds on a worker (scene.h: rp_store_rebuild_take) ------------- */

typedef struct rpd_rebuild_job {
    uv_work_t work; /* first: the callbacks get this pointer */
    rpd_server *srv;
    rp_rebuild *rb;
} rpd_rebuild_job;

static void rebuild_run(uv_work_t *work)
{
    rp_rebuild_run(((rpd_rebuild_job *)work)->rb);
}

static void rebuild_done(uv_work_t *work, int status)
{
    (void)status; /* never cancelled; a build that did not run is dropped */
    rpd_rebuild_job *j = (rpd_rebuild_job *)work;
    rpd_server *srv = j->srv;
    srv->rebuilding = false;
    if (rp_store_rebuild_finish(srv->core.store, j->rb))
        srv->core.stats.rebuilds_installed++;
    else
        srv->core.stats.rebuilds_dropped++;
    free(j);
    rpd_server_maintain(srv);    /* the scene may want another try */
    rpd_server_conn_closed(srv); /* a shutdown may have waited for it */
}

void rpd_server_maintain(rpd_server *srv)
{
    rpd_server_snapshot_maybe(srv);
    if (srv->rebuilding || srv->threads == 0 || srv->stopping)
        return;
    rp_rebuild *rb = rp_store_rebuild_take(srv->core.store);
    if (!rb)
        return;
    rpd_rebuild_job *j = calloc(1, sizeof *j);
    if (j) {
        j->srv = srv;
        j->rb = rb;
        if (uv_queue_work(srv->loop, &j->work, rebuild_run, rebuild_done) == 0) {
            srv->rebuilding = true;
            return;
        }
        free(j);
    }
    /* No worker to be had: dropped, as if the scene had changed. */
    rp_store_rebuild_finish(srv->core.store, rb);
    srv->core.stats.rebuilds_dropped++;
}

/* ---- watch notifications (watch.h) ------------------------------------------ */

static void on_watch_timer(uv_timer_t *t)
{
    rpd_server *srv = t->data;
    uint64_t now = rpd_now_ns();
    while (srv->watch_pending) {
        rpd_conn *c = srv->watch_pending;
        srv->watch_pending = c->watch_next;
        c->watch_pending = false;
        c->watch_flushed_ns = now;
        flush(c);
    }
}

/* Takes a closing connection off the timer's list. */
static void watch_unpend(rpd_conn *c)
{
    if (!c->watch_pending)
        return;
    for (rpd_conn **p = &c->srv->watch_pending; *p; p = &(*p)->watch_next)
        if (*p == c) {
            *p = c->watch_next;
            break;
        }
    c->watch_pending = false;
}

static void watch_send(rpd_session *s, const char *bytes, size_t len)
{
    rpd_conn *c = s->owner;
    if (uv_is_closing(&c->h.handle) || c->state == RPD_CONN_LINGERING)
        return;
    rp_jw_raw(&c->out, bytes, len);
    /* Notifications may wait for the batching timer: they count now.
     * Closing the largest holders here is safe while the watch code walks
     * its watchers: a close only takes effect in its callback. */
    account_output(c);
}

/* Writes a watcher's notifications now, unless it was written to within
 * RPD_WATCH_BATCH_NS: then the timer writes whatever has piled up by then
 * in one go.  A quiet scene's watchers hear at once; a busy one's get a
 * write per period. */
static void watch_commit(rpd_session *s)
{
    rpd_conn *c = s->owner;
    rpd_server *srv = c->srv;
    if (c->watch_pending || uv_is_closing(&c->h.handle))
        return;
    uint64_t now = srv->watch_now_ns; /* read before the flush or drain that commits */
    if (now - c->watch_flushed_ns >= RPD_WATCH_BATCH_NS) {
        c->watch_flushed_ns = now;
        flush(c);
        return;
    }
    c->watch_pending = true;
    c->watch_next = srv->watch_pending;
    if (!srv->watch_pending)
        uv_timer_start(&srv->watch_timer, on_watch_timer, RPD_WATCH_BATCH_MS, 0);
    srv->watch_pending = c;
}

static size_t watch_backlog(const rpd_session *s)
{
    return backlog(s->owner);
}

void rpd_conn_watch_io(rpd_server *srv)
{
    static const rpd_watch_io io = {watch_send, watch_commit, watch_backlog};
    rpd_watch_set_io(srv->core.watch, &io);
    uv_timer_init(srv->loop, &srv->watch_timer);
    srv->watch_timer.data = srv;
}

void rpd_conn_watch_close(rpd_server *srv)
{
    if (!uv_is_closing((uv_handle_t *)&srv->watch_timer))
        uv_close((uv_handle_t *)&srv->watch_timer, NULL);
}

/* ---- the loop's view of all connections (conn.h) ------------------------------- */

void rpd_conns_close(rpd_server *srv)
{
    for (rpd_conn *c = srv->conns; c; c = c->next)
        conn_close(c); /* not freed before its close callback */
}

void rpd_conns_finish(rpd_server *srv)
{
    rpd_conn *next;
    for (rpd_conn *c = srv->conns; c; c = next) {
        next = c->next; /* finishing may close (not free) c */
        conn_finish(c);
    }
}

bool rpd_conns_resume(rpd_server *srv)
{
    bool any = false;
    rpd_conn *next;
    for (rpd_conn *c = srv->conns; c; c = next) {
        next = c->next;
        if (c->yielded) {
            conn_resume(c);
            any |= c->yielded;
        }
    }
    return any;
}

/* ---- --nats: the stream applied --------------------------------------------------- */

/* Most events taken per loop turn (and at most RPD_SLICE_NS of them):
 * the rest wait for the next one. */
#define REPLICA_DRAIN_MAX 1024

static rpd_conn *waiting_for(rpd_server *srv, uint64_t token)
{
    if (!token)
        return NULL;
    for (rpd_conn *c = srv->conns; c; c = c->next)
        if (c->session.repl_token == token)
            return c;
    return NULL;
}

/* The connection's proposal is answered: its next lines may run. */
static void proposal_done(rpd_conn *c)
{
    free(c->session.repl_id);
    c->session.repl_id = NULL;
    c->session.repl_token = 0;
    if (!uv_is_closing(&c->h.handle))
        conn_yield(c); /* the resume handle runs it, after this drain */
}

bool rpd_conns_replica_drain(rpd_server *srv)
{
    rpd_core *core = &srv->core;
    if (!core->replica)
        return true;
    rpd_replica_event e;
    /* Like a connection's lines, at most a time slice per loop turn: a
     * replica far behind (large mutations, many of them) lets the other
     * clients in between. */
    uint64_t slice_end = rpd_now_coarse_ns() + RPD_SLICE_NS;
    for (int n = 0; n < REPLICA_DRAIN_MAX && (n == 0 || rpd_now_coarse_ns() < slice_end); n++) {
        if (!rpd_replica_next(core->replica, &e)) {
            rpd_server_flush_watchers(srv);
            rpd_conns_wake_waiters(srv);
            rpd_server_replica_publish_maybe(srv);
            return true;
        }
        if (e.kind == RPD_REPLICA_LOST) {
            rpd_log(RPD_LOG_ERROR,
                    "replication: %s; stopping: started again, this replica "
                    "loads the published snapshot",
                    e.reason);
            exit(1);
        }
        rpd_conn *c = waiting_for(srv, e.token);
        bool answer = c && c->session.repl_id && !uv_is_closing(&c->h.handle);
        char why[RP_CODEC_REASON_MAX];
        /* In a batch, the reply joins its array (batch_add). */
        rp_jw scratch;
        rp_jw_init(&scratch);
        rp_jw *dst = answer && c->batch ? &scratch : answer ? &c->out : NULL;
        if (e.kind == RPD_REPLICA_MESSAGE) {
            if (e.seq <= core->applied) {
                rpd_log(RPD_LOG_WARN, "replication: message %llu again (applied %llu); skipped",
                        (unsigned long long)e.seq, (unsigned long long)core->applied);
            } else if (!rpd_apply_message(core, e.seq, e.method, e.params, e.len,
                                          answer ? c->session.repl_id : NULL, dst, why,
                                          sizeof why)) {
                rpd_log(RPD_LOG_DEBUG, "replication: message %llu changed nothing: %s",
                        (unsigned long long)e.seq, why);
            }
            rpd_arena_reset();
            rpd_server_maintain(srv); /* a mutation may have asked for a tree rebuild */
        } else if (answer) {
            rpd_reply_proposal_failed(core, dst, c->session.repl_id, e.conflict, e.reason);
        }
        if (answer && c->batch)
            batch_add(c->batch, &scratch);
        rp_jw_free(&scratch);
        if (c)
            proposal_done(c);
        rpd_replica_event_free(&e);
    }
    rpd_server_flush_watchers(srv);
    rpd_conns_wake_waiters(srv);
    return false;
}

void rpd_conns_sync_done(rpd_server *srv, uint64_t epoch)
{
    rpd_durable *d = srv->core.durable;
    rpd_conn *next;
    for (rpd_conn *c = srv->conns; c; c = next) {
        next = c->next;
        if (c->sync_wait && c->sync_last < epoch)
            conn_sync_done(c, rpd_durable_group_result(d, c->sync_epoch, c->sync_last));
    }
}
