/*
 * The blocking reposed client (include/repose/client.h).
 *
 * A client owns one non-blocking socket, an input buffer of received bytes
 * not yet returned as replies, and a queue of the ids it sent and has not
 * yet seen replies to.  Every call has a deadline; waiting is done with
 * poll().  While a request waits for room in the socket's send buffer the
 * client also reads, so a long pipeline never deadlocks against the server,
 * which stops reading a client whose replies pile up.
 *
 * Replies are validated with cJSON; the result (and an error's data) is
 * handed back as the exact bytes the server wrote, cut out of the line, so
 * numbers keep the server's shortest round-trip formatting.
 */
#define _POSIX_C_SOURCE 200809L
#include "repose/client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* BSDs: SO_NOSIGPIPE is set on the socket instead */
#endif

/* Bytes read from the socket per recv(). */
#define READ_CHUNK 65536

struct rp_client {
    int fd;                       /* -1 once closed */
    int timeout_ms;               /* <= 0: none */
    uint64_t next_id;             /* the id of the next request */
    uint64_t *pending;            /* ring of ids awaiting replies */
    size_t pending_head, pending_count, pending_cap;
    char *in;                     /* received bytes in[in_start..in_len) */
    size_t in_start, in_len, in_cap;
    bool eof;                     /* the server closed its side */
    rp_client_error_kind broken;  /* non-OK once the stream is unusable */
};

/* ---- errors ------------------------------------------------------------------- */

void rp_client_error_free(rp_client_error *err)
{
    if (!err)
        return;
    free(err->data);
    err->data = NULL;
    err->kind = RP_CLIENT_OK;
    err->code = 0;
    err->message[0] = '\0';
}

const char *rp_client_error_kind_name(rp_client_error_kind kind)
{
    switch (kind) {
    case RP_CLIENT_OK: return "ok";
    case RP_CLIENT_CONNECT: return "connect";
    case RP_CLIENT_TIMEOUT: return "timeout";
    case RP_CLIENT_CLOSED: return "closed";
    case RP_CLIENT_PROTOCOL: return "protocol";
    case RP_CLIENT_RPC: return "rpc";
    case RP_CLIENT_IO: return "io";
    case RP_CLIENT_NOMEM: return "nomem";
    case RP_CLIENT_ARG: return "arg";
    }
    return "unknown";
}

/* Fills *err (if any) and returns kind, so failures read `return fail(...)`. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static rp_client_error_kind fail(rp_client_error *err, rp_client_error_kind kind, int code,
                                 const char *fmt, ...)
{
    if (err) {
        free(err->data);
        err->data = NULL;
        err->kind = kind;
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return kind;
}

/* Marks the stream unusable after a failure that leaves it out of step,
 * closing the socket; returns kind. */
static rp_client_error_kind breaks(rp_client *c, rp_client_error_kind kind)
{
    if (kind == RP_CLIENT_TIMEOUT || kind == RP_CLIENT_CLOSED || kind == RP_CLIENT_PROTOCOL ||
        kind == RP_CLIENT_IO || kind == RP_CLIENT_NOMEM) {
        c->broken = kind;
        if (c->fd >= 0) {
            close(c->fd);
            c->fd = -1;
        }
    }
    return kind;
}

/* Checks that c can be used; RP_CLIENT_CLOSED after an earlier failure. */
static rp_client_error_kind usable(const rp_client *c, rp_client_error *err)
{
    if (!c)
        return fail(err, RP_CLIENT_ARG, 0, "client is NULL");
    if (c->broken != RP_CLIENT_OK || c->fd < 0)
        return fail(err, RP_CLIENT_CLOSED, 0,
                    "connection closed after an earlier %s error; reconnect",
                    rp_client_error_kind_name(c->broken));
    return RP_CLIENT_OK;
}

/* ---- time ----------------------------------------------------------------------- */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A deadline for timeout_ms from now; -1 for none. */
static long long deadline_after(int timeout_ms)
{
    return timeout_ms > 0 ? now_ms() + timeout_ms : -1;
}

/* The poll() timeout until deadline: -1 for none, else >= 0. */
static int poll_left(long long deadline)
{
    if (deadline < 0)
        return -1;
    long long l = deadline - now_ms();
    if (l < 0)
        return 0;
    return l > 1000000000 ? 1000000000 : (int)l;
}

