/* SPDX-License-Identifier: MIT */
/*
 * live_bench — "live shared scenes" (issue 10) through reposed over a Unix
 * socket: what it costs when a scene changes while planners query it, when
 * one client sends a huge request while others wait, when several clients
 * query at once, and when many clients watch a scene.  It prints figures
 * and never judges them: no timing is asserted anywhere.
 *
 * Every section starts its own `reposed --unix DIR/reposed.sock --tcp none`
 * (DIR a fresh temporary directory, the daemon's stderr in DIR/reposed.log)
 * and stops it with SIGTERM at the end, so that one section's scenes,
 * allocator state and worker threads do not colour the next one.  Times are
 * CLOCK_MONOTONIC from the first byte of a request written to the last byte
 * of its reply read.
 *
 * The scenes are kin_common.h's scene "random" (kb_scene_random: spheres and
 * capsules alternating, radius 1-2 cm, capsules up to 8 cm long, centres
 * uniform in the 2 m cube around the arm7 robot, with a clear ball of 0.66 m
 * around its shoulder), grown to 100,000 shapes (--quick: 10,000).  The
 * generator is sequential with a fixed seed, so the 1k and 10k scenes are
 * the first shapes of the 100k one.  Scenes are sent with scene.create and
 * then scene.put in requests of at most 1 MiB (well under the default
 * max_request_bytes of 16 MiB), so that the daemon's transient parse memory
 * stays small next to the store (it matters to the memory section).
 *
 * Sections (--only NAME runs one of them):
 *
 * move — a planner's query right after another client moved one shape, vs
 *   the query alone, at 1k, 10k and 100k shapes.  "query" is a scene.distance
 *   of one random query shape (sphere or capsule, as the scene's) against
 *   the scene (the nearest shape); "move+query" is a scene.put of one
 *   existing id, translated by up to 5 mm per axis from where it was
 *   created, then the same kind of scene.distance, one after the other on one
 *   connection; its time is the sum of the two round trips.  Reported: median
 *   and p99 of each, the put's own median, and the ratio (move+query)/query
 *   of the medians and of the p99s.  The query's revision must be the put's
 *   (the query saw the move).  A scene tree rebuilt from scratch after every
 *   mutation shows as a ratio that grows with the scene; an incremental one
 *   keeps it near 2 (two round trips instead of one).
 *
 * ping — ping latency while one client's huge check.batch runs: the arm7
 *   robot (tests/data/arm7.urdf + .srdf, model.put's URDF form) in joint
 *   space, --configs configurations (default 100,000; --quick 5,000), report
 *   "first", against the 100k-shape scene.  The daemon is started with
 *   --max-request-bytes 64 MiB and --max-request-work 10^12 so that the batch
 *   can go as one request (about 16 MB of JSON at 17 significant digits);
 *   with --default-limits it is not, and the batch is split into requests
 *   that fit the limits `hello` reports (bytes, configurations, and the work
 *   estimate PROTOCOL.md gives), sent one after the other on one connection,
 *   which the output says.  A second client pings in a loop, one in flight.
 *   Reported: ping p50/p99/max over the pings whose round trip overlapped the
 *   batch (and idle, before it, for reference), the batch's wall time from
 *   its first byte sent to its last reply byte read, and configurations/s.
 *
 * throughput — with the daemon started with `--threads 1` and `--threads 2`
 *   when its --help lists --threads (else the default only, and the output
 *   says "threads: unsupported by this reposed"): check.batch of 1000
 *   configurations (report first, 100k shapes) from 1 client and from 16
 *   clients, and single-shape scene.distance from 16 clients; every client
 *   keeps one request in flight.  Measured over --duration seconds (default
 *   3; --quick 0.5) after a warm-up; reported as requests/s (and
 *   configurations/s), round-trip p50/p99, and the CPU the daemon and this
 *   client used over the window (this machine may have as few cores as the
 *   daemon has threads, and the client competes for them), then the ratio
 *   2-thread/1-thread.
 *
 * watch — fan-out of scene.watch (docs/ARCHITECTURE.md, Live scenes and
 *   watches): 100 connections (--quick 20) each send
 *   {"method":"scene.watch","params":{"scene":S}} and then only read; a
 *   writer sends 10,000 (--quick 1,000) single-shape scene.put requests to S
 *   (a 1000-shape scene), pipelined LB_PUT_DEPTH deep on one connection.
 *   Reported: puts/s without watchers and with them (each the median of
 *   LB_WATCH_ROUNDS rounds of the 10,000 puts) and their ratio, the time
 *   until every watcher had a round's notifications (from the round's first
 *   put; median), and per watcher
 *   the scene.changed notifications received (each should get one per put),
 *   with any scene.resync.  A daemon that answers scene.watch with "method
 *   not found" gets "watch: unsupported by this reposed" and the section is
 *   skipped.
 *
 * memory — at 100k shapes: the `stats` method's memory members (today
 *   memory.store_bytes) divided by the shape count, after the scene is
 *   created and after one query (so that the scene's tree exists), and the
 *   daemon's VmRSS growth (/proc/PID/status) from before the scene was
 *   created to after that query, per shape.
 *
 * Usage: live_bench [--reposed BIN] [--data DIR] [--quick] [--only NAME]
 *                   [--configs N] [--duration S] [--default-limits]
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live_common.h"

#ifndef LB_REPOSED_PATH
#define LB_REPOSED_PATH "reposed"
#endif

/* Sizes: the large scene (100k shapes) and, for --quick, what keeps a smoke
 * run short; the watch section's counts; the ping section's raised limits
 * (see run_ping). */
#define LB_BIG 100000
#define LB_BIG_QUICK 10000
#define LB_CHUNK_BYTES (1u << 20) /* scene upload requests (see the top) */
#define LB_CLIENTS 16             /* throughput clients */
#define LB_TP_BATCH 1000          /* configurations per throughput check.batch */
#define LB_WATCHERS 100
#define LB_WATCHERS_QUICK 20
#define LB_PUTS 10000
#define LB_PUTS_QUICK 1000
#define LB_WATCH_SHAPES 1000 /* the watched scene */
#define LB_PUT_DEPTH 4       /* the writer's puts in flight */
#define LB_WATCH_ROUNDS 5    /* rounds of the puts, with and without watchers (medians) */
#define LB_MOVE_MM 5.0       /* a move: up to this many mm per axis */
#define LB_PING_BYTES (64u << 20)
#define LB_PING_WORK "1000000000000"

