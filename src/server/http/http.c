/* SPDX-License-Identifier: MIT */
/*
 * The HTTP listener (http.h).  libwebsockets parses HTTP on our libuv loop
 * (its libuv event library with our loop as a foreign loop, so every
 * callback runs on the loop thread that owns the counters); this file
 * routes the requests, applies the token, and writes the answers.
 *
 * Answers are made whole when the request arrives (or are one of the
 * embedded viewer files, assets.h), then written when the socket is
 * writable, in pieces of at most CHUNK bytes.
 */
#include "http.h"

#include <arpa/inet.h>
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "assets.h"
#include "codec/codec.h"
#include "metrics.h"
#include "server/core/log.h"
#include "server/transport/addr.h"

/* Bytes handed to lws_write at once (an HTTP body piece, a WebSocket
 * message fragment). */
#define CHUNK 16384
/* Lines from the daemon held for a slow WebSocket before the bridge stops
 * reading (the daemon's own write limits then apply), and bytes written
 * to the daemon not yet taken before the WebSocket stops being read. */
#define WS_OUT_MAX (256u << 10)
#define WS_IN_QUEUE_MAX (256u << 10)
/* An HTTP connection with nothing to read or write for this long closes. */
#define IDLE_SECS 30
/* Open HTTP connections (WebSockets included) at most. */
#define MAX_CONNECTIONS 128

struct rpd_http {
    uv_loop_t *loop;
    struct lws_context *ctx;
    struct lws_context *live; /* lws writes NULL here once the context is gone */
    struct lws_vhost *vhost;
    rpd_core *core;
    rpd_http_config cfg;
    uint64_t open, total, refused;
    /* Stopping: new connections are refused while the WebSockets' bridges
     * (bridges of them) deliver their last replies; `drained` then tells
     * the server (from a timer: never inside an lws callback, since the
     * server then destroys the context). */
    bool draining;
    size_t bridges;
    uv_timer_t drained;
    bool drained_started;
};

typedef struct ws_bridge ws_bridge;

/* One HTTP connection's answer in progress, or its WebSocket's bridge. */
typedef struct answer {
    rp_jw body;
    const char *asset; /* an embedded file to send instead of body (NULL: body) */
    size_t asset_len;
    bool gzip; /* asset is the file gzip-compressed */
    size_t sent;
    bool ready; /* body initialised (between bind and drop) */
    bool done;  /* the answer has gone out: the connection is closed */
    ws_bridge *ws;
} answer;

/* A WebSocket on /ws, bridged to a JSON-RPC connection of the daemon
 * through a socket pair (the daemon's end went to cfg.adopt): each
 * message received is written as one line, each line read back is sent as
 * one text message.  Freed when both sides are done: the WebSocket gone
 * and the pipe closed. */
struct ws_bridge {
    uv_pipe_t pipe;
    rpd_http *h;
    struct lws *wsi;
    char *out; /* lines from the daemon: out[sent .. len) not sent yet */
    size_t len, cap, sent;
    /* Message bytes for the daemon: in[0 .. in_len) wait while the write
     * of `writing` bytes is in flight, so that a fragment costs its bytes
     * and no more (one write and allocation each made a client's 1-byte
     * fragments cost 200 bytes apiece). */
    char *in;
    size_t in_len, in_cap, writing;
    bool in_msg;    /* a line is going out in fragments (its end not sent yet) */
    bool reading;   /* uv_read_start is on */
    bool rx_paused; /* lws_rx_flow_control off while the pipe's queue drains */
    bool eof;       /* the daemon closed its end */
    bool closing;   /* uv_close called */
    bool pipe_done; /* its close callback ran */
    bool ws_done;   /* the WebSocket has gone */
};

static rpd_http *of(struct lws *wsi)
{
    return lws_context_user(lws_get_context(wsi));
}

/* Compares in time that depends only on the token's length. */
static bool token_ok(const rpd_core *core, const char *got, size_t got_len)
{
    unsigned char diff = (unsigned char)(got_len != core->token_len);
    for (size_t i = 0; i < core->token_len; i++) {
        unsigned char g = i < got_len ? (unsigned char)got[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)core->token[i]);
    }
    return diff == 0;
}