/* ---- connecting ------------------------------------------------------------------- */

static rp_client *client_new(int fd, int timeout_ms)
{
    rp_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = fd;
    c->timeout_ms = timeout_ms;
    c->next_id = 1;
    return c;
}

/* Non-blocking connect of a new socket to sa, waiting until deadline.  Returns
 * the socket, or -1 with *err filled (CONNECT, TIMEOUT or IO). */
static int connect_sockaddr(int family, const struct sockaddr *sa, socklen_t len,
                            long long deadline, const char *what, rp_client_error *err)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        fail(err, RP_CLIENT_IO, errno, "socket: %s", strerror(errno));
        return -1;
    }
#ifdef SO_NOSIGPIPE
    int one_nosig = 1;
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one_nosig, sizeof one_nosig);
#endif
    int r;
    do {
        r = connect(fd, sa, len);
    } while (r != 0 && errno == EINTR);
    if (r != 0 && (errno == EINPROGRESS || errno == EAGAIN)) {
        /* TCP reports progress; a Unix socket whose backlog is full says EAGAIN
         * and does not complete by itself, but poll() tells when to retry. */
        bool unix_retry = errno == EAGAIN;
        for (;;) {
            struct pollfd p = {fd, POLLOUT, 0};
            int n = poll(&p, 1, poll_left(deadline));
            if (n < 0 && errno == EINTR)
                continue;
            if (n == 0) {
                close(fd);
                fail(err, RP_CLIENT_TIMEOUT, 0, "connect to %s: timed out", what);
                return -1;
            }
            if (n < 0) {
                r = -1;
                break;
            }
            if (unix_retry) {
                r = connect(fd, sa, len);
                if (r != 0 && errno == EAGAIN)
                    continue;
                if (r != 0 && errno == EISCONN)
                    r = 0;
                break;
            }
            int so = 0;
            socklen_t sl = sizeof so;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) != 0)
                so = errno;
            r = so ? -1 : 0;
            errno = so;
            break;
        }
    }
    if (r != 0) {
        int e = errno;
        close(fd);
        bool refused = e == ECONNREFUSED || e == ENOENT || e == ENOTDIR || e == EHOSTUNREACH ||
                       e == ENETUNREACH || e == EADDRNOTAVAIL || e == EACCES;
        fail(err, refused ? RP_CLIENT_CONNECT : RP_CLIENT_IO, e, "connect to %s: %s", what,
             strerror(e));
        if (e == ETIMEDOUT)
            fail(err, RP_CLIENT_TIMEOUT, e, "connect to %s: %s", what, strerror(e));
        return -1;
    }
    return fd;
}