#define LB_SEED_QUERIES UINT64_C(0x9e7a11ce5eed0005)
#define LB_SEED_MOVES UINT64_C(0x30fe5eed00000006)

/* One scene.distance request line of one query shape. */
static void distance_line(lb_text *t, unsigned id, const char *scene, const rp_shape *q)
{
    t->len = 0;
    lb_add(
        t,
        "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"scene.distance\",\"params\":{\"scene\":\"%s\","
        "\"shape\":",
        id, scene);
    lb_add_shape(t, q);
    lb_add(t, "}}\n");
}

/* One scene.put request line of one shape. */
static void put_line(lb_text *t, unsigned id, const char *scene, const char *shape_id,
                     const rp_shape *s)
{
    lb_add(t,
           "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"scene.put\",\"params\":{\"scene\":\"%s\","
           "\"shapes\":{\"%s\":",
           id, scene, shape_id);
    lb_add_shape(t, s);
    lb_add(t, "}}}\n");
}

/* A scene.move of object "part": with `far`, to a random pose in the
 * scene's cube (a teleport: every shape changes its place in the tree);
 * else by up to LB_MOVE_MM per axis and a small turn from the identity (a
 * part nudged, as a shape is in the plain move). */
static void move_line(lb_text *t, unsigned id, const char *scene, kb_rng *rng, bool far)
{
    double q[4], n = 0, k = far ? 1.0 : LB_MOVE_MM * 1e-3;
    for (int i = 0; i < 4; i++) {
        q[i] = far || i == 0 ? kb_uniform(rng, -1, 1) : kb_uniform(rng, -k, k);
        if (!far && i == 0)
            q[i] = 1.0;
        n += q[i] * q[i];
    }
    n = sqrt(n);
    lb_add(t,
           "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"scene.move\",\"params\":{\"scene\":\"%s\","
           "\"objects\":{\"part\":{\"translation\":[%.17g,%.17g,%.17g],\"rotation\":{\"w\":%.17g,"
           "\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}}}}}\n",
           id, scene, kb_uniform(rng, -k, k), kb_uniform(rng, -k, k),
           far ? kb_uniform(rng, -0.5, 1.5) : kb_uniform(rng, -k, k), q[0] / n, q[1] / n, q[2] / n,
           q[3] / n);
}

/* A random query shape in the scene's cube, a sphere or a capsule as the
 * scene's shapes are (kin_common.h). */
static rp_shape query_shape(kb_rng *rng, size_t k)
{
    double x = kb_uniform(rng, -1, 1), y = kb_uniform(rng, -1, 1), z = kb_uniform(rng, -0.5, 1.5);
    double r = KB_RANDOM_RADIUS * kb_uniform(rng, 0.5, 1.0);
    rp_shape s;
    memset(&s, 0, sizeof s);
    if (k % 2 == 0) {
        s.kind = RP_SHAPE_SPHERE;
        s.sphere.center = (rp_vec3){x, y, z};
        s.sphere.radius = r;
    } else {
        double h = kb_uniform(rng, 0, 2 * KB_RANDOM_RADIUS);
        s.kind = RP_SHAPE_CAPSULE;
        s.capsule.a = (rp_vec3){x - h, y, z};
        s.capsule.b = (rp_vec3){x + h, y, z};
        s.capsule.radius = r;
    }
    return s;
}

/* s translated by up to LB_MOVE_MM per axis: a shape that a perception
 * update nudged. */
static rp_shape moved(const rp_shape *s, kb_rng *rng)
{
    double k = LB_MOVE_MM * 1e-3;
    rp_vec3 d = {kb_uniform(rng, -k, k), kb_uniform(rng, -k, k), kb_uniform(rng, -k, k)};
    rp_shape m = *s;
    if (m.kind == RP_SHAPE_SPHERE) {
        m.sphere.center.x += d.x, m.sphere.center.y += d.y, m.sphere.center.z += d.z;
    } else {
        m.capsule.a.x += d.x, m.capsule.a.y += d.y, m.capsule.a.z += d.z;
        m.capsule.b.x += d.x, m.capsule.b.y += d.y, m.capsule.b.z += d.z;
    }
    return m;
}

/* A check.batch request line (joint space, report first) of configurations
 * [first, first + n). */
static void batch_line(lb_text *t, unsigned id, const char *scene, const double *q, size_t dof,
                       size_t first, size_t n)
{
    t->len = 0;
    lb_add(
        t,
        "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"check.batch\",\"params\":{\"model\":\"arm7\","
        "\"scene\":\"%s\",\"report\":\"first\",\"joints\":[",
        id, scene);
    for (size_t k = first; k < first + n; k++) {
        if (k > first)
            lb_add(t, ",");
        lb_add_joints(t, &q[k * dof], dof);
    }
    lb_add(t, "]}}\n");
}

/* ---- the benchmark's state -------------------------------------------------------------- */

typedef struct bench {
    const char *bin;
    bool quick, default_limits;
    size_t big;      /* shapes of the large scene */
    size_t configs;  /* ping section */
    double duration; /* throughput window, s */
    kb_robot robot;
    kb_scene scene; /* `big` shapes; smaller scenes are its prefixes */
} bench;

/* The first n shapes of the large scene, as a scene of its own. */
static kb_scene prefix(const bench *b, size_t n)
{
    kb_scene s = b->scene;
    s.n = n < s.n ? n : s.n;
    return s;
}

/* ---- move: one shape moved, then a query ------------------------------------------------- */

