/* SPDX-License-Identifier: MIT */
/*
 * load_bench — closed-loop load generator for line-based request/reply
 * servers (reposed, and Redis through its inline protocol).
 *
 * It opens N connections (TCP or Unix), keeps P requests in flight on each
 * (writes P lines, then sends one more line for every reply line it reads),
 * and reports throughput and latency quantiles.  It never parses replies: a
 * reply is one line ending in '\n'.  A reply whose first bytes contain
 * "error" (JSON-RPC) or that starts with '-' (Redis) is counted in errors=.
 *
 * Latency of a request is the time from the write() that sent it to the
 * read() that returned its reply line.  With P > 1 this includes the time
 * the request waits behind the P-1 others on the same connection (queueing
 * in socket buffers and in the server), so p50 ≈ P * N / throughput: it is
 * the latency a client that pipelines P deep sees, not the service time.
 * One timestamp is taken per write() and per read() (all lines in one batch
 * share it), which keeps the clock out of the hot path.
 *
 * Requests and replies are counted from the end of the warmup until the end
 * of the run; requests still in flight at the end are dropped.
 *
 * Threads (-t) each run their own epoll loop over a share of the
 * connections (connection i goes to thread i mod T).  The summary line on
 * stdout is
 *
 *   reqs/s=R, p50_us=A, p99_us=B, n=COUNT, errors=E
 *
 * and a detail line on stderr gives p99.9, max and the client's CPU use
 * (a client near 100% of its threads is the bottleneck, not the server).
 *
 * Usage: load_bench (--tcp HOST:PORT | --unix PATH) [-c N] [-p P] [-t T]
 *          [-d SECONDS | -n REQUESTS] [--warmup SECONDS]
 *          [--payload ping|redis-ping | --payload-file F] [--setup-file F]
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---- latency histogram: log-linear, 128 sub-buckets per octave (<0.8%) ---- */

#define SUB_BITS 7
#define SUB (1 << SUB_BITS)
#define NBUCKETS (64 * SUB)

typedef struct hist {
    uint64_t count[NBUCKETS];
    uint64_t n;
    uint64_t max;
} hist;

static int bucket_of(uint64_t ns)
{
    if (ns < SUB)
        return (int)ns;
    int octave = 63 - __builtin_clzll(ns); /* >= SUB_BITS */
    int sub = (int)((ns >> (octave - SUB_BITS)) & (SUB - 1));
    return (octave - SUB_BITS + 1) * SUB + sub;
}

/* Middle of bucket b, in ns. */
static double bucket_mid(int b)
{
    if (b < SUB)
        return (double)b;
    int octave = b / SUB + SUB_BITS - 1, sub = b % SUB;
    double width = (double)((uint64_t)1 << (octave - SUB_BITS));
    return ((double)(SUB + sub) + 0.5) * width;
}

static void hist_add(hist *h, uint64_t ns, uint64_t times)
{
    h->count[bucket_of(ns)] += times;
    h->n += times;
    if (ns > h->max)
        h->max = ns;
}

static void hist_merge(hist *into, const hist *from)
{
    for (int b = 0; b < NBUCKETS; b++)
        into->count[b] += from->count[b];
    into->n += from->n;
    if (from->max > into->max)
        into->max = from->max;
}

/* The q-quantile in microseconds (nearest rank). */
static double hist_quantile_us(const hist *h, double q)
{
    if (h->n == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->n);
    if (rank < 1)
        rank = 1;
    if (rank > h->n)
        rank = h->n;
    uint64_t seen = 0;
    for (int b = 0; b < NBUCKETS; b++) {
        seen += h->count[b];
        if (seen >= rank)
            return bucket_mid(b) / 1000.0;
    }
    return (double)h->max / 1000.0;
}

/* ---- configuration ---------------------------------------------------------- */

typedef struct config {
    const char *tcp; /* HOST:PORT */
    const char *unix_path;
    int conns;
    int depth;
    int threads;
    double duration;
    double warmup;
    uint64_t requests; /* 0: run for `duration` */
    char *line;        /* request line, with its '\n' */
    size_t line_len;
    const char *setup_file;
} config;