rp_client *rp_client_connect_unix(const char *path, int timeout_ms, rp_client_error *err)
{
    rp_client_error_free(err);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (!path || !*path || strlen(path) >= sizeof sa.sun_path) {
        fail(err, RP_CLIENT_ARG, 0, "Unix socket path is %s",
             !path || !*path ? "empty" : "too long");
        return NULL;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    char what[sizeof sa.sun_path + 8];
    snprintf(what, sizeof what, "unix:%s", path);
    int fd = connect_sockaddr(AF_UNIX, (const struct sockaddr *)&sa, sizeof sa,
                              deadline_after(timeout_ms), what, err);
    if (fd < 0)
        return NULL;
    rp_client *c = client_new(fd, timeout_ms);
    if (!c) {
        close(fd);
        fail(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    return c;
}

rp_client *rp_client_connect_tcp(const char *host, int port, int timeout_ms,
                                 rp_client_error *err)
{
    rp_client_error_free(err);
    if (!host || !*host || port <= 0 || port > 65535) {
        fail(err, RP_CLIENT_ARG, 0, "bad TCP address (host %s, port %d)", host ? host : "NULL",
             port);
        return NULL;
    }
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints, *list = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int g = getaddrinfo(host, service, &hints, &list);
    if (g != 0) {
        fail(err, RP_CLIENT_CONNECT, 0, "resolve %s: %s", host, gai_strerror(g));
        return NULL;
    }
    char what[300];
    snprintf(what, sizeof what, "%s:%d", host, port);
    int fd = -1;
    for (struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next)
        fd = connect_sockaddr(ai->ai_family, ai->ai_addr, ai->ai_addrlen,
                              deadline_after(timeout_ms), what, err);
    freeaddrinfo(list);
    if (fd < 0)
        return NULL;
    /* Requests are single small writes; do not let Nagle hold them back. */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    rp_client *c = client_new(fd, timeout_ms);
    if (!c) {
        close(fd);
        fail(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    return c;
}

void rp_client_set_timeout(rp_client *c, int timeout_ms)
{
    if (c)
        c->timeout_ms = timeout_ms;
}

void rp_client_close(rp_client *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c->pending);
    free(c->in);
    free(c);
}

size_t rp_client_pending(const rp_client *c)
{
    return c ? c->pending_count : 0;
}

/* ---- socket I/O ------------------------------------------------------------------ */

/* Reads what the socket has into the input buffer.  RP_CLIENT_OK when bytes
 * arrived or none are available yet (*got tells), RP_CLIENT_CLOSED at EOF
 * (c->eof is set), or IO/NOMEM/PROTOCOL. */
static rp_client_error_kind read_some(rp_client *c, bool *got, rp_client_error *err)
{
    *got = false;
    if (c->in_start > 0 && c->in_start == c->in_len)
        c->in_start = c->in_len = 0;
    if (c->in_cap - c->in_len < READ_CHUNK) {
        if (c->in_start > 0) {
            memmove(c->in, c->in + c->in_start, c->in_len - c->in_start);
            c->in_len -= c->in_start;
            c->in_start = 0;
        }
        if (c->in_cap - c->in_len < READ_CHUNK) {
            if (c->in_len > RP_CLIENT_MAX_REPLY_BYTES)
                return fail(err, RP_CLIENT_PROTOCOL, 0, "reply line longer than %zu bytes",
                            (size_t)RP_CLIENT_MAX_REPLY_BYTES);
            size_t cap = c->in_cap ? c->in_cap * 2 : 2 * READ_CHUNK;
            char *nb = realloc(c->in, cap);
            if (!nb)
                return fail(err, RP_CLIENT_NOMEM, 0, "out of memory");
            c->in = nb;
            c->in_cap = cap;
        }
    }
    for (;;) {
        /* One byte is kept free so that a line can be NUL-terminated in place. */
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len - 1, 0);
        if (r > 0) {
            c->in_len += (size_t)r;
            *got = true;
            return RP_CLIENT_OK;
        }
        if (r == 0) {
            c->eof = true;
            return fail(err, RP_CLIENT_CLOSED, 0, "connection closed by the server");
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return RP_CLIENT_OK;
        if (errno == ECONNRESET || errno == EPIPE)
            return fail(err, RP_CLIENT_CLOSED, errno, "connection closed by the server (%s)",
                        strerror(errno));
        return fail(err, RP_CLIENT_IO, errno, "recv: %s", strerror(errno));
    }
}

/* Writes all n bytes before deadline.  While the socket is full it reads
 * incoming replies into the buffer (the server may be waiting for us to
 * read before it reads more).  An EOF seen while reading is remembered in
 * c->eof and does not stop the write: the replies already read stay usable. */
static rp_client_error_kind write_all(rp_client *c, const char *p, size_t n, long long deadline,
                                      rp_client_error *err)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
            return fail(err, RP_CLIENT_CLOSED, errno, "connection closed by the server (%s)",
                        strerror(errno));
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return fail(err, RP_CLIENT_IO, errno, "send: %s", strerror(errno));
        struct pollfd pfd = {c->fd, (short)(POLLOUT | (c->eof ? 0 : POLLIN)), 0};
        int r = poll(&pfd, 1, poll_left(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return fail(err, RP_CLIENT_IO, errno, "poll: %s", strerror(errno));
        if (r == 0)
            return fail(err, RP_CLIENT_TIMEOUT, 0, "timed out sending a request");
        if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) && !c->eof) {
            bool got;
            rp_client_error_kind k = read_some(c, &got, err);
            if (k != RP_CLIENT_OK && k != RP_CLIENT_CLOSED)
                return k;
            /* EOF: the next send() reports EPIPE, or the replies tell. */
        }
    }
    return RP_CLIENT_OK;
}

/* Returns the next non-blank line (without "\n" and a trailing "\r"),
 * NUL-terminated in the input buffer and valid until the next read, waiting
 * until deadline.  A final line without "\n" before EOF counts as a line. */
static rp_client_error_kind next_line(rp_client *c, long long deadline, char **line, size_t *len,
                                      rp_client_error *err)
{
    size_t scanned = 0; /* bytes after in_start known to hold no "\n" */
    for (;;) {
        size_t avail = c->in_len - c->in_start;
        char *base = c->in ? c->in + c->in_start : NULL;
        char *nl = avail > scanned ? memchr(base + scanned, '\n', avail - scanned) : NULL;
        if (nl || (c->eof && avail > 0)) {
            size_t n = nl ? (size_t)(nl - base) : avail;
            c->in_start += nl ? n + 1 : n;
            if (n > 0 && base[n - 1] == '\r')
                n--;
            base[n] = '\0'; /* over the "\n", or the spare byte read_some keeps */
            bool blank = true;
            for (size_t i = 0; i < n && blank; i++)
                blank = base[i] == ' ' || base[i] == '\t';
            if (blank) {
                scanned = 0;
                continue;
            }
            *line = base;
            *len = n;
            return RP_CLIENT_OK;
        }
        if (c->eof)
            return fail(err, RP_CLIENT_CLOSED, 0, "connection closed by the server");
        scanned = avail;
        bool got;
        rp_client_error_kind k = read_some(c, &got, err);
        if (k != RP_CLIENT_OK && k != RP_CLIENT_CLOSED)
            return k;
        if (got || c->eof)
            continue;
        struct pollfd pfd = {c->fd, POLLIN, 0};
        int r = poll(&pfd, 1, poll_left(deadline));
        if (r < 0 && errno != EINTR)
            return fail(err, RP_CLIENT_IO, errno, "poll: %s", strerror(errno));
        if (r == 0)
            return fail(err, RP_CLIENT_TIMEOUT, 0, "timed out waiting for a reply");
    }
}

/* ---- JSON text helpers --------------------------------------------------------------- */

/* Appends to a growable string. */
typedef struct strbuf {
    char *p;
    size_t len, cap;
    bool oom;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(strbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* Appends s as a JSON string literal. */
static void sb_json_string(strbuf *b, const char *s)
{
    sb_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            sb_add(b, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            sb_add(b, esc, 6);
        } else {
            sb_add(b, (const char *)p, 1);
        }
    }
    sb_add(b, "\"", 1);
}

/* Appends valid JSON text s without whitespace outside strings, so that a
 * pretty-printed params text still fits on one request line. */
static void sb_minified(strbuf *b, const char *s)
{
    bool in_str = false;
    const char *run = s;
    for (const char *p = s; *p; p++) {
        if (in_str) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_str = false;
        } else if (*p == '"') {
            in_str = true;
        } else if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            sb_add(b, run, (size_t)(p - run));
            run = p + 1;
        }
    }
    sb_add(b, run, strlen(run));
}

/* Skips one JSON value of already validated text starting at p (no leading
 * whitespace expected but tolerated); returns the byte after it. */
static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static const char *skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1])
            p++;
    return *p ? p + 1 : p;
}

