/* SPDX-License-Identifier: MIT */
/*
 * kin_socket_bench — joint-space checks of arm7 through reposed over a Unix
 * socket, end to end: the time from the first byte of a request sent to the
 * last byte of its reply received (CLOCK_MONOTONIC), one request in flight.
 * The robot, scenes, configurations and edges are kin_bench's
 * (kin_common.h), so the figures line up with its in-process ones.
 *
 * Setup.  Starts `reposed --unix DIR/reposed.sock --tcp none` (DIR a fresh
 * temporary directory; --reposed BIN, default the build's reposed), or uses
 * a running daemon with --unix PATH.  Sends model.put {urdf, srdf} and
 * scene.create for "tabletop" and "random" (coordinates printed with %.17g,
 * so the daemon's shapes are bit-identical to the in-process ones), and
 * builds the same model and scenes in process for reference.
 *
 * check.batch.  --batch configurations (default 1000, kin_bench's first
 * ones) as params.joints (an array of joint-value arrays), report "first",
 * against each scene, in two number formats: %.17g (exact doubles, what a
 * client that round-trips its values sends) and %.6g (micro-radians, the
 * configurations are rounded to it first so that both sides check the same
 * values).  Each request is sent --reps times (default 20) after 3 warm-up
 * sends; the median and the fastest are reported with the request and
 * reply sizes.  Beside it, in process (no socket): the same line through
 * rpd_process_line (the daemon's JSON-RPC layer: parse, decode, compute,
 * write the reply), cJSON parsing alone, and the checks alone
 * (rp_model_check_joints on every configuration); decode + reply is what
 * remains.  The daemon's "valid" count must equal the in-process count.
 *
 * check.motion.  --edges edges per scene (default 200; kin_bench's first
 * ones), each sent as its own request with path [start, end], in discrete
 * mode (resolution 0.01) and certified mode (default tolerance), over
 * --motion-reps passes (default 3, after a warm-up pass); per edge the median
 * over the passes.  Reported per mode: median and mean µs per request over
 * the edges, the in-process rp_model_check_motion median and mean on the
 * same edges, and the median per-edge overhead (socket minus in process).
 * Every reply's "valid" must match the in-process result.
 *
 * ping: median of 2000 round trips, the floor under every figure.
 *
 * Usage: kin_socket_bench [--reposed BIN | --unix PATH] [--data DIR]
 *                         [--batch N] [--reps N] [--edges N] [--motion-reps N]
 *                         [--quick]
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kin_common.h"
#include "codec/codec.h"
#include "server/protocol/arena.h"
#include "server/protocol/rpc.h"

#ifndef KB_REPOSED_PATH
#define KB_REPOSED_PATH "reposed"
#endif

/* ---- text ------------------------------------------------------------------------- */

typedef struct text {
    char *p;
    size_t len, cap;
} text;

static void text_init(text *t)
{
    t->cap = 1 << 16;
    t->len = 0;
    t->p = kb_alloc(t->cap, 1);
}

__attribute__((format(printf, 2, 3))) static void add(text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            kb_die("vsnprintf failed");
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + (size_t)n + 1;
        t->p = realloc(t->p, t->cap);
        if (!t->p)
            kb_die("out of memory");
    }
}

/* A JSON string literal of s. */
static void add_json_string(text *t, const char *s)
{
    add(t, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            add(t, "\\%c", c);
        else if (c == '\n')
            add(t, "\\n");
        else if (c == '\t')
            add(t, "\\t");
        else if (c == '\r')
            add(t, "\\r");
        else if (c < 0x20)
            add(t, "\\u%04x", c);
        else
            add(t, "%c", c);
    }
    add(t, "\"");
}