/* "Authorization: Bearer TOKEN" when the daemon has a token. */
static bool authorized(struct lws *wsi, const rpd_core *core)
{
    if (!core->token)
        return true;
    char h[600];
    int n = lws_hdr_copy(wsi, h, sizeof h, WSI_TOKEN_HTTP_AUTHORIZATION);
    static const char bearer[] = "Bearer ";
    if (n <= (int)sizeof bearer - 1 || strncmp(h, bearer, sizeof bearer - 1) != 0)
        return false;
    return token_ok(core, h + sizeof bearer - 1, (size_t)n - (sizeof bearer - 1));
}

/* Whether a qvalue (RFC 9110 12.4.2) is zero: "0", "0.", "0.0" ... */
static bool q_zero(const char *q)
{
    if (*q++ != '0')
        return false;
    if (*q == '.')
        for (q++; *q == '0'; q++)
            ;
    return *q == '\0' || *q == ' ' || *q == '\t' || *q == ';';
}

/* Whether the request's Accept-Encoding takes gzip (RFC 9110 12.5.3):
 * gzip or x-gzip named with a weight above 0, or else "*" so.  None, or
 * one too long to read, means no. */
static bool accepts_gzip(struct lws *wsi)
{
    char v[512];
    if (lws_hdr_copy(wsi, v, sizeof v, WSI_TOKEN_HTTP_ACCEPT_ENCODING) <= 0)
        return false;
    int gzip = -1, star = -1; /* -1 not named, 0 refused (q=0), 1 taken */
    char *save = NULL;
    for (char *e = strtok_r(v, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        e += strspn(e, " \t");
        size_t n = strcspn(e, " \t;");
        int taken = 1;
        for (const char *p = strchr(e, ';'); p; p = strchr(p, ';')) {
            p++;
            p += strspn(p, " \t");
            if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=' && q_zero(p + 2))
                taken = 0;
        }
        if ((n == 4 && strncasecmp(e, "gzip", 4) == 0) ||
            (n == 6 && strncasecmp(e, "x-gzip", 6) == 0))
            gzip = taken;
        else if (n == 1 && e[0] == '*')
            star = taken;
    }
    return gzip >= 0 ? gzip == 1 : star == 1;
}

/* Starts the answer: its headers now, its body when writable.  Non-zero
 * closes the connection. */
static int respond(struct lws *wsi, answer *a, unsigned status, const char *type)
{
    if (!a->asset && rp_jw_failed(&a->body))
        return -1;
    /* The viewer's files may be kept but are asked again each time (they
     * change with the daemon); the rest is never stored. */
    const char *cache = a->asset ? "no-cache" : "no-store";
    uint8_t buf[LWS_PRE + 1024], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;
    if (lws_add_http_common_headers(wsi, status, type, a->asset ? a->asset_len : a->body.len, &p,
                                    end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
                                     (const unsigned char *)cache, (int)strlen(cache), &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"x-content-type-options:",
                                    (const unsigned char *)"nosniff", 7, &p, end))
        return -1;
    /* A file's answer depends on Accept-Encoding (caches must know). */
    if (a->asset &&
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_VARY,
                                     (const unsigned char *)"Accept-Encoding", 15, &p, end))
        return -1;
    if (a->asset && a->gzip &&
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_ENCODING,
                                     (const unsigned char *)"gzip", 4, &p, end))
        return -1;
    /* One request a connection (see LWS_CALLBACK_HTTP_WRITEABLE). */
    if (lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION, (const unsigned char *)"close", 5,
                                     &p, end))
        return -1;
    if (status == HTTP_STATUS_UNAUTHORIZED &&
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_WWW_AUTHENTICATE,
                                     (const unsigned char *)"Bearer realm=\"reposed\"", 22, &p,
                                     end))
        return -1;
    if (lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    a->sent = 0;
    a->done = false;
    lws_callback_on_writable(wsi);
    return 0;
}

static int plain(struct lws *wsi, answer *a, unsigned status, const char *text)
{
    rp_jw_reset(&a->body);
    rp_jw_raw(&a->body, text, strlen(text));
    return respond(wsi, a, status, "text/plain; charset=utf-8");
}