static const char *skip_value(const char *p)
{
    p = skip_ws(p);
    if (*p == '"')
        return skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; *p; p++) {
            if (*p == '"') {
                p = skip_string(p) - 1;
            } else if (*p == '{' || *p == '[') {
                depth++;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0)
                    return p + 1;
            }
        }
        return p;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
           *p != '\r' && *p != '\n')
        p++;
    return p;
}

/* In the validated JSON object text obj, finds the raw text of member `key`
 * (a key without escapes); malloc'ed copy, or NULL (absent or no memory). */
static char *raw_member(const char *obj, const char *key)
{
    size_t klen = strlen(key);
    const char *p = skip_ws(obj);
    if (*p != '{')
        return NULL;
    p = skip_ws(p + 1);
    while (*p == '"') {
        const char *k = p + 1;
        const char *kend = skip_string(p);
        bool match = (size_t)(kend - 1 - k) == klen && memcmp(k, key, klen) == 0;
        p = skip_ws(kend);
        if (*p != ':')
            return NULL;
        const char *v = skip_ws(p + 1);
        const char *vend = skip_value(v);
        if (match) {
            size_t n = (size_t)(vend - v);
            char *out = malloc(n + 1);
            if (out) {
                memcpy(out, v, n);
                out[n] = '\0';
            }
            return out;
        }
        p = skip_ws(vend);
        if (*p != ',')
            return NULL;
        p = skip_ws(p + 1);
    }
    return NULL;
}