static void add_shape(text *t, const rp_shape *s)
{
    if (s->kind == RP_SHAPE_SPHERE)
        add(t, "{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],\"radius\":%.17g}}", s->sphere.center.x,
            s->sphere.center.y, s->sphere.center.z, s->sphere.radius);
    else
        add(t,
            "{\"capsule\":{\"a\":[%.17g,%.17g,%.17g],\"b\":[%.17g,%.17g,%.17g],\"radius\":%.17g}}",
            s->capsule.a.x, s->capsule.a.y, s->capsule.a.z, s->capsule.b.x, s->capsule.b.y,
            s->capsule.b.z, s->capsule.radius);
}

/* A joint vector with `digits` significant digits (%.*g). */
static void add_joints(text *t, const double *q, size_t dof, int digits)
{
    add(t, "[");
    for (size_t i = 0; i < dof; i++)
        add(t, "%s%.*g", i ? "," : "", digits, q[i]);
    add(t, "]");
}

/* ---- socket ------------------------------------------------------------------------ */

typedef struct conn {
    int fd;
    char *buf;
    size_t cap, len; /* the last reply, with its '\n' */
} conn;

static bool try_connect(conn *c, const char *path)
{
    c->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (c->fd < 0)
        kb_die("socket: %s", strerror(errno));
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path)
        kb_die("socket path too long: %s", path);
    strcpy(sa.sun_path, path);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        c->cap = 1 << 20;
        c->buf = kb_alloc(c->cap, 1);
        return true;
    }
    close(c->fd);
    c->fd = -1;
    return false;
}

/* Sends a line (with its '\n') and reads the reply line; returns the
 * elapsed ns from the first byte written to the last byte read. */
static double round_trip(conn *c, const char *line, size_t len)
{
    double t0 = kb_now_ns();
    for (size_t off = 0; off < len;) {
        ssize_t w = write(c->fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            kb_die("write: %s", strerror(errno));
        off += (size_t)w;
    }
    c->len = 0;
    for (;;) {
        if (c->len == c->cap) {
            c->cap *= 2;
            c->buf = realloc(c->buf, c->cap);
            if (!c->buf)
                kb_die("out of memory");
        }
        ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            kb_die("read: %s", r ? strerror(errno) : "connection closed");
        c->len += (size_t)r;
        if (c->buf[c->len - 1] == '\n')
            break;
    }
    double dt = kb_now_ns() - t0;
    if (c->len + 1 > c->cap) {
        c->cap++;
        c->buf = realloc(c->buf, c->cap);
        if (!c->buf)
            kb_die("out of memory");
    }
    c->buf[c->len] = '\0';
    return dt;
}

/* Sends a setup request; dies when the reply is an error. */
static void must(conn *c, const text *req, const char *what)
{
    round_trip(c, req->p, req->len);
    if (strstr(c->buf, "\"error\""))
        kb_die("%s failed: %.300s", what, c->buf);
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    for (const char *p = strstr(s, needle); p; p = strstr(p + k, needle))
        n++;
    return n;
}

/* ---- the daemon --------------------------------------------------------------------- */

static pid_t g_child = -1;
static char g_dir[256];

static void stop_daemon(void)
{
    if (g_child > 0) {
        kill(g_child, SIGTERM);
        waitpid(g_child, NULL, 0);
        g_child = -1;
    }
    if (g_dir[0]) {
        char path[300];
        snprintf(path, sizeof path, "%s/reposed.sock", g_dir);
        unlink(path);
        rmdir(g_dir);
        g_dir[0] = '\0';
    }
}

static void start_daemon(const char *bin, char *sock, size_t sock_size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/kin_socket_bench.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir))
        kb_die("mkdtemp: %s", strerror(errno));
    snprintf(sock, sock_size, "%s/reposed.sock", g_dir);
    g_child = fork();
    if (g_child < 0)
        kb_die("fork: %s", strerror(errno));
    if (g_child == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        execl(bin, bin, "--unix", sock, "--tcp", "none", "--log-level", "warn", (char *)NULL);
        _exit(127);
    }
    atexit(stop_daemon);
}

/* ---- in process --------------------------------------------------------------------- */