static int healthz(struct lws *wsi, rpd_http *h, answer *a)
{
    char why[200] = "";
    bool ready = h->cfg.ready(h->cfg.ready_ctx, why, sizeof why);
    rp_jw_reset(&a->body);
    rp_jw_object_begin(&a->body);
    RP_JW_KEY(&a->body, "ready");
    rp_jw_bool(&a->body, ready);
    if (!ready) {
        RP_JW_KEY(&a->body, "reason");
        rp_jw_string(&a->body, why);
    }
    rp_jw_object_end(&a->body);
    rp_jw_raw(&a->body, "\n", 1);
    return respond(wsi, a, ready ? HTTP_STATUS_OK : HTTP_STATUS_SERVICE_UNAVAILABLE,
                   "application/json");
}

static int metrics(struct lws *wsi, rpd_http *h, answer *a)
{
    char why[8];
    rpd_metrics_extra x = {h->open, h->total, h->refused,
                           h->cfg.ready(h->cfg.ready_ctx, why, sizeof why), h->bridges};
    rp_jw_reset(&a->body);
    rpd_metrics_write(h->core, &x, &a->body);
    return respond(wsi, a, HTTP_STATUS_OK, "text/plain; version=0.0.4; charset=utf-8");
}

/* DNS rebinding: a page of another site whose name was made to resolve
 * to 127.0.0.1 sends that name as Host.  Unless --insecure-http, only
 * loopback names are served (a request without Host, from a tool, is). */
static bool host_ok(struct lws *wsi, const rpd_http *h)
{
    if (h->cfg.insecure || lws_hdr_total_length(wsi, WSI_TOKEN_HOST) <= 0)
        return true;
    char host[256];
    if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0)
        return false;
    if (host[0] == '[') {
        char *end = strchr(host, ']');
        if (!end)
            return false;
        *end = '\0';
        return strcmp(host + 1, "::1") == 0;
    }
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = '\0';
    if (strcasecmp(host, "localhost") == 0)
        return true;
    struct in_addr a;
    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* 405 with the methods that are served (lws_return_http_status cannot
 * add Allow); the connection then closes. */
static void not_allowed(struct lws *wsi)
{
    static const char text[] = "405 Method Not Allowed: reposed serves GET and HEAD here\n";
    uint8_t buf[LWS_PRE + 512 + sizeof text], *start = buf + LWS_PRE, *p = start,
                                              *end = buf + sizeof buf - 1;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED,
                                    "text/plain; charset=utf-8", sizeof text - 1, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_ALLOW, (const unsigned char *)"GET, HEAD",
                                     9, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION, (const unsigned char *)"close", 5,
                                     &p, end) ||
        lws_finalize_http_header(wsi, &p, end) || end - p < (ptrdiff_t)sizeof text)
        return;
    memcpy(p, text, sizeof text - 1);
    p += sizeof text - 1;
    lws_write(wsi, start, (size_t)(p - start), LWS_WRITE_HTTP_HEADERS);
}

/* A request: its path (without the query) in uri. */
static int route(struct lws *wsi, rpd_http *h, answer *a, const char *uri)
{
    bool get = lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0;
    bool head = lws_hdr_total_length(wsi, WSI_TOKEN_HEAD_URI) > 0;
    a->asset = NULL; /* the body, unless an embedded file is asked for */
    if (!host_ok(wsi, h)) {
        h->refused++;
        return plain(wsi, a, HTTP_STATUS_FORBIDDEN,
                     "403 Forbidden: Host is not a loopback name (use --insecure-http to serve "
                     "other names)\n");
    }
    if (!get && !head) {
        /* Other methods carry bodies, which lws would wait for: answered
         * at once, and the connection closed. */
        h->refused++;
        not_allowed(wsi);
        return -1;
    }
    if (strcmp(uri, "/healthz") == 0)
        return healthz(wsi, h, a);
    if (strcmp(uri, "/metrics") == 0) {
        if (!authorized(wsi, h->core)) {
            h->refused++;
            return plain(wsi, a, HTTP_STATUS_UNAUTHORIZED,
                         "401 Unauthorized: send the daemon's token as "
                         "\"Authorization: Bearer TOKEN\"\n");
        }
        return metrics(wsi, h, a);
    }
    for (size_t i = 0; i < rpd_asset_count; i++)
        if (strcmp(uri, rpd_assets[i].path) == 0) {
            /* The viewer needs no token to load: it holds no data, and
             * asks for the token before /ws gives it any. */
            rp_jw_reset(&a->body);
            a->gzip = accepts_gzip(wsi) && rpd_assets[i].gz_len < rpd_assets[i].len;
            a->asset = a->gzip ? rpd_assets[i].gz : rpd_assets[i].data;
            a->asset_len = a->gzip ? rpd_assets[i].gz_len : rpd_assets[i].len;
            return respond(wsi, a, HTTP_STATUS_OK, rpd_assets[i].type);
        }
    h->refused++;
    return plain(wsi, a, HTTP_STATUS_NOT_FOUND,
                 "404 Not Found: reposed serves the viewer at GET /, GET /metrics and GET "
                 "/healthz here\n");
}