/* ---- requests and replies -------------------------------------------------------------- */

static bool pending_push(rp_client *c, uint64_t id)
{
    if (c->pending_count == c->pending_cap) {
        size_t cap = c->pending_cap ? c->pending_cap * 2 : 16;
        uint64_t *np = malloc(cap * sizeof *np);
        if (!np)
            return false;
        for (size_t i = 0; i < c->pending_count; i++)
            np[i] = c->pending[(c->pending_head + i) % c->pending_cap];
        free(c->pending);
        c->pending = np;
        c->pending_cap = cap;
        c->pending_head = 0;
    }
    c->pending[(c->pending_head + c->pending_count) % c->pending_cap] = id;
    c->pending_count++;
    return true;
}

static uint64_t pending_pop(rp_client *c)
{
    uint64_t id = c->pending[c->pending_head];
    c->pending_head = (c->pending_head + 1) % c->pending_cap;
    c->pending_count--;
    return id;
}

/* Builds the request line for method/params_json with the given id. */
static rp_client_error_kind build_request(strbuf *b, const char *method, const char *params_json,
                                          uint64_t id, rp_client_error *err)
{
    if (!method || !*method)
        return fail(err, RP_CLIENT_ARG, 0, "method is %s", method ? "empty" : "NULL");
    if (params_json) {
        cJSON *check = cJSON_ParseWithOpts(params_json, NULL, 1);
        if (!check)
            return fail(err, RP_CLIENT_ARG, 0, "params are not valid JSON (near byte %zu)",
                        (size_t)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - params_json : 0));
        cJSON_Delete(check);
    }
    char idtext[32];
    snprintf(idtext, sizeof idtext, "%llu", (unsigned long long)id);
    sb_puts(b, "{\"jsonrpc\":\"2.0\",\"id\":");
    sb_puts(b, idtext);
    sb_puts(b, ",\"method\":");
    sb_json_string(b, method);
    if (params_json) {
        sb_puts(b, ",\"params\":");
        sb_minified(b, params_json);
    }
    sb_puts(b, "}\n");
    if (b->oom)
        return fail(err, RP_CLIENT_NOMEM, 0, "out of memory");
    return RP_CLIENT_OK;
}

/* Sends a request and queues its id; the shared part of send and call. */
static rp_client_error_kind send_request(rp_client *c, const char *method,
                                         const char *params_json, uint64_t *id_out,
                                         long long deadline, rp_client_error *err)
{
    strbuf b = {NULL, 0, 0, false};
    uint64_t id = c->next_id;
    rp_client_error_kind k = build_request(&b, method, params_json, id, err);
    if (k == RP_CLIENT_OK && !pending_push(c, id))
        k = fail(err, RP_CLIENT_NOMEM, 0, "out of memory");
    if (k != RP_CLIENT_OK) {
        free(b.p);
        return k; /* nothing sent: the stream is still in step */
    }
    c->next_id++;
    k = write_all(c, b.p, b.len, deadline, err);
    free(b.p);
    if (k != RP_CLIENT_OK)
        return breaks(c, k);
    if (id_out)
        *id_out = id;
    return RP_CLIENT_OK;
}

/* Reads the reply to the oldest pending request.  On success (OK or RPC) the
 * id is popped and *id set; *reply receives the parsed reply when reply is
 * not NULL (caller deletes), *result_raw the raw result text when not NULL. */