static config cfg = {.conns = 1, .depth = 1, .threads = 1, .duration = 5, .warmup = 1};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("load_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* ---- connecting --------------------------------------------------------------- */

static int connect_one(void)
{
    int fd = -1;
    if (cfg.unix_path) {
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        if (strlen(cfg.unix_path) >= sizeof sa.sun_path)
            die("unix socket path too long: %s", cfg.unix_path);
        strcpy(sa.sun_path, cfg.unix_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
            die("connect %s: %s", cfg.unix_path, strerror(errno));
        return fd;
    }
    char host[256];
    const char *colon = strrchr(cfg.tcp, ':');
    if (!colon || (size_t)(colon - cfg.tcp) >= sizeof host)
        die("--tcp wants HOST:PORT, got '%s'", cfg.tcp);
    memcpy(host, cfg.tcp, (size_t)(colon - cfg.tcp));
    host[colon - cfg.tcp] = '\0';
    struct addrinfo hints, *res, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0)
        die("resolve %s: %s", cfg.tcp, gai_strerror(rc));
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        die("connect %s: %s", cfg.tcp, strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* ---- setup: lines sent once, one at a time, each waiting for its reply ------ */

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die("setup write: %s", strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Reads one reply line; returns whether its head looks like an error. */
static bool read_reply(int fd, char *head, size_t head_cap)
{
    size_t got = 0;
    char c;
    for (;;) {
        ssize_t r = read(fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("setup: connection closed while waiting for a reply");
        if (c == '\n')
            break;
        if (got + 1 < head_cap)
            head[got++] = c;
    }
    head[got] = '\0';
    return head[0] == '-' || strstr(head, "\"error\"") != NULL;
}

static void run_setup(void)
{
    FILE *f = fopen(cfg.setup_file, "r");
    if (!f)
        die("open %s: %s", cfg.setup_file, strerror(errno));
    int fd = connect_one();
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    int lines = 0;
    while ((len = getline(&buf, &cap, f)) >= 0) {
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            len--;
        if (len == 0)
            continue;
        buf[len] = '\n';
        write_all(fd, buf, (size_t)len + 1);
        char head[512];
        if (read_reply(fd, head, sizeof head))
            die("setup line %d failed: %s", lines + 1, head);
        lines++;
    }
    free(buf);
    fclose(f);
    close(fd);
    fprintf(stderr, "load_bench: setup: %d lines ok\n", lines);
}

/* ---- the load loop -------------------------------------------------------------- */

#define HEAD_CAP 64

typedef struct conn {
    int fd;
    bool want_out;      /* EPOLLOUT registered */
    size_t out_pending; /* bytes of queued lines not yet written */
    size_t out_off;     /* offset of the next byte within the line */
    uint64_t *sent_at;  /* ring of send times, depth entries */
    int ring_head, inflight;
    char head[HEAD_CAP]; /* first bytes of the reply line being read */
    int head_len;
} conn;

typedef struct worker {
    pthread_t tid;
    int epfd;
    conn *conns;
    int nconns;
    uint64_t quota; /* measured replies to collect; 0 = unlimited */
    /* results */
    hist lat;
    uint64_t replies, errors;
    uint64_t end_ns;
    double cpu_s;
    char rbuf[1 << 16];
} worker;

static const char *rep_buf; /* depth + 1 copies of the request line */
static uint64_t t_start, t_measure, t_end;

/* Queues k more request lines on c, stamped `now`. */
static void queue_lines(conn *c, int k, uint64_t now)
{
    for (int i = 0; i < k; i++) {
        int slot = (c->ring_head + c->inflight) % cfg.depth;
        c->sent_at[slot] = now;
        c->inflight++;
    }
    c->out_pending += (size_t)k * cfg.line_len;
}

static void set_out_interest(worker *w, conn *c, bool want)
{
    if (c->want_out == want)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0u), .data.ptr = c};
    if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
        die("epoll_ctl: %s", strerror(errno));
    c->want_out = want;
}

static void flush_out(worker *w, conn *c)
{
    while (c->out_pending > 0) {
        ssize_t n = send(c->fd, rep_buf + c->out_off, c->out_pending, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            die("write: %s", strerror(errno));
        }
        c->out_pending -= (size_t)n;
        c->out_off = (c->out_off + (size_t)n) % cfg.line_len;
    }
    set_out_interest(w, c, c->out_pending > 0);
}

static bool head_is_error(const conn *c)
{
    return (c->head_len > 0 && c->head[0] == '-') ||
           memmem(c->head, (size_t)c->head_len, "\"error\"", 7) != NULL;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    char *rbuf = w->rbuf;
    struct epoll_event evs[256];
    uint64_t last_progress = now_ns();
    uint64_t outstanding = 0; /* requests in flight over all connections */
    struct timespec cpu0, cpu1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    bool measuring = false;
    uint64_t now = now_ns();

    for (int i = 0; i < w->nconns; i++) {
        conn *c = &w->conns[i];
        queue_lines(c, cfg.depth, now);
        outstanding += (uint64_t)cfg.depth;
        flush_out(w, c);
    }

    for (;;) {
        int ne = epoll_wait(w->epfd, evs, 256, 10);
        if (ne < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait: %s", strerror(errno));
        }
        now = now_ns();
        if (!measuring && now >= t_measure) {
            measuring = true;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
        }
        if (w->quota == 0 && now >= t_end)
            break;
        if (w->quota > 0 && measuring && w->replies >= w->quota)
            break;
        if (now - last_progress > 10ull * 1000000000u)
            die("no reply for 10 s (%llu requests in flight): does the payload have an id?",
                (unsigned long long)outstanding);

        for (int e = 0; e < ne; e++) {
            conn *c = evs[e].data.ptr;
            if (evs[e].events & EPOLLOUT)
                flush_out(w, c);
            if (!(evs[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                continue;
            ssize_t n = read(c->fd, rbuf, sizeof w->rbuf);
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN)
                    continue;
                die("read: %s", strerror(errno));
            }
            if (n == 0)
                die("the server closed a connection");
            last_progress = now;
            /* Count the reply lines in this chunk. */
            int lines = 0;
            const char *p = rbuf, *end = rbuf + n;
            while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *seg_end = nl ? nl : end;
                if (c->head_len < HEAD_CAP) {
                    size_t take = (size_t)(seg_end - p);
                    if (take > (size_t)(HEAD_CAP - c->head_len))
                        take = (size_t)(HEAD_CAP - c->head_len);
                    memcpy(c->head + c->head_len, p, take);
                    c->head_len += (int)take;
                }
                if (!nl)
                    break;
                if (c->inflight == 0)
                    die("more reply lines than requests (does one request get several lines?)");
                uint64_t sent = c->sent_at[c->ring_head];
                c->ring_head = (c->ring_head + 1) % cfg.depth;
                c->inflight--;
                if (measuring) {
                    hist_add(&w->lat, now - sent, 1);
                    w->replies++;
                    if (head_is_error(c))
                        w->errors++;
                }
                c->head_len = 0;
                lines++;
                p = nl + 1;
            }
            outstanding -= (uint64_t)lines;
            /* Refill: one new request per reply, within the quota. */
            int k = lines;
            if (w->quota > 0 && measuring) {
                uint64_t room =
                    w->replies + outstanding >= w->quota ? 0 : w->quota - w->replies - outstanding;
                if ((uint64_t)k > room)
                    k = (int)room;
            }
            if (k > 0) {
                queue_lines(c, k, now);
                outstanding += (uint64_t)k;
                flush_out(w, c);
            }
        }
    }
    w->end_ns = now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    w->cpu_s = (double)(cpu1.tv_sec - cpu0.tv_sec) + (double)(cpu1.tv_nsec - cpu0.tv_nsec) / 1e9;
    return NULL;
}

/* ---- command line ------------------------------------------------------------------ */

static void usage(FILE *to)
{
    fprintf(to,
            "usage: load_bench (--tcp HOST:PORT | --unix PATH) [options]\n"
            "  -c N               connections (default 1)\n"
            "  -p P               requests in flight per connection (default 1)\n"
            "  -t T               client threads, each with its own epoll (default 1)\n"
            "  -d SECONDS         measured run time (default 5)\n"
            "  -n REQUESTS        measure this many replies instead of a duration\n"
            "  --warmup SECONDS   unmeasured load before the run (default 1)\n"
            "  --payload ping     {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} (default)\n"
            "  --payload redis-ping  inline PING\\r\\n (Redis answers +PONG)\n"
            "  --payload-file F   the first non-blank line of F is the request\n"
            "  --setup-file F     send each line of F once, waiting for its reply,\n"
            "                     before the run (stops on an error reply)\n"
            "Prints: reqs/s=R, p50_us=A, p99_us=B, n=COUNT, errors=E\n"
            "Latency runs from the write of a request to the read of its reply; with\n"
            "-p > 1 it includes waiting behind the other requests in flight.\n");
}

static double parse_num(const char *opt, const char *v, double min)
{
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || errno || *end || end == v || !(x >= min))
        die("%s needs a number >= %g", opt, min);
    return x;
}

static void set_line(const char *text, size_t len)
{
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    cfg.line = malloc(len + 2);
    if (!cfg.line)
        die("out of memory");
    memcpy(cfg.line, text, len);
    cfg.line[len] = '\n';
    cfg.line[len + 1] = '\0';
    cfg.line_len = len + 1;
}

static void load_payload_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("open %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&buf, &cap, f)) >= 0) {
        size_t n = (size_t)len;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
            n--;
        if (n > 0) {
            set_line(buf, n);
            break;
        }
    }
    free(buf);
    fclose(f);
    if (!cfg.line)
        die("%s has no request line", path);
}

int main(int argc, char **argv)
{
    const char *payload = "ping";
    const char *payload_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!v)
            die("%s needs a value (see --help)", a);
        i++;
        if (!strcmp(a, "--tcp"))
            cfg.tcp = v;
        else if (!strcmp(a, "--unix"))
            cfg.unix_path = v;
        else if (!strcmp(a, "-c"))
            cfg.conns = (int)parse_num(a, v, 1);
        else if (!strcmp(a, "-p"))
            cfg.depth = (int)parse_num(a, v, 1);
        else if (!strcmp(a, "-t"))
            cfg.threads = (int)parse_num(a, v, 1);
        else if (!strcmp(a, "-d"))
            cfg.duration = parse_num(a, v, 0.001);
        else if (!strcmp(a, "-n"))
            cfg.requests = (uint64_t)parse_num(a, v, 1);
        else if (!strcmp(a, "--warmup"))
            cfg.warmup = parse_num(a, v, 0);
        else if (!strcmp(a, "--payload"))
            payload = v;
        else if (!strcmp(a, "--payload-file"))
            payload_file = v;
        else if (!strcmp(a, "--setup-file"))
            cfg.setup_file = v;
        else
            die("unknown option '%s' (see --help)", a);
    }
    if (!cfg.tcp == !cfg.unix_path)
        die("give exactly one of --tcp HOST:PORT and --unix PATH");
    if (cfg.conns > 100000 || cfg.depth > 1000000 || cfg.threads > 256)
        die("-c, -p or -t too large");
    if (cfg.threads > cfg.conns)
        cfg.threads = cfg.conns;

    if (payload_file) {
        load_payload_file(payload_file);
    } else if (!strcmp(payload, "ping")) {
        set_line("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 40);
    } else if (!strcmp(payload, "redis-ping")) {
        /* Inline command; Redis answers "+PONG\r\n". */
        cfg.line = strdup("PING\r\n");
        cfg.line_len = 6;
    } else {
        die("--payload is ping or redis-ping, got '%s'", payload);
    }
    signal(SIGPIPE, SIG_IGN);

    if (cfg.setup_file)
        run_setup();

    /* depth + 1 copies, so that any out_pending (<= depth lines) starting at
     * any offset within a line is contiguous. */
    size_t rep_len = cfg.line_len * ((size_t)cfg.depth + 1);
    char *rep = malloc(rep_len);
    if (!rep)
        die("out of memory");
    for (int i = 0; i <= cfg.depth; i++)
        memcpy(rep + (size_t)i * cfg.line_len, cfg.line, cfg.line_len);
    rep_buf = rep;

    worker *ws = calloc((size_t)cfg.threads, sizeof *ws);
    if (!ws)
        die("out of memory");
    for (int t = 0; t < cfg.threads; t++) {
        ws[t].epfd = epoll_create1(EPOLL_CLOEXEC);
        if (ws[t].epfd < 0)
            die("epoll_create1: %s", strerror(errno));
        ws[t].conns = calloc((size_t)cfg.conns / (size_t)cfg.threads + 1, sizeof(conn));
        if (!ws[t].conns)
            die("out of memory");
        if (cfg.requests)
            ws[t].quota = cfg.requests / (uint64_t)cfg.threads +
                          ((uint64_t)t < cfg.requests % (uint64_t)cfg.threads);
    }
    for (int i = 0; i < cfg.conns; i++) {
        worker *w = &ws[i % cfg.threads];
        conn *c = &w->conns[w->nconns++];
        c->fd = connect_one();
        int fl = fcntl(c->fd, F_GETFL);
        if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0)
            die("fcntl: %s", strerror(errno));
        c->sent_at = calloc((size_t)cfg.depth, sizeof *c->sent_at);
        if (!c->sent_at)
            die("out of memory");
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
            die("epoll_ctl: %s", strerror(errno));
    }

    t_start = now_ns();
    t_measure = t_start + (uint64_t)(cfg.warmup * 1e9);
    t_end = t_measure + (uint64_t)(cfg.duration * 1e9);
    for (int t = 0; t < cfg.threads; t++)
        if (pthread_create(&ws[t].tid, NULL, worker_main, &ws[t]) != 0)
            die("pthread_create failed");

    hist *total = calloc(1, sizeof *total);
    if (!total)
        die("out of memory");
    uint64_t replies = 0, errors = 0, end = t_measure;
    double cpu = 0;
    for (int t = 0; t < cfg.threads; t++) {
        pthread_join(ws[t].tid, NULL);
        hist_merge(total, &ws[t].lat);
        replies += ws[t].replies;
        errors += ws[t].errors;
        cpu += ws[t].cpu_s;
        if (ws[t].end_ns > end)
            end = ws[t].end_ns;
    }
    double secs = (double)(end - t_measure) / 1e9;
    if (secs <= 0)
        secs = 1e-9;

    printf("reqs/s=%.0f, p50_us=%.1f, p99_us=%.1f, n=%llu, errors=%llu\n", (double)replies / secs,
           hist_quantile_us(total, 0.50), hist_quantile_us(total, 0.99),
           (unsigned long long)replies, (unsigned long long)errors);
    fflush(stdout);
    fprintf(stderr,
            "load_bench: %s %s c=%d p=%d t=%d: %.2f s measured, p99.9_us=%.1f, max_us=%.1f, "
            "client cpu %.0f%% of %d thread(s)\n",
            cfg.tcp ? "tcp" : "unix", cfg.tcp ? cfg.tcp : cfg.unix_path, cfg.conns, cfg.depth,
            cfg.threads, secs, hist_quantile_us(total, 0.999), (double)total->max / 1000.0,
            100.0 * cpu / secs / cfg.threads, cfg.threads);

    for (int t = 0; t < cfg.threads; t++) {
        for (int i = 0; i < ws[t].nconns; i++) {
            close(ws[t].conns[i].fd);
            free(ws[t].conns[i].sent_at);
        }
        free(ws[t].conns);
        close(ws[t].epfd);
    }
    free(ws);
    free(total);
    free(rep);
    free(cfg.line);
    return errors ? 1 : 0;
}