/* ---- the WebSocket bridge ------------------------------------------------------- */

static void on_drained(uv_timer_t *t)
{
    rpd_http *h = t->data;
    if (h->cfg.drained)
        h->cfg.drained(h->cfg.drained_ctx);
}

static void bridge_free(ws_bridge *b)
{
    rpd_http *h = b->h;
    free(b->out);
    free(b->in);
    free(b);
    if (--h->bridges == 0 && h->draining && h->drained_started)
        uv_timer_start(&h->drained, on_drained, 0, 0);
}

static void bridge_closed(uv_handle_t *hd)
{
    ws_bridge *b = hd->data;
    b->pipe_done = true;
    if (b->ws_done)
        bridge_free(b);
}

static void bridge_close(ws_bridge *b)
{
    if (b->closing)
        return;
    b->closing = true;
    uv_close((uv_handle_t *)&b->pipe, bridge_closed);
}

/* The WebSocket has gone: the daemon sees its end close. */
static void bridge_drop_ws(ws_bridge *b)
{
    b->wsi = NULL;
    b->ws_done = true;
    if (b->pipe_done)
        bridge_free(b);
    else
        bridge_close(b);
}

static void bridge_alloc(uv_handle_t *hd, size_t want, uv_buf_t *buf)
{
    ws_bridge *b = hd->data;
    (void)want;
    if (b->cap - b->len < 65536) {
        if (b->sent > 0) { /* drop what was sent */
            memmove(b->out, b->out + b->sent, b->len - b->sent);
            b->len -= b->sent;
            b->sent = 0;
        }
        if (b->cap - b->len < 65536) {
            size_t cap = b->cap ? b->cap * 2 : 131072;
            char *p = realloc(b->out, cap);
            if (!p) {
                buf->base = NULL;
                buf->len = 0;
                return;
            }
            b->out = p;
            b->cap = cap;
        }
    }
    buf->base = b->out + b->len;
    buf->len = b->cap - b->len;
}

static void bridge_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    ws_bridge *b = st->data;
    (void)buf;
    if (n > 0) {
        b->len += (size_t)n;
        if (b->len - b->sent > WS_OUT_MAX && b->reading) {
            uv_read_stop(st); /* the daemon's write limits take it from here */
            b->reading = false;
        }
    } else if (n < 0) {
        /* The daemon closed the connection (or out of memory): what is
         * held goes out, then the WebSocket closes. */
        uv_read_stop(st);
        b->reading = false;
        b->eof = true;
    }
    if (b->wsi)
        lws_callback_on_writable(b->wsi);
}

typedef struct bridge_write {
    uv_write_t req;
    ws_bridge *b;
    char *data;
} bridge_write;

static void bridge_wrote(uv_write_t *req, int status);

/* Hands what waits in `in` to the pipe, when no write is in flight. */
static void bridge_flush(ws_bridge *b)
{
    if (b->writing || b->in_len == 0 || b->eof || b->closing)
        return;
    bridge_write *w = malloc(sizeof *w);
    if (!w)
        return; /* (tried again when more comes) */
    w->b = b;
    w->data = b->in;
    uv_buf_t buf = uv_buf_init(w->data, (unsigned)b->in_len);
    if (uv_write(&w->req, (uv_stream_t *)&b->pipe, &buf, 1, bridge_wrote) < 0) {
        free(w);
        return; /* the read side sees the end */
    }
    b->writing = b->in_len;
    b->in = NULL;
    b->in_len = b->in_cap = 0;
}