static rp_client_error_kind receive_reply(rp_client *c, long long deadline, uint64_t *id,
                                          cJSON **reply, char **result_raw,
                                          rp_client_error *err)
{
    char *line;
    size_t len;
    rp_client_error_kind k = next_line(c, deadline, &line, &len, err);
    if (k != RP_CLIENT_OK)
        return breaks(c, k);
    cJSON *r = cJSON_ParseWithLengthOpts(line, len + 1, NULL, 1); /* len + 1: the NUL counts */
    if (!r) {
        return breaks(c, fail(err, RP_CLIENT_PROTOCOL, 0, "reply is not JSON: %.80s%s", line,
                              len > 80 ? "..." : ""));
    }
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(r, "jsonrpc");
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(r, "id");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(r, "result");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
    const char *bad = NULL;
    if (!cJSON_IsObject(r))
        bad = "reply is not a JSON object";
    else if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0)
        bad = "reply lacks \"jsonrpc\":\"2.0\"";
    else if (!rid)
        bad = "reply has no id";
    else if ((res != NULL) == (e != NULL))
        bad = "reply must have exactly one of result and error";
    else if (e && (!cJSON_IsObject(e) ||
                   !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "code")) ||
                   !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message"))))
        bad = "reply error lacks a numeric code or a string message";
    uint64_t want = c->pending[c->pending_head];
    /* The server answers with id null when it could not read the request (a
     * parse error, an overlong line); that is the reply to our request. */
    bool null_id_error = e && cJSON_IsNull(rid);
    if (!bad && !null_id_error && (!cJSON_IsNumber(rid) || rid->valuedouble != (double)want))
        bad = "reply id does not match the request id";
    if (bad) {
        cJSON_Delete(r);
        return breaks(c, fail(err, RP_CLIENT_PROTOCOL, 0, "%s: %.80s%s", bad, line,
                              len > 80 ? "..." : ""));
    }
    pending_pop(c);
    if (id)
        *id = want;
    if (e) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        fail(err, RP_CLIENT_RPC, (int)code->valuedouble, "%s", msg->valuestring);
        if (err && cJSON_GetObjectItemCaseSensitive(e, "data")) {
            char *etext = raw_member(line, "error");
            err->data = etext ? raw_member(etext, "data") : NULL;
            free(etext);
        }
        cJSON_Delete(r);
        return RP_CLIENT_RPC;
    }
    if (result_raw) {
        *result_raw = raw_member(line, "result");
        if (!*result_raw) {
            cJSON_Delete(r);
            return fail(err, RP_CLIENT_NOMEM, 0, "out of memory");
        }
    }
    if (reply)
        *reply = r;
    else
        cJSON_Delete(r);
    return RP_CLIENT_OK;
}

/* ---- the public calls ------------------------------------------------------------------ */