static void run_move(bench *b)
{
    static const size_t all_sizes[] = {1000, 10000, 100000};
    size_t reps_q = b->quick ? 300 : 2000, max_m = b->quick ? 300 : 2000;
    size_t min_m = b->quick ? 10 : 30;
    double budget_ns = (b->quick ? 0.7 : 10.0) * 1e9; /* move+query per case */

    lb_daemon_start(b->bin, NULL, 0);
    lb_conn c;
    lb_conn_must_open(&c, lb_daemon_sock());
    printf("move: scene.put of one existing shape (moved <= %.0f mm per axis) then scene.distance "
           "of one shape, vs scene.distance alone; one connection, one request in flight; "
           "round trips in us\n",
           LB_MOVE_MM);
    printf("  %8s | %9s %9s | %9s %9s %9s | %9s %9s | %6s %5s\n", "shapes", "query_med",
           "query_p99", "mq_med", "mq_p99", "put_med", "ratio_med", "ratio_p99", "n_q", "n_mq");
    lb_text q, put;
    lb_text_init(&q);
    lb_text_init(&put);
    unsigned id = 1;
    for (size_t si = 0; si < sizeof all_sizes / sizeof all_sizes[0]; si++) {
        size_t n = all_sizes[si];
        if (n > b->big)
            continue;
        kb_scene s = prefix(b, n);
        char name[32];
        snprintf(name, sizeof name, "live%zu", n);
        lb_upload_scene(&c, name, &s, LB_CHUNK_BYTES);
        kb_rng qr = {LB_SEED_QUERIES}, mr = {LB_SEED_MOVES};
        size_t len;
        char *line;
        /* Warm-up: the tree is built by the first query after a change. */
        for (size_t k = 0; k < 20; k++) {
            rp_shape qs = query_shape(&qr, k);
            distance_line(&q, id++, name, &qs);
            line = lb_conn_call(&c, &q, NULL, &len);
            lb_must_ok(line, len, "scene.distance");
        }
        double *tq = kb_alloc(reps_q, sizeof *tq);
        for (size_t k = 0; k < reps_q; k++) {
            rp_shape qs = query_shape(&qr, k);
            distance_line(&q, id++, name, &qs);
            line = lb_conn_call(&c, &q, &tq[k], &len);
            lb_must_ok(line, len, "scene.distance");
        }
        double *tm = kb_alloc(max_m, sizeof *tm), *tp = kb_alloc(max_m, sizeof *tp);
        size_t n_m = 0;
        double t_start = kb_now_ns();
        while (n_m < max_m && (n_m < min_m || kb_now_ns() - t_start < budget_ns)) {
            size_t i = (size_t)(kb_next(&mr) % n);
            rp_shape ms = moved(&s.puts[i].shape, &mr);
            put.len = 0;
            put_line(&put, id++, name, s.puts[i].id, &ms);
            rp_shape qs = query_shape(&qr, n_m);
            distance_line(&q, id++, name, &qs);
            double t1, t2;
            line = lb_conn_call(&c, &put, &t1, &len);
            lb_must_ok(line, len, "scene.put");
            unsigned long long rev = lb_reply_revision(line);
            line = lb_conn_call(&c, &q, &t2, &len);
            lb_must_ok(line, len, "scene.distance");
            if (lb_reply_revision(line) != rev)
                lb_die("scene.distance answered at revision %llu after a put that made %llu",
                       lb_reply_revision(line), rev);
            tm[n_m] = t1 + t2;
            tp[n_m] = t1;
            n_m++;
        }
        double q_med = lb_pct(tq, reps_q, 50) / 1e3, q_p99 = lb_pct(tq, reps_q, 99) / 1e3;
        double m_med = lb_pct(tm, n_m, 50) / 1e3, m_p99 = lb_pct(tm, n_m, 99) / 1e3;
        double p_med = lb_pct(tp, n_m, 50) / 1e3;
        printf("  %8zu | %9.1f %9.1f | %9.1f %9.1f %9.1f | %9.1f %9.1f | %6zu %5zu\n", n, q_med,
               q_p99, m_med, m_p99, p_med, m_med / q_med, m_p99 / q_p99, reps_q, n_m);
        fflush(stdout);
        /* The same with an object of 10 shapes (proto/PROTOCOL.md, Objects)
         * moved by scene.move to a random pose, then a query. */
        put.len = 0;
        lb_add(&put,
               "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"scene.put\",\"params\":{"
               "\"scene\":\"%s\",\"objects\":{\"part\":{\"shapes\":{",
               id++, name);
        for (size_t k = 0; k < 10; k++) {
            lb_add(&put, "%s\"s%zu\":", k ? "," : "", k);
            lb_add_shape(&put, &s.puts[k].shape);
        }
        lb_add(&put, "}}}}}\n");
        line = lb_conn_call(&c, &put, NULL, &len);
        lb_must_ok(line, len, "scene.put objects");
        for (int far = 0; far < 2; far++) {
            n_m = 0;
            t_start = kb_now_ns();
            while (n_m < max_m && (n_m < min_m || kb_now_ns() - t_start < budget_ns)) {
                put.len = 0;
                move_line(&put, id++, name, &mr, far);
                rp_shape qs = query_shape(&qr, n_m);
                distance_line(&q, id++, name, &qs);
                double t1, t2;
                line = lb_conn_call(&c, &put, &t1, &len);
                lb_must_ok(line, len, "scene.move");
                unsigned long long rev = lb_reply_revision(line);
                line = lb_conn_call(&c, &q, &t2, &len);
                lb_must_ok(line, len, "scene.distance");
                if (lb_reply_revision(line) != rev)
                    lb_die("scene.distance answered at revision %llu after a move that made %llu",
                           lb_reply_revision(line), rev);
                tm[n_m] = t1 + t2;
                tp[n_m] = t1;
                n_m++;
            }
            m_med = lb_pct(tm, n_m, 50) / 1e3, m_p99 = lb_pct(tm, n_m, 99) / 1e3;
            p_med = lb_pct(tp, n_m, 50) / 1e3;
            printf("  %8s | %9s %9s | %9.1f %9.1f %9.1f | %9.1f %9.1f | %6s %5zu\n",
                   far ? "+teleport" : "+object", "", "", m_med, m_p99, p_med, m_med / q_med,
                   m_p99 / q_p99, "", n_m);
            fflush(stdout);
        }
        free(tq);
        free(tm);
        free(tp);
    }
    printf("  (mq: move+query, the put's and the query's round trips added; ratio: mq / query, "
           "of the medians and of the p99s; +object: the move is a scene.move of a 10-shape "
           "object nudged by <= %.0f mm per axis and a small turn, +teleport one to a random pose "
           "in the cube (every shape changes its place in the tree); put_med: the move's round "
           "trip; n_mq: as many as fit in %.1f s, at least %zu)\n",
           LB_MOVE_MM, budget_ns / 1e9, min_m);
    lb_text_free(&q);
    lb_text_free(&put);
    lb_conn_close(&c);
    lb_daemon_stop();
}

/* ---- ping: latency while a huge batch runs ------------------------------------------------- */

typedef struct batch_job {
    const char *sock;
    lb_text *lines;
    size_t n_lines;
    atomic_bool go, done;
    double t_start, t_end; /* ns */
    size_t valid, reply_bytes;
} batch_job;

/* The batch client: sends each request line and reads its reply, one after
 * the other, on its own connection. */