/* The daemon's JSON-RPC layer in this process (as batch_bench does). */
typedef struct local {
    rpd_core core;
    rpd_session session;
    rp_jw out;
} local;

__attribute__((noinline)) static double local_line(local *l, const text *req)
{
    rp_jw_reset(&l->out);
    double t0 = kb_now_ns();
    rpd_process_line(&l->core, &l->session, req->p, req->len - 1, &l->out);
    rpd_arena_reset();
    return kb_now_ns() - t0;
}

/* ---- main ----------------------------------------------------------------------------- */

static size_t arg_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v == 0)
        kb_die("bad count: %s", s);
    return (size_t)v;
}

int main(int argc, char **argv)
{
    const char *data = KB_DATA_DIR, *bin = KB_REPOSED_PATH, *unix_path = NULL;
    size_t n_batch = 1000, n_edges = 200;
    int reps = 20, motion_reps = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--data") && more)
            data = argv[++i];
        else if (!strcmp(a, "--reposed") && more)
            bin = argv[++i];
        else if (!strcmp(a, "--unix") && more)
            unix_path = argv[++i];
        else if (!strcmp(a, "--batch") && more)
            n_batch = arg_size(argv[++i]);
        else if (!strcmp(a, "--reps") && more)
            reps = (int)arg_size(argv[++i]);
        else if (!strcmp(a, "--edges") && more)
            n_edges = arg_size(argv[++i]);
        else if (!strcmp(a, "--motion-reps") && more)
            motion_reps = (int)arg_size(argv[++i]);
        else if (!strcmp(a, "--quick")) {
            reps = 5;
            n_edges = 30;
            motion_reps = 1;
        } else {
            fprintf(stderr, "usage: kin_socket_bench [--reposed BIN | --unix PATH] [--data DIR] "
                            "[--batch N] [--reps N] [--edges N] [--motion-reps N] [--quick]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);

    /* In process: the reference model and scenes. */
    rp_store *st = rp_store_new(NULL);
    if (!st)
        kb_die("out of memory");
    kb_robot robot;
    kb_robot_load(&robot, data, st, "arm7", true);
    size_t dof = robot.dof;
    kb_scene scenes[2];
    kb_scene_tabletop(&scenes[0]);
    kb_scene_random(&scenes[1], robot.model, KB_RANDOM_SHAPES, KB_RANDOM_RADIUS, KB_RANDOM_BUBBLE);
    const char *names[2] = {"tabletop", "random"};
    rp_scene *sc[2] = {kb_scene_create(st, names[0], &scenes[0]),
                       kb_scene_create(st, names[1], &scenes[1])};

    /* Setup requests. */
    text model, create[2];
    text_init(&model);
    add(&model, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":{\"model\":"
                "\"arm7\",\"urdf\":");
    add_json_string(&model, robot.urdf);
    add(&model, ",\"srdf\":");
    add_json_string(&model, robot.srdf);
    add(&model, "}}\n");
    for (int s = 0; s < 2; s++) {
        text_init(&create[s]);
        add(&create[s],
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.create\",\"params\":{"
            "\"scene\":\"%s\",\"shapes\":{",
            names[s]);
        for (size_t i = 0; i < scenes[s].n; i++) {
            add(&create[s], "%s\"%s\":", i ? "," : "", scenes[s].puts[i].id);
            add_shape(&create[s], &scenes[s].puts[i].shape);
        }
        add(&create[s], "}}}\n");
    }

    /* The daemon. */
    char sock[300];
    conn c;
    if (unix_path) {
        snprintf(sock, sizeof sock, "%s", unix_path);
        if (!try_connect(&c, sock))
            kb_die("cannot connect to %s", sock);
    } else {
        start_daemon(bin, sock, sizeof sock);
        bool up = false;
        for (int k = 0; k < 500 && !up; k++) {
            up = try_connect(&c, sock);
            if (!up) {
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
        if (!up)
            kb_die("reposed (%s) did not come up on %s", bin, sock);
    }
    must(&c, &model, "model.put");
    for (int s = 0; s < 2; s++)
        must(&c, &create[s], "scene.create");

    /* The same through the JSON-RPC layer in process. */
    local l;
    memset(&l, 0, sizeof l);
    if (!rpd_core_init(&l.core, NULL))
        kb_die("rpd_core_init failed");
    rpd_arena_install();
    rp_jw_init(&l.out);
    local_line(&l, &model);
    local_line(&l, &create[0]);
    local_line(&l, &create[1]);
    if (strstr(l.out.buf, "\"error\""))
        kb_die("in-process setup failed: %.300s", l.out.buf);

    printf("kin_socket_bench: reposed over a Unix socket (%s), arm7 (%zu shapes, %zu joints); "
           "scenes tabletop %zu, random %zu shapes\n",
           unix_path ? unix_path : bin, rp_model_link_count(robot.model), dof, scenes[0].n,
           scenes[1].n);

    /* ping floor */
    {
        const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n";
        size_t n = 2000;
        double *t = kb_alloc(n, sizeof *t);
        for (size_t k = 0; k < 200; k++)
            round_trip(&c, ping, strlen(ping));
        for (size_t k = 0; k < n; k++)
            t[k] = round_trip(&c, ping, strlen(ping));
        printf("ping round trip: median %.1f us (2000)\n\n", kb_median(t, n) / 1e3);
        free(t);
    }

    /* ---- check.batch ---- */
    double *q = kb_configs(&robot, n_batch, KB_SEED_CONFIGS);
    double *q6 = kb_alloc(n_batch * dof, sizeof *q6);
    for (size_t i = 0; i < n_batch * dof; i++) {
        char b[64];
        snprintf(b, sizeof b, "%.6g", q[i]);
        q6[i] = strtod(b, NULL);
    }
    printf("check.batch, %zu configurations, report first, %d reps (median, ms):\n", n_batch, reps);
    printf("  %-9s %-5s %9s %9s %9s %9s | %9s %8s %8s %8s %6s %8s\n", "scene", "nums", "req_B",
           "reply_B", "sock_med", "sock_min", "rpc_line", "parse", "checks", "rest", "valid",
           "cjson");
    double *t = kb_alloc((size_t)reps, sizeof *t);
    for (int s = 0; s < 2; s++)
        for (int f = 0; f < 2; f++) {
            const double *qq = f ? q6 : q;
            text req;
            text_init(&req);
            add(&req,
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"check.batch\",\"params\":{"
                "\"model\":\"arm7\",\"scene\":\"%s\",\"report\":\"first\",\"joints\":[",
                names[s]);
            for (size_t k = 0; k < n_batch; k++) {
                if (k)
                    add(&req, ",");
                add_joints(&req, &qq[k * dof], dof, f ? 6 : 17);
            }
            add(&req, "]}}\n");
            for (int w = 0; w < 3; w++)
                round_trip(&c, req.p, req.len);
            for (int r = 0; r < reps; r++)
                t[r] = round_trip(&c, req.p, req.len);
            double sock_ms = kb_median(t, (size_t)reps) / 1e6, sock_min = t[0] / 1e6;
            size_t reply_b = c.len, valid_sock = count(c.buf, "\"valid\":true");
            /* In process: the whole line, parse only, checks only. */
            for (int r = 0; r < reps; r++)
                t[r] = local_line(&l, &req);
            double line_ms = kb_median(t, (size_t)reps) / 1e6;
            for (int r = 0; r < reps; r++) {
                double t0 = kb_now_ns();
                cJSON *tree = cJSON_ParseWithLength(req.p, req.len - 1);
                t[r] = kb_now_ns() - t0;
                if (!tree)
                    kb_die("cJSON parse failed");
                cJSON_Delete(tree);
                rpd_arena_reset();
            }
            double cjson_ms = kb_median(t, (size_t)reps) / 1e6;
            /* What the daemon does instead (rpc.c): the joint table read
             * straight from the text, cJSON for the rest. */
            for (int r = 0; r < reps; r++) {
                double t0 = kb_now_ns();
                size_t a, b;
                rp_num_rows rows;
                if (!rp_json_batch_joints(req.p, req.len - 1, &a, &b, &rows))
                    kb_die("the joint table was not read");
                char *rest = malloc(req.len);
                memcpy(rest, req.p, a);
                memcpy(rest + a, "[]", 2);
                memcpy(rest + a + 2, req.p + b, req.len - 1 - b);
                cJSON *tree = cJSON_ParseWithLength(rest, a + 2 + req.len - 1 - b);
                t[r] = kb_now_ns() - t0;
                if (!tree)
                    kb_die("cJSON parse failed");
                cJSON_Delete(tree);
                free(rest);
                rp_num_rows_free(&rows);
                rpd_arena_reset();
            }
            double parse_ms = kb_median(t, (size_t)reps) / 1e6;
            size_t valid_local = 0;
            rp_check_opts opts = {RP_REPORT_FIRST, false, 0.0, NULL, NULL, 0};
            for (int r = 0; r < reps; r++) {
                valid_local = 0;
                double t0 = kb_now_ns();
                for (size_t k = 0; k < n_batch; k++) {
                    rp_check_result res;
                    if (rp_model_check_joints(robot.model, sc[s], NULL, &qq[k * dof], &opts,
                                              &res) != RP_OK)
                        kb_die("check failed");
                    valid_local += !res.collision && rp_model_limit_violation(
                                                         robot.model, &qq[k * dof], 0) == SIZE_MAX;
                    rp_check_result_free(&res);
                }
                t[r] = kb_now_ns() - t0;
            }
            double checks_ms = kb_median(t, (size_t)reps) / 1e6;
            if (valid_sock != valid_local)
                kb_die("check.batch %s: daemon says %zu valid, in process %zu", names[s],
                       valid_sock, valid_local);
            printf("  %-9s %-5s %9zu %9zu %9.3f %9.3f | %9.3f %8.3f %8.3f %8.3f %6zu %8.3f\n",
                   names[s], f ? "%.6g" : "%.17g", req.len, reply_b, sock_ms, sock_min, line_ms,
                   parse_ms, checks_ms, line_ms - parse_ms - checks_ms, valid_sock, cjson_ms);
            free(req.p);
        }
    printf("  (sock: end to end, median and fastest; rpc_line: rpd_process_line in process; "
           "parse: the daemon's parse (joint table from the text, cJSON for the rest); "
           "rest = rpc_line - parse - checks: decode + reply; cjson: cJSON parsing the whole "
           "line, for comparison)\n\n");
    free(t);

    /* ---- check.motion ---- */
    printf("check.motion, %zu edges per scene, one request each, %d passes (per-edge median), "
           "us per request:\n",
           n_edges, motion_reps);
    printf("  %-9s %-10s %9s %9s | %9s %9s | %9s %6s\n", "scene", "mode", "sock_med", "sock_mean",
           "local_med", "local_mean", "overhead", "valid");
    for (int s = 0; s < 2; s++) {
        double *edges = kb_edges(&robot, sc[s], n_edges, KB_SEED_EDGES + (uint64_t)s);
        for (int mode = 0; mode < 2; mode++) {
            text *reqs = kb_alloc(n_edges, sizeof *reqs);
            bool *valid = kb_alloc(n_edges, sizeof *valid);
            double *ts = kb_alloc(n_edges * (size_t)motion_reps, sizeof *ts);
            double *tl = kb_alloc(n_edges * (size_t)motion_reps, sizeof *tl);
            rp_motion_opts mo;
            memset(&mo, 0, sizeof mo);
            mo.mode = mode ? RP_MOTION_CERTIFIED : RP_MOTION_DISCRETE;
            mo.resolution = mode ? 0.0 : 0.01;
            for (size_t e = 0; e < n_edges; e++) {
                text_init(&reqs[e]);
                add(&reqs[e],
                    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"check.motion\","
                    "\"params\":{\"model\":\"arm7\",\"scene\":\"%s\",\"path\":[",
                    names[s]);
                add_joints(&reqs[e], &edges[2 * e * dof], dof, 17);
                add(&reqs[e], ",");
                add_joints(&reqs[e], &edges[(2 * e + 1) * dof], dof, 17);
                add(&reqs[e], "],%s}}\n",
                    mode ? "\"mode\":\"certified\"" : "\"mode\":\"discrete\",\"resolution\":0.01");
                rp_motion_result r;
                if (rp_model_check_motion(robot.model, sc[s], NULL, &edges[2 * e * dof], 2, &mo, &r,
                                          NULL) != RP_OK)
                    kb_die("check.motion in process failed");
                valid[e] = r.valid;
            }
            size_t n_valid = 0;
            for (int p = -1; p < motion_reps; p++)
                for (size_t e = 0; e < n_edges; e++) {
                    double dt = round_trip(&c, reqs[e].p, reqs[e].len);
                    bool v = strstr(c.buf, "\"valid\":true") != NULL;
                    if (!v && !strstr(c.buf, "\"valid\":false"))
                        kb_die("check.motion: %.300s", c.buf);
                    if (v != valid[e])
                        kb_die("check.motion %s edge %zu: daemon and in process differ", names[s],
                               e);
                    rp_motion_result r;
                    double t0 = kb_now_ns();
                    rp_model_check_motion(robot.model, sc[s], NULL, &edges[2 * e * dof], 2, &mo, &r,
                                          NULL);
                    double dl = kb_now_ns() - t0;
                    if (p >= 0) {
                        ts[(size_t)p * n_edges + e] = dt;
                        tl[(size_t)p * n_edges + e] = dl;
                    }
                }
            double *ms = kb_alloc(n_edges, sizeof *ms), *ml = kb_alloc(n_edges, sizeof *ml);
            double *ov = kb_alloc(n_edges, sizeof *ov), *col = kb_alloc((size_t)motion_reps, 8);
            double sum_s = 0, sum_l = 0;
            for (size_t e = 0; e < n_edges; e++) {
                for (int p = 0; p < motion_reps; p++)
                    col[p] = ts[(size_t)p * n_edges + e];
                ms[e] = kb_median(col, (size_t)motion_reps) / 1e3;
                for (int p = 0; p < motion_reps; p++)
                    col[p] = tl[(size_t)p * n_edges + e];
                ml[e] = kb_median(col, (size_t)motion_reps) / 1e3;
                ov[e] = ms[e] - ml[e];
                sum_s += ms[e];
                sum_l += ml[e];
                n_valid += valid[e];
            }
            printf("  %-9s %-10s %9.1f %9.1f | %9.1f %9.1f | %9.1f %6zu\n", names[s],
                   mode ? "certified" : "disc 0.01", kb_median(ms, n_edges),
                   sum_s / (double)n_edges, kb_median(ml, n_edges), sum_l / (double)n_edges,
                   kb_median(ov, n_edges), n_valid);
            for (size_t e = 0; e < n_edges; e++)
                free(reqs[e].p);
            free(reqs);
            free(valid);
            free(ts);
            free(tl);
            free(ms);
            free(ml);
            free(ov);
            free(col);
        }
        free(edges);
    }
    printf("  (sock: end to end; local: rp_model_check_motion in process; overhead: median of "
           "the per-edge differences)\n");

    close(c.fd);
    free(c.buf);
    stop_daemon();
    rp_jw_free(&l.out);
    rpd_core_free(&l.core);
    rpd_arena_free_all();
    free(q);
    free(q6);
    free(model.p);
    for (int s = 0; s < 2; s++) {
        free(create[s].p);
        kb_scene_free(&scenes[s]);
    }
    rp_store_free(st);
    kb_robot_free(&robot);
    return 0;
}
