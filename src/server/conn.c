/*
 * Client connections: read bytes into the framer, run complete lines through
 * the JSON-RPC layer, and write the replies.  One code path serves TCP and
 * Unix streams.
 *
 * Replies of all the lines found in one read are coalesced into one write.
 * Backpressure: when a client's unsent replies pass write_pause_bytes, line
 * processing and reading stop until the writes drain below half of that; a
 * client whose backlog passes write_kill_bytes is disconnected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"

typedef struct write_req {
    uv_write_t req;
    rpd_conn *conn;
    char *buf;
    size_t len;
} write_req;

static void on_close(uv_handle_t *h);
static void start_reading(rpd_conn *c);
static void process_lines(rpd_conn *c);

static size_t backlog(const rpd_conn *c)
{
    return c->inflight + c->out.len;
}

/* Closes now, dropping unsent replies. */
void rpd_conn_close(rpd_conn *c)
{
    if (uv_is_closing(&c->h.handle))
        return;
    if (c->reading)
        uv_read_stop(&c->h.stream);
    c->reading = false;
    uv_close(&c->h.handle, on_close);
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
        rpd_conn_close(s->data); /* EOF or error: the peer is done */
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    rpd_conn *c = req->data;
    if (uv_is_closing(&c->h.handle))
        return;
    if (status < 0 || uv_read_start(&c->h.stream, on_alloc_discard, on_read_discard) < 0) {
        rpd_conn_close(c);
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
    if (c->lingering || uv_is_closing(&c->h.handle))
        return;
    if (c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    if (c->eof) {
        rpd_conn_close(c);
        return;
    }
    c->lingering = true;
    c->linger_since = uv_now(c->srv->loop);
    c->shutdown_req.data = c;
    if (uv_shutdown(&c->shutdown_req, &c->h.stream, on_shutdown) < 0)
        rpd_conn_close(c);
}

void rpd_conn_sweep(rpd_server *srv)
{
    uint64_t now = uv_now(srv->loop);
    for (rpd_conn *c = srv->conns; c; c = c->next)
        if (c->lingering && now - c->linger_since >= RPD_LINGER_MS)
            rpd_conn_close(c);
}

static void close_if_done(rpd_conn *c)
{
    if ((c->closing || c->eof) && backlog(c) == 0 && !c->paused)
        linger_close(c);
}

static void on_write(uv_write_t *req, int status)
{
    write_req *wr = (write_req *)req;
    rpd_conn *c = wr->conn;
    c->inflight -= wr->len;
    free(wr->buf);
    free(wr);
    if (status < 0) {
        if (status != UV_ECANCELED)
            rpd_log(RPD_LOG_DEBUG, "write failed: %s", uv_strerror(status));
        rpd_conn_close(c);
        return;
    }
    if (uv_is_closing(&c->h.handle))
        return;
    if (c->paused && backlog(c) < c->srv->core.limits.write_pause_bytes / 2) {
        c->paused = false;
        process_lines(c); /* may pause again, flushes, may close */
        if (uv_is_closing(&c->h.handle))
            return;
        if (!c->paused && !c->eof && !c->closing)
            start_reading(c);
        return;
    }
    close_if_done(c);
}

/* Empties the output buffer, keeping its allocation for the next replies
 * unless a large reply made it big. */
static void release_output(rpd_conn *c)
{
    if (c->out.cap > RPD_KEEP_OUTPUT_BYTES) {
        rp_jw_free(&c->out);
        rp_jw_init(&c->out);
    } else {
        rp_jw_reset(&c->out);
    }
}

/* Sends the buffered replies.  When nothing is queued in libuv, try to
 * write them right away (uv_try_write): usually the socket takes everything,
 * and the output buffer is kept for the next replies, with no write request
 * and no callback.  Whatever is left moves into a write request (the buffer
 * itself when nothing was written, no copy). */
static void flush(rpd_conn *c)
{
    if (c->out.len == 0 || uv_is_closing(&c->h.handle))
        return;
    if (c->out.oom) {
        rpd_log(RPD_LOG_ERROR, "out of memory building replies; closing a connection");
        rpd_conn_close(c);
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
            rpd_conn_close(c);
            return;
        }
        if (done == c->out.len) {
            release_output(c);
            return;
        }
    }
    write_req *wr = malloc(sizeof *wr);
    if (!wr) {
        rpd_conn_close(c);
        return;
    }
    wr->conn = c;
    if (done == 0) {
        wr->buf = c->out.buf;
        wr->len = c->out.len;
        rp_jw_init(&c->out);
    } else {
        wr->len = c->out.len - done;
        wr->buf = malloc(wr->len);
        if (!wr->buf) {
            free(wr);
            rpd_conn_close(c);
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
        rpd_conn_close(c);
    }
}

/* Runs complete buffered lines until the input is used up or backpressure
 * says stop, writing the replies as it goes. */
static void process_lines(rpd_conn *c)
{
    rpd_core *core = &c->srv->core;
    for (;;) {
        while (!c->closing) {
            if (backlog(c) >= core->limits.write_pause_bytes) {
                c->paused = true;
                break;
            }
            const char *line;
            size_t len;
            rpd_frame_status st = rpd_framer_next(&c->in, &line, &len);
            if (st == RPD_FRAME_LINE) {
                rpd_process_line(core, &c->session, line, len, &c->out);
                /* After auth, the full request size applies. */
                if (c->in.max_line < core->limits.max_request_bytes &&
                    !rpd_session_locked(core, &c->session))
                    c->in.max_line = core->limits.max_request_bytes;
                continue;
            }
            if (st == RPD_FRAME_TOO_LONG) {
                bool before_auth = c->in.max_line < core->limits.max_request_bytes;
                rpd_reply_line_too_long(core, &c->out,
                                        before_auth ? "max_request_bytes_before_auth"
                                                    : "max_request_bytes",
                                        c->in.max_line);
                rpd_log(RPD_LOG_DEBUG, "request line over %zu bytes; closing the connection",
                        core->limits.max_request_bytes);
                c->closing = true;
                break;
            }
            /* RPD_FRAME_NEED_MORE: at end of stream, the unterminated tail
             * is the last request. */
            if (c->eof && rpd_framer_rest(&c->in, &line, &len))
                rpd_process_line(core, &c->session, line, len, &c->out);
            break;
        }
        /* Disconnect a client that lets replies pile up.  Only bytes libuv
         * could not write yet count: one large reply to a client that reads
         * is fine. */
        if (c->inflight > core->limits.write_kill_bytes) {
            core->stats.limit_write_buffer++;
            rpd_log(RPD_LOG_WARN,
                    "client not reading (%zu bytes of replies pending); disconnecting",
                    c->inflight);
            rpd_conn_close(c);
            return;
        }
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
    if ((c->paused || c->closing) && c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    close_if_done(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    rpd_conn *c = h->data;
    size_t avail = 0;
    char *p = rpd_framer_space(&c->in, RPD_READ_CHUNK, &avail);
    *buf = uv_buf_init(p, p ? (unsigned)(avail > 0x7fffffff ? 0x7fffffff : avail) : 0);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    rpd_conn *c = s->data;
    if (nread > 0) {
        rpd_framer_commit(&c->in, (size_t)nread);
        process_lines(c);
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
    rpd_conn_close(c);
}

static void start_reading(rpd_conn *c)
{
    if (c->reading || uv_is_closing(&c->h.handle))
        return;
    int rc = uv_read_start(&c->h.stream, on_alloc, on_read);
    if (rc < 0) {
        rpd_conn_close(c);
        return;
    }
    c->reading = true;
}

void rpd_conn_finish(rpd_conn *c)
{
    if (uv_is_closing(&c->h.handle))
        return;
    if (c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    /* Lines already received but not yet processed (held back by
     * backpressure) are answered: with core->shutting_down set, each gets
     * -32006. */
    const char *line;
    size_t len;
    while (rpd_framer_next(&c->in, &line, &len) == RPD_FRAME_LINE)
        rpd_process_line(&c->srv->core, &c->session, line, len, &c->out);
    c->closing = true;
    c->paused = false;
    flush(c);
    close_if_done(c);
}

static void on_close(uv_handle_t *h)
{
    rpd_conn *c = h->data;
    rpd_server *srv = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    rpd_framer_free(&c->in);
    rp_jw_free(&c->out);
    free(c);
    srv->core.stats.conn_current--;
    rpd_log(RPD_LOG_DEBUG, "client disconnected (%llu open)",
            (unsigned long long)srv->core.stats.conn_current);
    rpd_server_conn_closed(srv);
}

void rpd_conn_accept(rpd_server *srv, uv_stream_t *listener, bool is_tcp)
{
    rpd_conn *c = calloc(1, sizeof *c);
    if (!c) {
        rpd_log(RPD_LOG_ERROR, "out of memory accepting a connection");
        return;
    }
    c->srv = srv;
    c->session.is_tcp = is_tcp;
    /* A connection that must auth first gets the small pre-auth line limit,
     * so an unauthenticated client cannot make the server buffer 16 MiB. */
    rpd_framer_init(&c->in, rpd_session_locked(&srv->core, &c->session)
                                ? RPD_PREAUTH_MAX_REQUEST_BYTES
                                : srv->core.limits.max_request_bytes);
    rp_jw_init(&c->out);
    int rc = is_tcp ? uv_tcp_init(srv->loop, &c->h.tcp) : uv_pipe_init(srv->loop, &c->h.pipe, 0);
    if (rc < 0) {
        rpd_framer_free(&c->in);
        free(c);
        return;
    }
    c->h.handle.data = c;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->core.stats.conn_current++;
    if (uv_accept(listener, &c->h.stream) < 0) {
        rpd_conn_close(c);
        return;
    }
    srv->core.stats.conn_total++;
    if (is_tcp)
        uv_tcp_nodelay(&c->h.tcp, 1);
    rpd_log(RPD_LOG_DEBUG, "%s client connected (%llu open)", is_tcp ? "tcp" : "unix",
            (unsigned long long)srv->core.stats.conn_current);

    if (srv->core.stats.conn_current > srv->core.limits.max_connections) {
        /* Over the limit: tell the client why, then close. */
        rpd_error e;
        memset(&e, 0, sizeof e);
        e.code = RPD_LIMIT_EXCEEDED;
        e.data = RPD_DATA_LIMIT;
        e.limit = "max_connections";
        e.max = srv->core.limits.max_connections;
        snprintf(e.message, sizeof e.message, "Limit exceeded: too many connections (max %zu)",
                 srv->core.limits.max_connections);
        srv->core.stats.conn_rejected++;
        srv->core.stats.limit_connections++;
        rpd_reply_error_line(&srv->core, &c->out, &e);
        c->closing = true;
        flush(c);
        close_if_done(c);
        return;
    }
    if (srv->stopping) {
        rpd_conn_finish(c);
        return;
    }
    start_reading(c);
}