static void *batch_thread(void *arg)
{
    batch_job *j = arg;
    lb_conn c;
    lb_conn_must_open(&c, j->sock);
    while (!atomic_load(&j->go))
        lb_sleep_ms(1);
    j->t_start = kb_now_ns();
    for (size_t k = 0; k < j->n_lines; k++) {
        size_t len;
        char *line = lb_conn_call(&c, &j->lines[k], NULL, &len);
        lb_must_ok(line, len, "check.batch");
        j->valid += lb_count_in(line, "\"valid\":true");
        j->reply_bytes += len + 1;
    }
    j->t_end = kb_now_ns();
    lb_conn_close(&c);
    atomic_store(&j->done, true);
    return NULL;
}

static void run_ping(bench *b)
{
    /* 64 MiB and 10^12 pair tests: one 100,000-configuration batch of arm7
     * against 100k shapes is about 16 MB (just under the default 16 MiB;
     * --configs can ask for more) and, by the estimate in PROTOCOL.md,
     * 57 x 17 + 57 x 56 / 2 = 2,565 pair tests per configuration, 2.6e8 in
     * all (the default allows 5e7). */
    char bytes_flag[32];
    snprintf(bytes_flag, sizeof bytes_flag, "%u", LB_PING_BYTES);
    const char *extra[] = {"--max-request-bytes", bytes_flag, "--max-request-work", LB_PING_WORK};
    lb_daemon_start(b->bin, b->default_limits ? NULL : extra, b->default_limits ? 0 : 4);
    lb_conn c;
    lb_conn_must_open(&c, lb_daemon_sock());
    lb_upload_model(&c, &b->robot);
    lb_upload_scene(&c, "live", &b->scene, LB_CHUNK_BYTES);
    lb_limits lim = lb_get_limits(&c);

    /* The batch, split where the limits in force say so. */
    size_t dof = b->robot.dof, n = b->configs;
    double *q = kb_configs(&b->robot, n, KB_SEED_CONFIGS);
    size_t links = rp_model_link_count(b->robot.model);
    size_t depth = (size_t)ceil(log2((double)b->scene.n + 1));
    size_t per_config = links * depth + links * (links - 1) / 2;
    size_t by_work = lim.request_work / (per_config + per_config / 8 + dof); /* 12% headroom */
    size_t cap = lim.batch_configurations < by_work ? lim.batch_configurations : by_work;
    if (cap == 0)
        lb_die("max_request_work %zu is below one configuration's estimate", lim.request_work);
    lb_text *lines = NULL, one;
    size_t n_lines = 0, biggest = 0;
    lb_text_init(&one);
    for (size_t first = 0; first < n;) {
        /* As many configurations as the byte limit allows, found by
         * rendering: a line's length is not known until it is printed. */
        size_t take = n - first < cap ? n - first : cap;
        for (;;) {
            batch_line(&one, (unsigned)(n_lines + 1), "live", q, dof, first, take);
            if (one.len + 64 <= lim.request_bytes)
                break;
            if (take == 1)
                lb_die("one configuration does not fit max_request_bytes %zu", lim.request_bytes);
            take = take * (lim.request_bytes - 64) / one.len;
            take = take ? take : 1;
        }
        lines = lb_xrealloc(lines, (n_lines + 1) * sizeof *lines);
        lines[n_lines++] = one;
        biggest = one.len > biggest ? one.len : biggest;
        lb_text_init(&one);
        first += take;
    }
    lb_text_free(&one);
    free(q);

    printf("ping: one client sends check.batch of %zu arm7 configurations (joint space, report "
           "first, against %zu shapes) while another pings, one ping in flight\n",
           n, b->scene.n);
    if (n_lines == 1)
        printf("  the batch is one request of %zu bytes (daemon limits: max_request_bytes %zu, "
               "max_request_work %zu%s)\n",
               biggest, lim.request_bytes, lim.request_work,
               b->default_limits ? ", the defaults" : ", raised for this section");
    else
        printf("  the batch is SPLIT into %zu requests of up to %zu bytes, sent one after the "
               "other on one connection (limits in force: max_request_bytes %zu, "
               "max_batch_configurations %zu, max_request_work %zu; estimated %zu pair tests "
               "per configuration)\n",
               n_lines, biggest, lim.request_bytes, lim.batch_configurations, lim.request_work,
               per_config);

    lb_text ping;
    lb_text_init(&ping);
    lb_add(&ping, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n");
    size_t n_idle = b->quick ? 300 : 2000;
    double *idle = kb_alloc(n_idle, sizeof *idle);
    for (size_t k = 0; k < n_idle + 100; k++) {
        size_t len;
        double dt;
        char *line = lb_conn_call(&c, &ping, &dt, &len);
        lb_must_ok(line, len, "ping");
        if (k >= 100)
            idle[k - 100] = dt;
    }

    batch_job job;
    memset(&job, 0, sizeof job);
    job.sock = lb_daemon_sock();
    job.lines = lines;
    job.n_lines = n_lines;
    atomic_init(&job.go, false);
    atomic_init(&job.done, false);
    pthread_t th;
    if (pthread_create(&th, NULL, batch_thread, &job) != 0)
        lb_die("pthread_create failed");
    lb_samples sent = {0}, rtt = {0};
    lb_sleep_ms(50); /* the batch client connects */
    atomic_store(&job.go, true);
    while (!atomic_load(&job.done)) {
        double t0 = kb_now_ns(), dt;
        size_t len;
        char *line = lb_conn_call(&c, &ping, &dt, &len);
        lb_must_ok(line, len, "ping");
        lb_sample_add(&sent, t0);
        lb_sample_add(&rtt, dt);
    }
    pthread_join(th, NULL);

    /* The pings whose round trip overlapped the batch, including the one
     * that waited for it to finish. */
    lb_samples during = {0};
    for (size_t k = 0; k < sent.n; k++)
        if (sent.v[k] < job.t_end && sent.v[k] + rtt.v[k] > job.t_start)
            lb_sample_add(&during, rtt.v[k]);
    double wall = (job.t_end - job.t_start) / 1e9;
    printf("  %-14s %7s %10s %10s %10s\n", "ping", "n", "p50_us", "p99_us", "max_us");
    printf("  %-14s %7zu %10.1f %10.1f %10.1f\n", "idle", n_idle, lb_pct(idle, n_idle, 50) / 1e3,
           lb_pct(idle, n_idle, 99) / 1e3, lb_pct(idle, n_idle, 100) / 1e3);
    printf("  %-14s %7zu %10.1f %10.1f %10.1f\n", "during batch", during.n,
           lb_pct(during.v, during.n, 50) / 1e3, lb_pct(during.v, during.n, 99) / 1e3,
           lb_pct(during.v, during.n, 100) / 1e3);
    printf("  batch: wall %.3f s (first byte sent to last reply byte), %.0f configurations/s, "
           "%zu valid, %zu request(s), reply %zu bytes\n",
           wall, (double)n / wall, job.valid, n_lines, job.reply_bytes);
    printf("  (during batch: every ping whose round trip overlapped the batch's wall time, the "
           "sending of its request(s) included; max is the ping that waited longest)\n");
    free(idle);
    free(sent.v);
    free(rtt.v);
    free(during.v);
    lb_text_free(&ping);
    for (size_t k = 0; k < n_lines; k++)
        lb_text_free(&lines[k]);
    free(lines);
    lb_conn_close(&c);
    lb_daemon_stop();
}

/* ---- throughput: closed loop, many clients -------------------------------------------------- */

typedef struct drive_result {
    double rate;                   /* replies/s over the window */
    double p50_us, p99_us;         /* their round trips */
    double daemon_cpu, client_cpu; /* CPU seconds per second of the window */
    size_t n, errors;
} drive_result;

/* Keeps one request in flight on each of n_clients connections (request
 * k of client i is lines[(i + k * n_clients) % n_lines]), all driven from
 * this thread with poll(): one thread wakes up once for every reply that is
 * ready, so the client takes as little CPU from the daemon as it can.
 * Replies that arrive in the `measure_s` window after `warmup_s` count;
 * then no more requests are sent and the outstanding ones are drained, so
 * that the next measurement starts with an idle daemon. */
static drive_result drive(size_t n_clients, const lb_text *lines, size_t n_lines, double warmup_s,
                          double measure_s)
{
    lb_conn *cs = kb_alloc(n_clients, sizeof *cs);
    struct pollfd *pf = kb_alloc(n_clients, sizeof *pf);
    double *sent_at = kb_alloc(n_clients, sizeof *sent_at);
    size_t *next = kb_alloc(n_clients, sizeof *next);
    bool *busy = kb_alloc(n_clients, sizeof *busy);
    for (size_t i = 0; i < n_clients; i++) {
        lb_conn_must_open(&cs[i], lb_daemon_sock());
        pf[i].fd = cs[i].fd;
        pf[i].events = POLLIN;
        next[i] = i % n_lines;
    }
    lb_samples lat = {0};
    drive_result r;
    memset(&r, 0, sizeof r);
    double t0 = kb_now_ns(), t_meas = t0 + warmup_s * 1e9, t_end = t_meas + measure_s * 1e9;
    double cpu_d0 = 0, cpu_c0 = 0, t_first = 0;
    bool measuring = false;
    for (size_t i = 0; i < n_clients; i++) {
        const lb_text *l = &lines[next[i]];
        next[i] = (next[i] + n_clients) % n_lines;
        sent_at[i] = kb_now_ns();
        lb_conn_send(&cs[i], l->p, l->len);
        busy[i] = true;
    }
    size_t in_flight = n_clients;
    double drain_deadline = 0;
    while (in_flight) {
        int ready = poll(pf, (nfds_t)n_clients, 100);
        if (ready < 0 && errno != EINTR)
            lb_die("poll: %s", strerror(errno));
        double now = kb_now_ns();
        if (!measuring && now >= t_meas) {
            measuring = true;
            t_first = now;
            cpu_d0 = lb_daemon_cpu_s();
            cpu_c0 = lb_self_cpu_s();
        }
        bool stopping = now >= t_end;
        if (stopping && drain_deadline == 0) {
            drain_deadline = now + 30e9;
            double window_s = (now - t_first) / 1e9;
            if (window_s > 0) { /* 0 when one poll() spanned the whole window */
                r.daemon_cpu = (lb_daemon_cpu_s() - cpu_d0) / window_s;
                r.client_cpu = (lb_self_cpu_s() - cpu_c0) / window_s;
                r.rate = (double)r.n / window_s;
            }
        }
        if (drain_deadline != 0 && now > drain_deadline)
            lb_die("throughput: %zu replies still missing 30 s after the window", in_flight);
        for (size_t i = 0; i < n_clients && ready > 0; i++) {
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            lb_conn_fill(&cs[i]);
            size_t len;
            char *line;
            while ((line = lb_conn_take(&cs[i], &len))) {
                if (!busy[i])
                    lb_die("throughput: a reply nobody asked for: %.200s", line);
                double done = kb_now_ns();
                if (lb_reply_error(line, len)) {
                    if (r.errors++ == 0)
                        fprintf(stderr, "live_bench: throughput: %.300s\n", line);
                }
                if (measuring && !stopping) {
                    r.n++;
                    lb_sample_add(&lat, done - sent_at[i]);
                }
                busy[i] = false;
                in_flight--;
                if (!stopping) {
                    const lb_text *l = &lines[next[i]];
                    next[i] = (next[i] + n_clients) % n_lines;
                    sent_at[i] = kb_now_ns();
                    lb_conn_send(&cs[i], l->p, l->len);
                    busy[i] = true;
                    in_flight++;
                }
            }
        }
    }
    r.p50_us = lb_pct(lat.v, lat.n, 50) / 1e3;
    r.p99_us = lb_pct(lat.v, lat.n, 99) / 1e3;
    for (size_t i = 0; i < n_clients; i++)
        lb_conn_close(&cs[i]);
    free(lat.v);
    free(cs);
    free(pf);
    free(sent_at);
    free(next);
    free(busy);
    return r;
}

static void run_throughput(bench *b)
{
    bool threads = lb_daemon_has_option(b->bin, "--threads");
    int modes[2] = {1, 2}, n_modes = threads ? 2 : 1;
    if (!threads)
        modes[0] = 0;
    printf("throughput: closed loop, each client one request in flight, %.1f s window after "
           "%.1f s warm-up; scene of %zu shapes\n",
           b->duration, b->duration / 4, b->scene.n);
    if (!threads)
        printf("  threads: unsupported by this reposed (its --help has no --threads); default "
               "only\n");
    enum { W_BATCH1, W_BATCH16, W_DIST16, N_WORK };
    static const char *work_name[N_WORK] = {"check.batch x1", "check.batch x16",
                                            "scene.distance x16"};
    drive_result res[2][N_WORK];
    size_t dof = b->robot.dof;
    for (int m = 0; m < n_modes; m++) {
        char tflag[16];
        snprintf(tflag, sizeof tflag, "%d", modes[m]);
        const char *extra[] = {"--threads", tflag};
        lb_daemon_start(b->bin, modes[m] ? extra : NULL, modes[m] ? 2 : 0);
        lb_conn c;
        lb_conn_must_open(&c, lb_daemon_sock());
        lb_upload_model(&c, &b->robot);
        lb_upload_scene(&c, "live", &b->scene, LB_CHUNK_BYTES);
        /* Warm the tree, then leave the setup connection idle. */
        lb_text t;
        lb_text_init(&t);
        kb_rng qr = {LB_SEED_QUERIES};
        rp_shape qs = query_shape(&qr, 0);
        distance_line(&t, 1, "live", &qs);
        size_t len;
        char *line = lb_conn_call(&c, &t, NULL, &len);
        lb_must_ok(line, len, "scene.distance");
        lb_text_free(&t);

        lb_text batches[LB_CLIENTS], queries[1024];
        double *q = kb_configs(&b->robot, LB_CLIENTS * LB_TP_BATCH, KB_SEED_CONFIGS + 1);
        for (size_t k = 0; k < LB_CLIENTS; k++) {
            lb_text_init(&batches[k]);
            batch_line(&batches[k], (unsigned)k + 1, "live", q, dof, k * LB_TP_BATCH, LB_TP_BATCH);
        }
        free(q);
        for (size_t k = 0; k < 1024; k++) {
            lb_text_init(&queries[k]);
            rp_shape s = query_shape(&qr, k);
            distance_line(&queries[k], (unsigned)k + 1, "live", &s);
        }
        double warm = b->duration / 4;
        res[m][W_BATCH1] = drive(1, batches, LB_CLIENTS, warm, b->duration);
        res[m][W_BATCH16] = drive(LB_CLIENTS, batches, LB_CLIENTS, warm, b->duration);
        res[m][W_DIST16] = drive(LB_CLIENTS, queries, 1024, warm, b->duration);
        for (size_t k = 0; k < LB_CLIENTS; k++)
            lb_text_free(&batches[k]);
        for (size_t k = 0; k < 1024; k++)
            lb_text_free(&queries[k]);
        lb_conn_close(&c);
        lb_daemon_stop();
    }
    printf("  %-19s %-8s %10s %12s %10s %10s %7s %7s %6s\n", "workload", "threads", "req/s",
           "configs/s", "p50_us", "p99_us", "daemon", "client", "errors");
    for (int w = 0; w < N_WORK; w++)
        for (int m = 0; m < n_modes; m++) {
            const drive_result *r = &res[m][w];
            char cfg[32] = "-";
            if (w != W_DIST16)
                snprintf(cfg, sizeof cfg, "%.0f", r->rate * LB_TP_BATCH);
            char th[16] = "default";
            if (modes[m])
                snprintf(th, sizeof th, "%d", modes[m]);
            printf("  %-19s %-8s %10.1f %12s %10.1f %10.1f %6.0f%% %6.0f%% %6zu\n", work_name[w],
                   th, r->rate, cfg, r->p50_us, r->p99_us, 100 * r->daemon_cpu, 100 * r->client_cpu,
                   r->errors);
        }
    if (n_modes == 2) {
        printf("  ratio 2-thread/1-thread:");
        for (int w = 0; w < N_WORK; w++)
            printf(" %s %.2f%s", work_name[w], res[1][w].rate / res[0][w].rate,
                   w + 1 < N_WORK ? "," : "\n");
    }
    printf("  (check.batch: %d configurations per request, report first; x16: %d clients; "
           "daemon/client: CPU time over the window, 100%% = one core; this machine has %ld)\n",
           LB_TP_BATCH, LB_CLIENTS, sysconf(_SC_NPROCESSORS_ONLN));
}

/* ---- watch: notification fan-out ------------------------------------------------------------ */

typedef struct watch_reader {
    lb_conn *cs;
    size_t n, expect;
    size_t *changed, *resync, *other;
    size_t closed;           /* watchers the daemon disconnected */
    _Atomic double deadline; /* ns; 0 while the writer runs */
    double t_done;           /* when the last expected notification arrived, or 0 */
} watch_reader;

/* Counts one line a watcher received: notifications by method; anything
 * else (a reply, an unknown notification) as "other". */
static void watch_count(watch_reader *w, size_t i, const char *line)
{
    /* reposed writes one notification a line, members in this order: the
     * prefix decides the common case without a scan of the line (the
     * readers share this machine's cores with the daemon). */
    static const char changed[] = "{\"jsonrpc\":\"2.0\",\"method\":\"scene.changed\",";
    if (strncmp(line, changed, sizeof changed - 1) == 0) {
        w->changed[i]++;
        return;
    }
    size_t ch = lb_count_in(line, "\"method\":\"scene.changed\"");
    size_t rs = lb_count_in(line, "\"method\":\"scene.resync\"");
    w->changed[i] += ch;
    w->resync[i] += rs;
    w->other[i] += !ch && !rs;
}

/* Reads every watcher connection until each has `expect` scene.changed
 * notifications (or was closed), or the deadline passes. */
static void *watch_thread(void *arg)
{
    watch_reader *w = arg;
    struct pollfd *pf = kb_alloc(w->n, sizeof *pf);
    for (size_t i = 0; i < w->n; i++) {
        pf[i].fd = w->cs[i].fd;
        pf[i].events = POLLIN;
    }
    size_t complete = 0;
    while (complete + w->closed < w->n) {
        double dl = atomic_load(&w->deadline);
        if (dl != 0 && kb_now_ns() > dl)
            break;
        int ready = poll(pf, (nfds_t)w->n, 100);
        if (ready < 0 && errno != EINTR)
            lb_die("poll: %s", strerror(errno));
        for (size_t i = 0; i < w->n && ready > 0; i++) {
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            /* A watcher the daemon drops (too far behind) is counted, not
             * fatal: that is a result too. */
            bool open = lb_conn_read_some(&w->cs[i]);
            char *line;
            while ((line = lb_conn_take(&w->cs[i], NULL))) {
                bool was = w->changed[i] >= w->expect;
                watch_count(w, i, line);
                if (!was && w->changed[i] >= w->expect && ++complete == w->n)
                    w->t_done = kb_now_ns();
            }
            if (!open) {
                pf[i].fd = -1; /* poll skips it */
                w->closed++;
            }
        }
    }
    free(pf);
    return NULL;
}

/* The writer: puts lines[0..n) on c, `depth` in flight; returns the wall
 * time in ns. */
static double write_puts(lb_conn *c, const lb_text *puts, const size_t *off, size_t n, size_t depth)
{
    double t0 = kb_now_ns();
    size_t sent = 0, got = 0;
    while (got < n) {
        while (sent < n && sent - got < depth) {
            lb_conn_send(c, puts->p + off[sent], off[sent + 1] - off[sent]);
            sent++;
        }
        size_t len;
        char *line = lb_conn_line(c, &len);
        lb_must_ok(line, len, "scene.put");
        got++;
    }
    return kb_now_ns() - t0;
}

static void run_watch(bench *b)
{
    size_t n_watch = b->quick ? LB_WATCHERS_QUICK : LB_WATCHERS;
    size_t n_puts = b->quick ? LB_PUTS_QUICK : LB_PUTS;
    lb_daemon_start(b->bin, NULL, 0);
    lb_conn c;
    lb_conn_must_open(&c, lb_daemon_sock());
    kb_scene s = prefix(b, LB_WATCH_SHAPES);
    lb_upload_scene(&c, "watched", &s, LB_CHUNK_BYTES);

    lb_text watch;
    lb_text_init(&watch);
    lb_add(&watch, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.watch\",\"params\":{\"scene\":"
                   "\"watched\"}}\n");
    {
        lb_conn probe;
        lb_conn_must_open(&probe, lb_daemon_sock());
        size_t len;
        char *line = lb_conn_call(&probe, &watch, NULL, &len);
        long code = lb_reply_error(line, len);
        if (code == -32601) {
            printf("watch: unsupported by this reposed (scene.watch: method not found); "
                   "skipped\n");
        } else if (code) {
            printf("watch: scene.watch failed, skipped: %.300s\n", line);
        }
        lb_conn_close(&probe); /* its watch, if any, ends with it */
        if (code) {
            lb_text_free(&watch);
            lb_conn_close(&c);
            lb_daemon_stop();
            return;
        }
    }

    /* Every put moves one of the scene's shapes (round robin). */
    lb_text puts;
    lb_text_init(&puts);
    size_t *off = kb_alloc(n_puts + 1, sizeof *off);
    kb_rng mr = {LB_SEED_MOVES};
    for (size_t k = 0; k < n_puts; k++) {
        off[k] = puts.len;
        rp_shape m = moved(&s.puts[k % s.n].shape, &mr);
        put_line(&puts, (unsigned)k + 1, "watched", s.puts[k % s.n].id, &m);
    }
    off[n_puts] = puts.len;

    printf("watch: %zu single-shape scene.put requests on a %zu-shape scene, the writer "
           "pipelining %d deep on one connection; %zu watchers each sent scene.watch and only "
           "read\n",
           n_puts, s.n, LB_PUT_DEPTH, n_watch);
    /* Each figure is the median of LB_WATCH_ROUNDS rounds of the same puts
     * (the rounds are short: a fraction of a second). */
    double alone_r[LB_WATCH_ROUNDS], with_r[LB_WATCH_ROUNDS], done_r[LB_WATCH_ROUNDS];
    for (int r = 0; r < LB_WATCH_ROUNDS; r++)
        alone_r[r] = write_puts(&c, &puts, off, n_puts, LB_PUT_DEPTH);
    double alone = kb_median(alone_r, LB_WATCH_ROUNDS);

    watch_reader w;
    memset(&w, 0, sizeof w);
    w.n = n_watch;
    w.expect = n_puts;
    w.cs = kb_alloc(n_watch, sizeof *w.cs);
    w.changed = kb_alloc(n_watch, sizeof *w.changed);
    w.resync = kb_alloc(n_watch, sizeof *w.resync);
    w.other = kb_alloc(n_watch, sizeof *w.other);
    atomic_init(&w.deadline, 0.0);
    for (size_t i = 0; i < n_watch; i++) {
        lb_conn_must_open(&w.cs[i], lb_daemon_sock());
        size_t len;
        char *line = lb_conn_call(&w.cs[i], &watch, NULL, &len);
        /* Notifications carry no id; a daemon may send some (a snapshot, a
         * resync) before the reply. */
        while (!strstr(line, "\"id\":")) {
            watch_count(&w, i, line);
            line = lb_conn_line(&w.cs[i], &len);
        }
        lb_must_ok(line, len, "scene.watch");
    }
    bool all_done = true;
    for (int r = 0; r < LB_WATCH_ROUNDS; r++) {
        w.expect = n_puts * (size_t)(r + 1);
        w.t_done = 0;
        atomic_store(&w.deadline, 0.0);
        pthread_t th;
        if (pthread_create(&th, NULL, watch_thread, &w) != 0)
            lb_die("pthread_create failed");
        double t0 = kb_now_ns();
        with_r[r] = write_puts(&c, &puts, off, n_puts, LB_PUT_DEPTH);
        atomic_store(&w.deadline, kb_now_ns() + (b->quick ? 10e9 : 60e9));
        pthread_join(th, NULL);
        done_r[r] = w.t_done - t0;
        all_done &= w.t_done != 0;
    }
    double with = kb_median(with_r, LB_WATCH_ROUNDS);
    n_puts *= LB_WATCH_ROUNDS; /* what each watcher should have had, in all */

    size_t min_ch = SIZE_MAX, max_ch = 0, resyncs = 0, others = 0, full = 0;
    for (size_t i = 0; i < n_watch; i++) {
        min_ch = w.changed[i] < min_ch ? w.changed[i] : min_ch;
        max_ch = w.changed[i] > max_ch ? w.changed[i] : max_ch;
        resyncs += w.resync[i];
        others += w.other[i];
        full += w.changed[i] >= n_puts;
    }
    size_t per_round = n_puts / LB_WATCH_ROUNDS;
    printf("  %-16s %10s %12s   (medians of %d rounds)\n", "", "puts/s", "wall_s", LB_WATCH_ROUNDS);
    printf("  %-16s %10.0f %12.3f\n", "no watchers", (double)per_round / (alone / 1e9),
           alone / 1e9);
    printf("  %-16s %10.0f %12.3f\n", "with watchers", (double)per_round / (with / 1e9),
           with / 1e9);
    printf("  ratio with/without watchers: %.2f\n", alone / with);
    if (all_done) {
        double done = kb_median(done_r, LB_WATCH_ROUNDS);
        printf("  every watcher had a round's %zu notifications %.3f s after its first put (%.0f "
               "notifications/s delivered)\n",
               per_round, done / 1e9, (double)(per_round * n_watch) / (done / 1e9));
    } else
        printf("  NOT every watcher got its %zu notifications (the reader stops when the rest "
               "are complete or disconnected, or %.0f s after the last put)\n",
               n_puts, b->quick ? 10.0 : 60.0);
    printf("  scene.changed per watcher: min %zu, max %zu (expected %zu); %zu of %zu watchers "
           "complete; scene.resync %zu; other lines %zu; watchers disconnected by the daemon "
           "%zu\n",
           min_ch, max_ch, n_puts, full, n_watch, resyncs, others, w.closed);
    for (size_t i = 0; i < n_watch; i++)
        lb_conn_close(&w.cs[i]);
    free(w.cs);
    free(w.changed);
    free(w.resync);
    free(w.other);
    free(off);
    lb_text_free(&puts);
    lb_text_free(&watch);
    lb_conn_close(&c);
    lb_daemon_stop();
}

/* ---- memory: bytes per shape ----------------------------------------------------------------- */

/* Prints every numeric member of stats.memory, whole and per shape. */
static void print_memory(const char *when, const cJSON *stats, size_t shapes)
{
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(stats, "memory"), *m;
    cJSON_ArrayForEach(m, mem)
    {
        if (!cJSON_IsNumber(m))
            continue;
        printf("  stats memory.%-12s %-18s %12.0f B  %8.1f B/shape\n", m->string, when,
               m->valuedouble, shapes ? m->valuedouble / (double)shapes : 0.0);
    }
}

static void run_memory(bench *b)
{
    lb_daemon_start(b->bin, NULL, 0);
    lb_conn c;
    lb_conn_must_open(&c, lb_daemon_sock());
    cJSON *st0 = lb_get_stats(&c);
    size_t rss0 = lb_daemon_rss();
    size_t n_req = lb_upload_scene(&c, "live", &b->scene, LB_CHUNK_BYTES);
    size_t rss1 = lb_daemon_rss();
    cJSON *st1 = lb_get_stats(&c);
    lb_text t;
    lb_text_init(&t);
    kb_rng qr = {LB_SEED_QUERIES};
    rp_shape qs = query_shape(&qr, 0);
    distance_line(&t, 1, "live", &qs);
    size_t len;
    char *line = lb_conn_call(&c, &t, NULL, &len);
    lb_must_ok(line, len, "scene.distance");
    size_t rss2 = lb_daemon_rss();
    cJSON *st2 = lb_get_stats(&c);
    size_t n = lb_json_size(st2, "shapes");
    printf("memory: %zu shapes (stats.shapes %zu), sent in %zu requests of <= %u bytes\n",
           b->scene.n, n, n_req, LB_CHUNK_BYTES);
    print_memory("empty", st0, b->scene.n);
    print_memory("after create", st1, b->scene.n);
    print_memory("after 1 query", st2, b->scene.n);
    printf("  VmRSS before %zu kB, after create %zu kB, after 1 query %zu kB: growth %.1f B/shape "
           "(create only %.1f B/shape)\n",
           rss0 / 1024, rss1 / 1024, rss2 / 1024,
           ((double)rss2 - (double)rss0) / (double)b->scene.n,
           ((double)rss1 - (double)rss0) / (double)b->scene.n);
    printf("  (store_bytes: what the store counts for scenes, their trees and models; a scene's "
           "tree is built by the first query after a change.  VmRSS also holds what the "
           "allocator kept from parsing the requests)\n");
    cJSON_Delete(st0);
    cJSON_Delete(st1);
    cJSON_Delete(st2);
    lb_text_free(&t);
    lb_conn_close(&c);
    lb_daemon_stop();
}

/* ---- main --------------------------------------------------------------------------------- */

static size_t arg_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v == 0)
        lb_die("bad count: %s", s);
    return (size_t)v;
}

