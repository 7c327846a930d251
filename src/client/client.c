/* SPDX-License-Identifier: MIT */
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
#include "client_int.h"
#include "send_some.h"

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
    case RP_CLIENT_OK:
        return "ok";
    case RP_CLIENT_CONNECT:
        return "connect";
    case RP_CLIENT_TIMEOUT:
        return "timeout";
    case RP_CLIENT_CLOSED:
        return "closed";
    case RP_CLIENT_PROTOCOL:
        return "protocol";
    case RP_CLIENT_RPC:
        return "rpc";
    case RP_CLIENT_IO:
        return "io";
    case RP_CLIENT_NOMEM:
        return "nomem";
    case RP_CLIENT_ARG:
        return "arg";
    }
    return "unknown";
}

size_t rp_client_utf8_cut_(const char *s, size_t n)
{
    size_t i = n, back = 0;
    while (i > 0 && back < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return n;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    /* A lead byte whose sequence the cut left incomplete goes too. */
    return want > 1 && back + 1 < want ? i - 1 : n;
}

/* Fills *err (if any) and returns kind, so failures read `return rp_client_fail_(...)`.
 * A message longer than err->message is cut between UTF-8 characters. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
rp_client_error_kind
rp_client_fail_(rp_client_error *err, rp_client_error_kind kind, int code, const char *fmt, ...)
{
    if (err) {
        free(err->data);
        err->data = NULL;
        err->kind = kind;
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        if (n < 0)
            err->message[0] = '\0';
        else if ((size_t)n >= sizeof err->message)
            err->message[rp_client_utf8_cut_(err->message, sizeof err->message - 1)] = '\0';
    }
    return kind;
}

/* Marks the stream unusable after a failure that leaves it out of step,
 * closing the socket; returns kind. */
rp_client_error_kind rp_client_breaks_(rp_client *c, rp_client_error_kind kind)
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
rp_client_error_kind rp_client_usable_(const rp_client *c, rp_client_error *err)
{
    if (!c)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "client is NULL");
    if (c->broken != RP_CLIENT_OK || c->fd < 0)
        return rp_client_fail_(err, RP_CLIENT_CLOSED, 0,
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

long long rp_client_now_ms_(void)
{
    return now_ms();
}

/* A deadline for timeout_ms from now; -1 for none. */
long long rp_client_deadline_after_(int timeout_ms)
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
        rp_client_fail_(err, RP_CLIENT_IO, errno, "socket: %s", strerror(errno));
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
                rp_client_fail_(err, RP_CLIENT_TIMEOUT, 0, "connect to %s: timed out", what);
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
        rp_client_fail_(err, refused ? RP_CLIENT_CONNECT : RP_CLIENT_IO, e, "connect to %s: %s",
                        what, strerror(e));
        if (e == ETIMEDOUT)
            rp_client_fail_(err, RP_CLIENT_TIMEOUT, e, "connect to %s: %s", what, strerror(e));
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
        rp_client_fail_(err, RP_CLIENT_ARG, 0, "Unix socket path is %s",
                        !path || !*path ? "empty" : "too long");
        return NULL;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    char what[sizeof sa.sun_path + 8];
    snprintf(what, sizeof what, "unix:%s", path);
    int fd = connect_sockaddr(AF_UNIX, (const struct sockaddr *)&sa, sizeof sa,
                              rp_client_deadline_after_(timeout_ms), what, err);
    if (fd < 0)
        return NULL;
    rp_client *c = client_new(fd, timeout_ms);
    if (!c) {
        close(fd);
        rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    return c;
}

const char *rp_client_default_unix_path(void)
{
    const char *env = getenv("REPOSE_SOCKET");
    return env && *env ? env : RP_CLIENT_DEFAULT_UNIX_PATH;
}

rp_client *rp_client_connect_default(int timeout_ms, rp_client_error *err)
{
    return rp_client_connect_unix(rp_client_default_unix_path(), timeout_ms, err);
}

rp_client *rp_client_connect_tcp(const char *host, int port, int timeout_ms, rp_client_error *err)
{
    rp_client_error_free(err);
    if (!host || !*host || port <= 0 || port > 65535) {
        rp_client_fail_(err, RP_CLIENT_ARG, 0, "bad TCP address (host %s, port %d)",
                        host ? host : "NULL", port);
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
        rp_client_fail_(err, RP_CLIENT_CONNECT, 0, "resolve %s: %s", host, gai_strerror(g));
        return NULL;
    }
    char what[300];
    snprintf(what, sizeof what, "%s:%d", host, port);
    int fd = -1;
    for (struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next)
        fd = connect_sockaddr(ai->ai_family, ai->ai_addr, ai->ai_addrlen,
                              rp_client_deadline_after_(timeout_ms), what, err);
    freeaddrinfo(list);
    if (fd < 0)
        return NULL;
    /* Requests are single small writes; do not let Nagle hold them back. */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    rp_client *c = client_new(fd, timeout_ms);
    if (!c) {
        close(fd);
        rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
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
    rp_client_free_notes_(c);
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
                return rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0,
                                       "reply line longer than %zu bytes",
                                       (size_t)RP_CLIENT_MAX_REPLY_BYTES);
            size_t cap = c->in_cap ? c->in_cap * 2 : 2 * READ_CHUNK;
            char *nb = realloc(c->in, cap);
            if (!nb)
                return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
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
            return rp_client_fail_(err, RP_CLIENT_CLOSED, 0, "connection closed by the server");
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return RP_CLIENT_OK;
        if (errno == ECONNRESET || errno == EPIPE)
            return rp_client_fail_(err, RP_CLIENT_CLOSED, errno,
                                   "connection closed by the server (%s)", strerror(errno));
        return rp_client_fail_(err, RP_CLIENT_IO, errno, "recv: %s", strerror(errno));
    }
}

/* Writes all n bytes before deadline.  While the socket is full it reads
 * incoming replies into the buffer (the server may be waiting for us to
 * read before it reads more).  An EOF seen while reading is remembered in
 * c->eof and does not stop the write: the replies already read stay usable. */
rp_client_error_kind rp_client_write_all_(rp_client *c, const char *p, size_t n, long long deadline,
                                          rp_client_error *err)
{
    for (;;) {
        int e = rp_send_some(c->fd, &p, &n);
        if (e == 0)
            return RP_CLIENT_OK;
        if (e == EPIPE || e == ECONNRESET)
            return rp_client_fail_(err, RP_CLIENT_CLOSED, e, "connection closed by the server (%s)",
                                   strerror(e));
        if (e != EAGAIN)
            return rp_client_fail_(err, RP_CLIENT_IO, e, "send: %s", strerror(e));
        struct pollfd pfd = {c->fd, (short)(POLLOUT | (c->eof ? 0 : POLLIN)), 0};
        int r = poll(&pfd, 1, poll_left(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return rp_client_fail_(err, RP_CLIENT_IO, errno, "poll: %s", strerror(errno));
        if (r == 0)
            return rp_client_fail_(err, RP_CLIENT_TIMEOUT, 0, "timed out sending a request");
        if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) && !c->eof) {
            bool got;
            rp_client_error_kind k = read_some(c, &got, err);
            if (k != RP_CLIENT_OK && k != RP_CLIENT_CLOSED)
                return k;
            /* EOF: the next send() reports EPIPE, or the replies tell. */
        }
    }
}

/* Returns the next non-blank line (without "\n" and a trailing "\r"),
 * NUL-terminated in the input buffer and valid until the next read, waiting
 * until deadline.  A final line without "\n" before EOF counts as a line. */
rp_client_error_kind rp_client_next_line_(rp_client *c, long long deadline, char **line,
                                          size_t *len, rp_client_error *err)
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
            return rp_client_fail_(err, RP_CLIENT_CLOSED, 0, "connection closed by the server");
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
            return rp_client_fail_(err, RP_CLIENT_IO, errno, "poll: %s", strerror(errno));
        if (r == 0)
            return rp_client_fail_(err, RP_CLIENT_TIMEOUT, 0, "timed out waiting for a reply");
    }
}