static void bridge_wrote(uv_write_t *req, int status)
{
    bridge_write *w = (bridge_write *)req;
    ws_bridge *b = w->b;
    (void)status; /* a failed write: the read side sees the end */
    free(w->data);
    free(w);
    b->writing = 0;
    bridge_flush(b);
    if (b->rx_paused && b->wsi && !b->closing && b->writing + b->in_len < WS_IN_QUEUE_MAX / 2) {
        b->rx_paused = false;
        lws_rx_flow_control(b->wsi, 1);
    }
}

/* Message bytes as they arrive, straight to the daemon (so that its line
 * limits, the small one before auth included, apply as they would on a
 * socket); `end` closes the line.  Line breaks in a message are
 * whitespace to JSON, so they become spaces.  After the daemon has closed
 * its end, what comes is dropped.  Past WS_IN_QUEUE_MAX bytes not yet
 * written, the WebSocket is not read until half have gone. */
static void bridge_send(ws_bridge *b, const char *data, size_t n, bool end)
{
    if (b->eof || b->closing || (n == 0 && !end))
        return;
    size_t need = b->in_len + n + 1;
    if (need > b->in_cap) {
        size_t cap = b->in_cap ? b->in_cap : 4096;
        while (cap < need)
            cap *= 2;
        char *in = realloc(b->in, cap);
        if (!in)
            return; /* (the line is cut short: the daemon answers a parse error) */
        b->in = in;
        b->in_cap = cap;
    }
    char *dst = b->in + b->in_len;
    for (size_t i = 0; i < n; i++)
        dst[i] = data[i] == '\n' || data[i] == '\r' ? ' ' : data[i];
    if (end)
        dst[n] = '\n';
    b->in_len += n + end;
    bridge_flush(b);
    if (!b->rx_paused && b->writing + b->in_len > WS_IN_QUEUE_MAX) {
        b->rx_paused = true;
        lws_rx_flow_control(b->wsi, 0);
    }
}

/* Opens the bridge for a WebSocket just established. */
static ws_bridge *bridge_open(rpd_http *h, struct lws *wsi)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
        return NULL;
    ws_bridge *b = calloc(1, sizeof *b);
    if (!b || uv_pipe_init(h->loop, &b->pipe, 0) < 0) {
        free(b);
        close(fds[0]);
        close(fds[1]);
        return NULL;
    }
    b->pipe.data = b;
    b->h = h;
    b->wsi = wsi;
    h->bridges++;
    if (uv_pipe_open(&b->pipe, fds[1]) < 0) {
        close(fds[0]);
        close(fds[1]);
        bridge_drop_ws(b);
        bridge_close(b); /* (freed once the pipe has closed) */
        return NULL;
    }
    if (uv_read_start((uv_stream_t *)&b->pipe, bridge_alloc, bridge_read) < 0) {
        close(fds[0]);
        bridge_drop_ws(b);
        bridge_close(b);
        return NULL;
    }
    b->reading = true;
    h->cfg.adopt(h->cfg.adopt_ctx, fds[0]);
    return b;
}

/* Sends what the daemon wrote, as it comes: a line is one message, sent
 * in fragments of at most CHUNK bytes, the last one at its end, so that no
 * line needs to be whole (or fit the buffer) before it goes.  -1 closes
 * the WebSocket. */