int main(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.bin = LB_REPOSED_PATH;
    const char *data = KB_DATA_DIR, *only = NULL;
    size_t configs = 0;
    double duration = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--reposed") && more)
            b.bin = argv[++i];
        else if (!strcmp(a, "--data") && more)
            data = argv[++i];
        else if (!strcmp(a, "--only") && more)
            only = argv[++i];
        else if (!strcmp(a, "--configs") && more)
            configs = arg_size(argv[++i]);
        else if (!strcmp(a, "--duration") && more) {
            duration = atof(argv[++i]);
            if (!(duration > 0))
                lb_die("bad duration: %s", argv[i]);
        } else if (!strcmp(a, "--quick"))
            b.quick = true;
        else if (!strcmp(a, "--default-limits"))
            b.default_limits = true;
        else {
            fprintf(stderr, "usage: live_bench [--reposed BIN] [--data DIR] [--quick] "
                            "[--only move|ping|throughput|watch|memory] [--configs N] "
                            "[--duration S] [--default-limits]\n");
            return 2;
        }
    }
    static const char *sections[] = {"move", "ping", "throughput", "watch", "memory"};
    bool known = !only;
    for (size_t k = 0; k < 5 && !known; k++)
        known = !strcmp(only, sections[k]);
    if (!known)
        lb_die("--only: no section '%s' (move, ping, throughput, watch, memory)", only);
    signal(SIGPIPE, SIG_IGN);

    b.big = b.quick ? LB_BIG_QUICK : LB_BIG;
    b.configs = configs ? configs : b.quick ? 5000 : 100000;
    b.duration = duration > 0 ? duration : b.quick ? 0.5 : 3.0;
    rp_store *st = rp_store_new(NULL);
    if (!st)
        lb_die("out of memory");
    kb_robot_load(&b.robot, data, st, "arm7", true);
    kb_scene_random(&b.scene, b.robot.model, b.big, KB_RANDOM_RADIUS, KB_RANDOM_BUBBLE);

    printf("live_bench: reposed %s over a Unix socket; large scene %zu shapes; arm7 %zu shapes, "
           "%zu joints%s\n\n",
           b.bin, b.scene.n, rp_model_link_count(b.robot.model), b.robot.dof,
           b.quick ? " (--quick)" : "");
    fflush(stdout);
    for (size_t k = 0; k < 5; k++) {
        if (only && strcmp(only, sections[k]))
            continue;
        double t0 = kb_now_ns();
        switch (k) {
        case 0:
            run_move(&b);
            break;
        case 1:
            run_ping(&b);
            break;
        case 2:
            run_throughput(&b);
            break;
        case 3:
            run_watch(&b);
            break;
        default:
            run_memory(&b);
            break;
        }
        printf("  [%s: %.1f s]\n", sections[k], (kb_now_ns() - t0) / 1e9);
        printf("\n");
        fflush(stdout);
    }
    kb_scene_free(&b.scene);
    kb_robot_free(&b.robot);
    rp_store_free(st);
    return 0;
}