rp_client_error_kind rp_client_send(rp_client *c, const char *method, const char *params_json,
                                    uint64_t *id_out, rp_client_error *err)
{
    rp_client_error_free(err);
    rp_client_error_kind k = usable(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    return send_request(c, method, params_json, id_out, deadline_after(c->timeout_ms), err);
}

rp_client_error_kind rp_client_recv(rp_client *c, uint64_t *id, char **result_json,
                                    rp_client_error *err)
{
    rp_client_error_free(err);
    if (result_json)
        *result_json = NULL;
    rp_client_error_kind k = usable(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (c->pending_count == 0)
        return fail(err, RP_CLIENT_ARG, 0, "no reply outstanding");
    return receive_reply(c, deadline_after(c->timeout_ms), id, NULL, result_json, err);
}

rp_client_error_kind rp_client_call(rp_client *c, const char *method, const char *params_json,
                                    char **result_json, rp_client_error *err)
{
    rp_client_error_free(err);
    if (result_json)
        *result_json = NULL;
    rp_client_error_kind k = usable(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (c->pending_count > 0)
        return fail(err, RP_CLIENT_ARG, 0, "%zu pipelined replies outstanding; recv them first",
                    c->pending_count);
    long long deadline = deadline_after(c->timeout_ms);
    k = send_request(c, method, params_json, NULL, deadline, err);
    if (k != RP_CLIENT_OK)
        return k;
    return receive_reply(c, deadline, NULL, NULL, result_json, err);
}

rp_client_error_kind rp_client_call_cjson(rp_client *c, const char *method, const cJSON *params,
                                          cJSON **result, rp_client_error *err)
{
    rp_client_error_free(err);
    if (result)
        *result = NULL;
    rp_client_error_kind k = usable(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (c->pending_count > 0)
        return fail(err, RP_CLIENT_ARG, 0, "%zu pipelined replies outstanding; recv them first",
                    c->pending_count);
    char *text = NULL;
    if (params) {
        text = cJSON_PrintUnformatted(params);
        if (!text)
            return fail(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    long long deadline = deadline_after(c->timeout_ms);
    k = send_request(c, method, text, NULL, deadline, err);
    cJSON_free(text);
    if (k != RP_CLIENT_OK)
        return k;
    cJSON *reply = NULL;
    k = receive_reply(c, deadline, NULL, &reply, NULL, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (result)
        *result = cJSON_DetachItemFromObjectCaseSensitive(reply, "result");
    cJSON_Delete(reply);
    return RP_CLIENT_OK;
}

rp_client_error_kind rp_client_auth(rp_client *c, const char *token, rp_client_error *err)
{
    rp_client_error_free(err);
    if (!token)
        return fail(err, RP_CLIENT_ARG, 0, "token is NULL");
    strbuf b = {NULL, 0, 0, false};
    sb_puts(&b, "{\"token\":");
    sb_json_string(&b, token);
    sb_puts(&b, "}");
    if (b.oom) {
        free(b.p);
        return fail(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    char *result = NULL;
    rp_client_error_kind k = rp_client_call(c, "auth", b.p, &result, err);
    /* The token is a secret: do not leave it in freed heap memory. */
    volatile char *v = b.p;
    for (size_t i = 0; i < b.len; i++)
        v[i] = 0;
    free(b.p);
    if (k != RP_CLIENT_OK)
        return k;
    cJSON *r = cJSON_Parse(result);
    bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"));
    cJSON_Delete(r);
    free(result);
    if (!ok)
        return fail(err, RP_CLIENT_PROTOCOL, 0, "auth reply lacks \"ok\":true");
    return RP_CLIENT_OK;
}

/* ---- raw lines ------------------------------------------------------------------------- */

rp_client_error_kind rp_client_send_line(rp_client *c, const char *line, size_t len,
                                         rp_client_error *err)
{
    rp_client_error_free(err);
    rp_client_error_kind k = usable(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (!line && len > 0)
        return fail(err, RP_CLIENT_ARG, 0, "line is NULL");
    long long deadline = deadline_after(c->timeout_ms);
    k = write_all(c, line, len, deadline, err);
    if (k == RP_CLIENT_OK)
        k = write_all(c, "\n", 1, deadline, err);
    return k == RP_CLIENT_OK ? k : breaks(c, k);
}

rp_client_error_kind rp_client_recv_line(rp_client *c, char **line, size_t *len,
                                         rp_client_error *err)
{
    rp_client_error_free(err);
    if (line)
        *line = NULL;
    if (!line)
        return fail(err, RP_CLIENT_ARG, 0, "line is NULL");
    /* Lines already received stay readable after the server closed. */
    if (!c || c->broken != RP_CLIENT_OK || (c->fd < 0 && c->in_len == c->in_start))
        return usable(c, err);
    char *l;
    size_t n;
    rp_client_error_kind k = next_line(c, deadline_after(c->timeout_ms), &l, &n, err);
    if (k == RP_CLIENT_CLOSED && c->eof) {
        /* The clean end of a raw session: report it, keep the state. */
        return k;
    }
    if (k != RP_CLIENT_OK)
        return breaks(c, k);
    *line = malloc(n + 1);
    if (!*line)
        return fail(err, RP_CLIENT_NOMEM, 0, "out of memory");
    memcpy(*line, l, n + 1);
    if (len)
        *len = n;
    return RP_CLIENT_OK;
}

rp_client_error_kind rp_client_shutdown_write(rp_client *c, rp_client_error *err)
{
    rp_client_error_free(err);
    rp_client_error_kind k = usable(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (shutdown(c->fd, SHUT_WR) != 0 && errno != ENOTCONN)
        return fail(err, RP_CLIENT_IO, errno, "shutdown: %s", strerror(errno));
    return RP_CLIENT_OK;
}
