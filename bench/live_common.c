/* SPDX-License-Identifier: MIT */
/* See live_common.h. */
#define _POSIX_C_SOURCE 200809L

#include "live_common.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- small things ------------------------------------------------------------------- */

__attribute__((format(printf, 1, 2), noreturn)) void lb_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("live_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(EXIT_FAILURE);
}

void *lb_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        lb_die("out of memory");
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The nearest-rank percentile p (0..100) of v[0..n), which it sorts; 0 for
 * an empty set.  With 100 samples p99 is the second largest. */
double lb_pct(double *v, size_t n, double p)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    return v[k ? k - 1 : 0];
}

void lb_sample_add(lb_samples *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->v = lb_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = x;
}

void lb_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- request text ------------------------------------------------------------------- */

void lb_text_init(lb_text *t)
{
    t->cap = 1 << 12;
    t->len = 0;
    t->p = kb_alloc(t->cap, 1);
}

void lb_text_free(lb_text *t)
{
    free(t->p);
    memset(t, 0, sizeof *t);
}

__attribute__((format(printf, 2, 3))) void lb_add(lb_text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            lb_die("vsnprintf failed");
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + (size_t)n + 1;
        t->p = lb_xrealloc(t->p, t->cap);
    }
}

/* A JSON string literal of s (the URDF and SRDF documents). */
void lb_add_json_string(lb_text *t, const char *s)
{
    lb_add(t, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            lb_add(t, "\\%c", c);
        else if (c == '\n')
            lb_add(t, "\\n");
        else if (c < 0x20)
            lb_add(t, "\\u%04x", c);
        else
            lb_add(t, "%c", c);
    }
    lb_add(t, "\"");
}

/* Coordinates with 17 significant digits: the daemon gets exactly these
 * doubles. */
void lb_add_shape(lb_text *t, const rp_shape *s)
{
    if (s->kind == RP_SHAPE_SPHERE)
        lb_add(t, "{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],\"radius\":%.17g}}",
               s->sphere.center.x, s->sphere.center.y, s->sphere.center.z, s->sphere.radius);
    else
        lb_add(
            t,
            "{\"capsule\":{\"a\":[%.17g,%.17g,%.17g],\"b\":[%.17g,%.17g,%.17g],\"radius\":%.17g}}",
            s->capsule.a.x, s->capsule.a.y, s->capsule.a.z, s->capsule.b.x, s->capsule.b.y,
            s->capsule.b.z, s->capsule.radius);
}

void lb_add_joints(lb_text *t, const double *q, size_t dof)
{
    lb_add(t, "[");
    for (size_t i = 0; i < dof; i++)
        lb_add(t, "%s%.17g", i ? "," : "", q[i]);
    lb_add(t, "]");
}

/* ---- connections ---------------------------------------------------------------------- */

bool lb_conn_open(lb_conn *c, const char *path)
{
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (c->fd < 0)
        lb_die("socket: %s", strerror(errno));
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path)
        lb_die("socket path too long: %s", path);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(c->fd);
        c->fd = -1;
        return false;
    }
    c->cap = 1 << 16;
    c->buf = kb_alloc(c->cap, 1);
    return true;
}

void lb_conn_must_open(lb_conn *c, const char *path)
{
    if (!lb_conn_open(c, path))
        lb_die("cannot connect to %s: %s", path, strerror(errno));
}