static int bridge_writable(struct lws *wsi, ws_bridge *b)
{
    size_t avail = b->len - b->sent;
    if (avail == 0) {
        if (b->eof) {
            /* The close frame is written here, then the wsi closed: with
             * lws_close_reason and -1 alone, Debian's lws (a _DEBUG
             * build) closes the wsi a second time at once ("uv repeat
             * test") and kills it before the frame goes out (the client
             * saw 1006, not 1000).  4 is lws 4.1's LWS_WRITE_CLOSE, which
             * its header reserves for lws_close_reason; test_http_ws
             * checks that 1000 arrives. */
            uint8_t frame[LWS_PRE + 8];
            frame[LWS_PRE] = LWS_CLOSE_STATUS_NORMAL >> 8;
            frame[LWS_PRE + 1] = LWS_CLOSE_STATUS_NORMAL & 0xff;
            memcpy(frame + LWS_PRE + 2, "closed", 6);
            lws_write(wsi, frame + LWS_PRE, 8, (enum lws_write_protocol)4);
            return -1;
        }
        return 0;
    }
    const char *start = b->out + b->sent;
    size_t scan = avail < CHUNK ? avail : CHUNK;
    const char *nl = memchr(start, '\n', scan);
    size_t n = nl ? (size_t)(nl - start) : scan;
    uint8_t *buf = malloc(LWS_PRE + n + 1);
    if (!buf)
        return -1;
    memcpy(buf + LWS_PRE, start, n);
    int flags = (b->in_msg ? LWS_WRITE_CONTINUATION : LWS_WRITE_TEXT) | (nl ? 0 : LWS_WRITE_NO_FIN);
    int w = lws_write(wsi, buf + LWS_PRE, n, (enum lws_write_protocol)flags);
    free(buf);
    if (w < (int)n)
        return -1;
    b->sent += n + (nl ? 1 : 0);
    b->in_msg = !nl;
    if (!b->reading && !b->eof && !b->closing && b->len - b->sent < WS_OUT_MAX / 2 &&
        uv_read_start((uv_stream_t *)&b->pipe, bridge_alloc, bridge_read) == 0)
        b->reading = true;
    if (b->sent < b->len || b->eof)
        lws_callback_on_writable(wsi);
    return 0;
}

/* A WebSocket upgrade goes only to /ws, and from a browser only from a
 * page of this origin (a page elsewhere must not drive the daemon through
 * its visitor's browser); clients that are not browsers send no Origin. */
static bool ws_allowed(struct lws *wsi)
{
    char uri[64], origin[256], host[256];
    if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0 || strcmp(uri, "/ws") != 0)
        return false;
    if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0)
        return true;
    if (lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0 ||
        lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0)
        return false;
    const char *o = strstr(origin, "://");
    return o && strcmp(o + 3, host) == 0;
}