void lb_conn_close(lb_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

void lb_conn_send(lb_conn *c, const char *p, size_t n)
{
    for (size_t off = 0; off < n;) {
        ssize_t w = write(c->fd, p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            lb_die("write: %s", strerror(errno));
        off += (size_t)w;
    }
}

/* One read() into the buffer (blocks when nothing is there); false when
 * the daemon closed the connection (or reset it). */
bool lb_conn_read_some(lb_conn *c)
{
    if (c->start == c->end) {
        c->start = c->end = c->scan = 0;
    } else if (c->end == c->cap && c->start > 0) {
        memmove(c->buf, c->buf + c->start, c->end - c->start);
        c->end -= c->start;
        c->scan -= c->start;
        c->start = 0;
    }
    if (c->end == c->cap) {
        c->cap *= 2;
        c->buf = lb_xrealloc(c->buf, c->cap);
    }
    for (;;) {
        ssize_t r = read(c->fd, c->buf + c->end, c->cap - c->end);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            errno = 0;
        if (r <= 0)
            return false;
        c->end += (size_t)r;
        return true;
    }
}

void lb_conn_fill(lb_conn *c)
{
    if (!lb_conn_read_some(c))
        lb_die("read: %s", errno ? strerror(errno) : "the daemon closed the connection");
}

/* The next complete line in the buffer, NUL-terminated in place of its
 * '\n', or NULL; valid until the next read into c. */
char *lb_conn_take(lb_conn *c, size_t *len)
{
    char *nl = memchr(c->buf + c->scan, '\n', c->end - c->scan);
    if (!nl) {
        c->scan = c->end;
        return NULL;
    }
    char *line = c->buf + c->start;
    *nl = '\0';
    if (len)
        *len = (size_t)(nl - line);
    c->start = c->scan = (size_t)(nl - c->buf) + 1;
    return line;
}

char *lb_conn_line(lb_conn *c, size_t *len)
{
    char *line;
    while (!(line = lb_conn_take(c, len)))
        lb_conn_fill(c);
    return line;
}

/* Sends a request line and reads one reply line; *ns (when not NULL) gets
 * the round trip. */
char *lb_conn_call(lb_conn *c, const lb_text *req, double *ns, size_t *len)
{
    double t0 = kb_now_ns();
    lb_conn_send(c, req->p, req->len);
    char *line = lb_conn_line(c, len);
    if (ns)
        *ns = kb_now_ns() - t0;
    return line;
}

/* The JSON-RPC error code of a reply, or 0 for a result.  Only the head of
 * the line is looked at: the envelope puts "error" right after the id, and
 * results can be megabytes long. */
long lb_reply_error(const char *line, size_t len)
{
    char head[96];
    size_t n = len < sizeof head - 1 ? len : sizeof head - 1;
    memcpy(head, line, n);
    head[n] = '\0';
    const char *e = strstr(head, "\"error\":{\"code\":");
    return e ? strtol(e + strlen("\"error\":{\"code\":"), NULL, 10) : 0;
}

void lb_must_ok(const char *line, size_t len, const char *what)
{
    if (lb_reply_error(line, len))
        lb_die("%s failed: %.300s", what, line);
}

unsigned long long lb_reply_revision(const char *line)
{
    const char *r = strstr(line, "\"revision\":");
    return r ? strtoull(r + strlen("\"revision\":"), NULL, 10) : 0;
}

/* memchr and memcmp over a length taken once, not strstr: a sanitizer's
 * strstr takes the haystack's strlen on every call, which made counting the
 * results in a multi-megabyte check.batch reply quadratic. */
size_t lb_count_in(const char *s, const char *needle)
{
    size_t n = 0, k = strlen(needle), len = strlen(s);
    if (k == 0)
        return 0;
    const char *p = s, *end = s + len;
    while ((size_t)(end - p) >= k && (p = memchr(p, needle[0], (size_t)(end - p) - k + 1))) {
        if (memcmp(p, needle, k) == 0) {
            n++;
            p += k;
        } else {
            p++;
        }
    }
    return n;
}

/* ---- the daemon ----------------------------------------------------------------------- */

/* The one daemon a section runs at a time; stopped at exit too. */
static struct {
    pid_t pid;
    char dir[256], sock[300], log[300];
} g_d = {-1, "", "", ""};

const char *lb_daemon_sock(void)
{
    return g_d.sock;
}

void lb_daemon_stop(void)
{
    if (g_d.pid > 0) {
        kill(g_d.pid, SIGTERM);
        waitpid(g_d.pid, NULL, 0);
        g_d.pid = -1;
    }
    if (g_d.dir[0]) {
        unlink(g_d.sock);
        unlink(g_d.log);
        rmdir(g_d.dir);
        g_d.dir[0] = '\0';
    }
}

/* Prints the end of the daemon's log on stderr (when it failed). */
static void daemon_log_tail(void)
{
    FILE *f = fopen(g_d.log, "r");
    if (!f)
        return;
    char line[512];
    fprintf(stderr, "--- %s ---\n", g_d.log);
    while (fgets(line, sizeof line, f))
        fputs(line, stderr);
    fclose(f);
}

/* Starts `bin --unix SOCK --tcp none --log-level warn EXTRA...` and waits
 * until it accepts a connection (at most 10 s). */
void lb_daemon_start(const char *bin, const char *const *extra, size_t n_extra)
{
    static bool registered;
    if (!registered) {
        atexit(lb_daemon_stop);
        registered = true;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(g_d.dir, sizeof g_d.dir, "%s/live_bench.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_d.dir))
        lb_die("mkdtemp: %s", strerror(errno));
    snprintf(g_d.sock, sizeof g_d.sock, "%s/reposed.sock", g_d.dir);
    snprintf(g_d.log, sizeof g_d.log, "%s/reposed.log", g_d.dir);
    const char *fixed[] = {bin, "--unix", g_d.sock, "--tcp", "none", "--log-level", "warn"};
    size_t n_fixed = sizeof fixed / sizeof fixed[0];
    char **argv = kb_alloc(n_fixed + n_extra + 1, sizeof *argv);
    for (size_t i = 0; i < n_fixed + n_extra; i++) {
        const char *a = i < n_fixed ? fixed[i] : extra[i - n_fixed];
        argv[i] = lb_xrealloc(NULL, strlen(a) + 1);
        memcpy(argv[i], a, strlen(a) + 1);
    }
    fflush(stdout);
    g_d.pid = fork();
    if (g_d.pid < 0)
        lb_die("fork: %s", strerror(errno));
    if (g_d.pid == 0) {
        int fd = open(g_d.log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(bin, argv);
        dprintf(2, "live_bench: cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    for (size_t i = 0; i < n_fixed + n_extra; i++)
        free(argv[i]);
    free(argv);
    for (int k = 0; k < 1000; k++) {
        lb_conn c;
        if (lb_conn_open(&c, g_d.sock)) {
            lb_conn_close(&c);
            return;
        }
        int status;
        if (waitpid(g_d.pid, &status, WNOHANG) == g_d.pid) {
            g_d.pid = -1;
            daemon_log_tail();
            lb_die("reposed (%s) exited at start", bin);
        }
        lb_sleep_ms(10);
    }
    daemon_log_tail();
    lb_die("reposed (%s) did not come up on %s", bin, g_d.sock);
}

/* The daemon's resident set (VmRSS), in bytes. */
size_t lb_daemon_rss(void)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)g_d.pid);
    FILE *f = fopen(path, "r");
    if (!f)
        lb_die("cannot open %s", path);
    size_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %zu kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

/* CPU seconds (user + system, every thread) the daemon used so far. */
double lb_daemon_cpu_s(void)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)g_d.pid);
    FILE *f = fopen(path, "r");
    if (!f)
        lb_die("cannot open %s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Fields 14 and 15 (utime, stime) follow the command name, which may
     * hold spaces, hence the last ')'. */
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        lb_die("cannot parse %s", path);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

double lb_self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* `bin --help` is read through a pipe, with no shell in between. */
bool lb_daemon_has_option(const char *bin, const char *option)
{
    int fds[2];
    if (pipe(fds) != 0)
        lb_die("pipe: %s", strerror(errno));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        lb_die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execl(bin, bin, "--help", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    lb_text out;
    lb_text_init(&out);
    char buf[4096];
    ssize_t r;
    while ((r = read(fds[0], buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0)
            lb_add(&out, "%.*s", (int)r, buf);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    bool yes = strstr(out.p, option) != NULL;
    lb_text_free(&out);
    return yes;
}

/* ---- protocol helpers ------------------------------------------------------------------ */

size_t lb_json_size(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (size_t)v->valuedouble : 0;
}

/* The limits in force, from `hello`. */
lb_limits lb_get_limits(lb_conn *c)
{
    lb_text req;
    lb_text_init(&req);
    lb_add(&req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}\n");
    size_t len;
    char *line = lb_conn_call(c, &req, NULL, &len);
    lb_must_ok(line, len, "hello");
    cJSON *root = cJSON_ParseWithLength(line, len);
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "result"), "limits");
    lb_limits out = {lb_json_size(l, "max_request_bytes"),
                     lb_json_size(l, "max_batch_configurations"),
                     lb_json_size(l, "max_request_work")};
    cJSON_Delete(root);
    lb_text_free(&req);
    if (!out.request_bytes || !out.batch_configurations || !out.request_work)
        lb_die("hello: no limits in %.300s", line);
    return out;
}

/* `stats` as a parsed tree (the caller deletes it). */
cJSON *lb_get_stats(lb_conn *c)
{
    lb_text req;
    lb_text_init(&req);
    lb_add(&req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stats\"}\n");
    size_t len;
    char *line = lb_conn_call(c, &req, NULL, &len);
    lb_must_ok(line, len, "stats");
    lb_text_free(&req);
    cJSON *root = cJSON_ParseWithLength(line, len);
    cJSON *res = cJSON_DetachItemFromObjectCaseSensitive(root, "result");
    cJSON_Delete(root);
    if (!res)
        lb_die("stats: no result");
    return res;
}

/* Sends shapes [0, s->n) as scene `name`: scene.create with the first ones,
 * then scene.put, each request at most `chunk` bytes and 40,000 shapes,
 * or less when the daemon's max_request_bytes is smaller.  Returns the number of requests. */
size_t lb_upload_scene(lb_conn *c, const char *name, const kb_scene *s, size_t chunk)
{
    lb_limits lim = lb_get_limits(c);
    if (lim.request_bytes < chunk + 64)
        chunk = lim.request_bytes > 4096 ? lim.request_bytes - 64 : lim.request_bytes / 2;
    lb_text req, one;
    lb_text_init(&req);
    lb_text_init(&one);
    size_t n_req = 0, i = 0;
    while (i < s->n) {
        req.len = 0;
        lb_add(&req,
               "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"%s\",\"params\":{\"scene\":\"%s\","
               "\"shapes\":{",
               n_req + 1, n_req ? "scene.put" : "scene.create", name);
        size_t in_req = 0;
        for (; i < s->n; i++, in_req++) {
            one.len = 0;
            lb_add(&one, "%s\"%s\":", in_req ? "," : "", s->puts[i].id);
            lb_add_shape(&one, &s->puts[i].shape);
            /* A line's scene write is priced per shape against
             * max_loop_work (proto/PROTOCOL.md, the cost model): 40,000
             * shapes a line stay well inside the default. */
            if (in_req && (req.len + one.len + 4 > chunk || in_req >= 40000))
                break;
            lb_add(&req, "%s", one.p);
        }
        lb_add(&req, "}}}\n");
        size_t len;
        char *line = lb_conn_call(c, &req, NULL, &len);
        lb_must_ok(line, len, n_req ? "scene.put" : "scene.create");
        n_req++;
    }
    lb_text_free(&req);
    lb_text_free(&one);
    return n_req;
}

/* model.put of arm7 from its URDF and SRDF, as a planner would send it. */
void lb_upload_model(lb_conn *c, const kb_robot *robot)
{
    lb_text req;
    lb_text_init(&req);
    lb_add(&req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":{\"model\":"
                 "\"arm7\",\"urdf\":");
    lb_add_json_string(&req, robot->urdf);
    lb_add(&req, ",\"srdf\":");
    lb_add_json_string(&req, robot->srdf);
    lb_add(&req, "}}\n");
    size_t len;
    char *line = lb_conn_call(c, &req, NULL, &len);
    lb_must_ok(line, len, "model.put");
    lb_text_free(&req);
}