static int on_http(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                   size_t len)
{
    answer *a = user;
    rpd_http *h = of(wsi);
    switch (reason) {
    case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
        if (h->open >= MAX_CONNECTIONS || h->draining) {
            /* Past the cap: closed at once, so that HTTP clients cannot
             * take the descriptors the JSON-RPC ports need. */
            h->refused++;
            return -1;
        }
        /* A connection: counted until its wsi goes (marked, since lws
         * destroys other wsis too, the listener's among them). */
        lws_set_opaque_user_data(wsi, h);
        h->open++;
        h->total++;
        break;
    case LWS_CALLBACK_WSI_DESTROY:
        if (a && a->ws) { /* (when lws did not say CLOSED first) */
            bridge_drop_ws(a->ws);
            a->ws = NULL;
        }
        if (lws_get_opaque_user_data(wsi) == h) {
            lws_set_opaque_user_data(wsi, NULL);
            h->open--;
        }
        break;
    case LWS_CALLBACK_HTTP_BIND_PROTOCOL: /* around each request */
        if (a && !a->ready) {
            rp_jw_init(&a->body);
            a->ready = true;
        }
        break;
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
        if (a && a->ready) {
            rp_jw_free(&a->body);
            a->ready = false;
        }
        break;
    case LWS_CALLBACK_HTTP:
        if (!a)
            return -1;
        lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, IDLE_SECS);
        return route(wsi, h, a, (const char *)in);
    case LWS_CALLBACK_RAW_ADOPT:
    case LWS_CALLBACK_RAW_RX: {
        /* lws hands a CONNECT request over as a raw socket, with no timeout
         * (the connection was held for good): refused, and closed. */
        static const char refusal[] = "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n"
                                      "Content-Length: 0\r\nConnection: close\r\n\r\n";
        h->refused++;
        ssize_t sent =
            send(lws_get_socket_fd(wsi), refusal, sizeof refusal - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)sent; /* (a fresh socket takes it whole; if not, the close says enough) */
        return -1;
    }
    case LWS_CALLBACK_HTTP_BODY:
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        return 0; /* no path takes a body: it is read and dropped (the answer is on its way) */
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
        /* `in` is not read: lws 4.1 also calls this after it has refused
         * an upgrade it does not know and released the headers `in`
         * points into (fuzz_http found the read after free).  The
         * header is read again; none left means lws answered the
         * request already, and the connection is closed. */
        char up[16];
        if (lws_hdr_copy(wsi, up, sizeof up, WSI_TOKEN_UPGRADE) <= 0)
            return -1;
        if (strcasecmp(up, "websocket") != 0 || !ws_allowed(wsi) || !host_ok(wsi, h)) {
            h->refused++;
            lws_return_http_status(wsi, HTTP_STATUS_FORBIDDEN,
                                   "403 Forbidden: WebSocket only at /ws, from this origin");
            return 1;
        }
        return 0;
    }
    case LWS_CALLBACK_ESTABLISHED:
        if (!a || h->draining || !(a->ws = bridge_open(h, wsi)))
            return -1;
        return 0;
    case LWS_CALLBACK_RECEIVE:
        if (!a || !a->ws)
            return -1;
        if (lws_frame_is_binary(wsi)) {
            lws_close_reason(wsi, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE,
                             (unsigned char *)"text messages only", 18);
            return -1;
        }
        bridge_send(a->ws, in, len,
                    lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi));
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return a && a->ws ? bridge_writable(wsi, a->ws) : 0;
    case LWS_CALLBACK_CLOSED:
        if (a && a->ws) {
            bridge_drop_ws(a->ws);
            a->ws = NULL;
        }
        break;
    case LWS_CALLBACK_HTTP_WRITEABLE: {
        if (!a || a->done)
            return -1; /* (lws calls this once what was written has gone) */
        const char *data = a->asset ? a->asset : a->body.buf;
        size_t total = a->asset ? a->asset_len : a->body.len;
        if (lws_hdr_total_length(wsi, WSI_TOKEN_HEAD_URI) > 0)
            a->sent = total; /* HEAD: the headers only */
        size_t left = total - a->sent, n = left < CHUNK ? left : CHUNK;
        bool last = n == left;
        if (n) {
            uint8_t *buf = malloc(LWS_PRE + n);
            if (!buf)
                return -1;
            memcpy(buf + LWS_PRE, data + a->sent, n);
            int w = lws_write(wsi, buf + LWS_PRE, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP);
            free(buf);
            if (w != (int)n)
                return -1;
            a->sent += n;
        }
        if (!last) {
            lws_callback_on_writable(wsi);
            return 0;
        }
        rp_jw_reset(&a->body);
        a->asset = NULL;
        /* The connection is closed once the answer has gone, instead of
         * waiting for another request: with requests pipelined behind an
         * answer, libwebsockets 4.1 spins the event loop for good when one
         * of them has a body or closes the connection (fuzz_http; a 90-byte
         * request froze the daemon).  Closed, a connection never reads
         * past its first request. */
        a->done = true;
        lws_callback_on_writable(wsi);
        return 0;
    }
    default:
        break;
    }
    (void)len;
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols protocols[] = {
    {"http", on_http, sizeof(answer), 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* libwebsockets' own warnings and errors, as our log lines (event
 * "http"). */
static void lws_line(int level, const char *line)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    /* lws prefixes a time stamp and a level letter: "[...] E: text" */
    const char *text = strstr(line, "] ");
    text = text && (size_t)(text - line) < n ? text + 2 : line;
    rpd_log_event(level & LLL_ERR ? RPD_LOG_ERROR : RPD_LOG_WARN, "http", NULL, "http: %.*s",
                  (int)(n - (size_t)(text - line)), text);
}

bool rpd_http_start(uv_loop_t *loop, rpd_core *core, const rpd_http_config *cfg, rpd_http **out)
{
    *out = NULL;
    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof addr);
    if (rpd_addr_parse(cfg->addr, &addr) < 0) {
        rpd_log(RPD_LOG_ERROR, "--http %s: expected HOST:PORT with a numeric address", cfg->addr);
        return false;
    }
    if (!cfg->insecure && !rpd_addr_is_loopback(&addr)) {
        rpd_log(RPD_LOG_ERROR,
                "refusing to serve http on %s: only a loopback address unless --insecure-http "
                "(the viewer's page and WebSocket carry the scenes; reach it through an SSH "
                "tunnel instead)",
                cfg->addr);
        return false;
    }
    char host[64];
    int port;
    if (addr.ss_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)&addr, host, sizeof host);
        port = ntohs(((const struct sockaddr_in6 *)&addr)->sin6_port);
    } else {
        uv_ip4_name((const struct sockaddr_in *)&addr, host, sizeof host);
        port = ntohs(((const struct sockaddr_in *)&addr)->sin_port);
    }
    rpd_http *h = calloc(1, sizeof *h);
    if (!h) {
        rpd_log(RPD_LOG_ERROR, "out of memory starting http");
        return false;
    }
    h->core = core;
    h->cfg = *cfg;
    h->loop = loop;
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_line);

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    void *loops[1] = {loop};
    info.foreign_loops = loops;
    info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
    info.user = h;
    info.pcontext = &h->live;
    info.timeout_secs = IDLE_SECS;
    info.keepalive_timeout = IDLE_SECS;
    h->ctx = h->live = lws_create_context(&info);
    if (!h->ctx) {
        rpd_log(RPD_LOG_ERROR, "--http %s: libwebsockets could not start", cfg->addr);
        *out = h;
        return false;
    }
    memset(&info, 0, sizeof info);
    info.port = port; /* 0: the kernel picks one (lws_get_vhost_listen_port reads it) */
    info.iface = host;
    info.protocols = protocols;
    info.vhost_name = "reposed";
    info.options = addr.ss_family == AF_INET6
                       ? LWS_SERVER_OPTION_IPV6_V6ONLY_MODIFY | LWS_SERVER_OPTION_IPV6_V6ONLY_VALUE
                       : LWS_SERVER_OPTION_DISABLE_IPV6;
    info.timeout_secs = IDLE_SECS;
    info.keepalive_timeout = IDLE_SECS;
    h->vhost = lws_create_vhost(h->ctx, &info);
    int bound = h->vhost ? lws_get_vhost_listen_port(h->vhost) : -1;
    if (!h->vhost || bound <= 0) {
        rpd_log(RPD_LOG_ERROR, "cannot listen on http %s", cfg->addr);
        lws_context_destroy(h->ctx);
        h->ctx = NULL;
        *out = h; /* freed by rpd_http_free once the loop has closed its handles */
        return false;
    }
    char where[96], quoted[128], fields[200];
    snprintf(where, sizeof where, addr.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host, bound);
    rpd_log_json_string(where, strlen(where), quoted, sizeof quoted);
    snprintf(fields, sizeof fields, "\"transport\":\"http\",\"address\":%s", quoted);
    rpd_log_event(RPD_LOG_ALWAYS, "listening", fields, "listening on http %s", where);
    *out = h;
    return true;
}

uint64_t rpd_http_open(const rpd_http *h)
{
    return h ? h->open : 0;
}

void rpd_http_drain(rpd_http *h)
{
    if (!h || !h->ctx || h->draining)
        return; /* (no context: nothing to drain, and no timer to close) */
    h->draining = true;
    if (uv_timer_init(h->loop, &h->drained) == 0) {
        h->drained.data = h;
        h->drained_started = true;
    }
}

size_t rpd_http_bridges(const rpd_http *h)
{
    return h ? h->bridges : 0;
}

void rpd_http_stop(rpd_http *h)
{
    if (!h || !h->ctx)
        return;
    lws_context_destroy(h->ctx);
    h->ctx = NULL;
}

void rpd_http_free(rpd_http *h, uv_loop_t *loop)
{
    if (!h)
        return;
    rpd_http_stop(h);
    if (h->drained_started)
        uv_close((uv_handle_t *)&h->drained, NULL);
    if (h->live) {
        /* On a foreign loop the first destroy closes the handles; the
         * second, once the loop has run them out, frees the context. */
        lws_context_destroy(h->live);
    }
    uv_run(loop, UV_RUN_DEFAULT); /* (the timer's close too, before h goes) */
    free(h);
}
