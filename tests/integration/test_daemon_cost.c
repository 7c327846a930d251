/* SPDX-License-Identifier: MIT */
/*
 * The cost model of proto/PROTOCOL.md (Limits): every request is priced
 * from its inputs before it runs, a line on the event loop has the smaller
 * max_loop_work budget, and the attacks that used to hold the loop or eat
 * memory are refused or cheap.  Each case runs its attack while a second
 * client pings every few milliseconds; the longest wait is printed for the
 * notes (asserted only as answered: no test asserts a timing).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "daemon_util.h"

/* ---- a second client pinging ------------------------------------------------- */

typedef struct pinger {
    pthread_t tid;
    rh_conn *c;
    atomic_int stop;
    long long max_wait_ms;
    long pings;
    int failed; /* a ping went unanswered (no cmocka calls on this thread) */
} pinger;

static void *pinger_main(void *arg)
{
    pinger *p = arg;
    while (!atomic_load(&p->stop)) {
        long long t0 = rh_now_ms();
        const char *line = rh_call(p->c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
        if (!line || !strstr(line, "\"pong\":true")) {
            p->failed = 1;
            return NULL;
        }
        long long w = rh_now_ms() - t0;
        if (w > p->max_wait_ms)
            p->max_wait_ms = w;
        p->pings++;
        rh_sleep_ms(2);
    }
    return NULL;
}

/* The one pinger, in static storage: the teardown of a failed test stops
 * it before its connection is closed under it, after the test's frame is
 * gone. */
static pinger the_pinger;
static pinger *running;

static pinger *pinger_start(const rh_daemon *d)
{
    pinger *p = &the_pinger;
    memset(p, 0, sizeof *p);
    p->c = connect_ok(d, true);
    assert_int_equal(pthread_create(&p->tid, NULL, pinger_main, p), 0);
    running = p;
    rh_sleep_ms(20);
    return p;
}

static void pinger_join(pinger *p)
{
    atomic_store(&p->stop, 1);
    pthread_join(p->tid, NULL);
    running = NULL;
}

static int cost_teardown(void **state)
{
    if (running)
        pinger_join(running);
    return rh_teardown(state);
}

/* Stops the pinger, fails the test if a ping went unanswered, and prints
 * the longest wait for the notes. */
static void pinger_stop(pinger *p, const char *attack)
{
    rh_sleep_ms(20);
    pinger_join(p);
    if (p->failed)
        fail_msg("%s: a ping from the second client went unanswered", attack);
    assert_true(p->pings > 0);
    printf("# %s: %ld pings, longest wait %lld ms\n", attack, p->pings, p->max_wait_ms);
    rh_close(p->c);
}

/* ---- requests ---------------------------------------------------------------- */

/* Sends a request built by tb_printf and returns its parsed reply. */
static cJSON *call_buf(rh_conn *c, textbuf *b)
{
    assert_true(rh_send_line(c, b->p));
    free(b->p);
    memset(b, 0, sizeof *b);
    return read_json(c);
}

static void expect_ok(cJSON *r, const char *what)
{
    if (!at(r, "result"))
        fail_msg("%s: want a result, got %.400s", what, show(r));
    cJSON_Delete(r);
}

/* Expects -32004 naming `limit`; returns the error message (static copy). */
static const char *expect_limit(cJSON *r, const char *limit, const char *what)
{
    static char msg[512];
    const cJSON *e = at(r, "error");
    if (!e || num_at(e, "code") != -32004 || !at(e, "data.limit") ||
        strcmp(str_at(e, "data.limit"), limit) != 0)
        fail_msg("%s: want -32004 %s, got %.400s", what, limit, show(r));
    snprintf(msg, sizeof msg, "%s", str_at(e, "message"));
    cJSON_Delete(r);
    return msg;
}

/* model.put of a frame-indexed model: n sphere links l0..l(n-1) on frames
 * 0 and 1, `pairs` allowed self pairs (l0, lj), repeating, and `scene_pairs` allowed
 * scene pairs (l(i mod n), o<i>). */
static void frame_model_request(textbuf *b, const char *name, int n, int pairs, int scene_pairs)
{
    tb_printf(b,
              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":{\"model\":\"%s\","
              "\"links\":[",
              name);
    for (int i = 0; i < n; i++)
        tb_printf(b,
                  "%s{\"id\":\"l%d\",\"frame\":%d,\"shape\":{\"sphere\":{\"center\":[%d,0,0],"
                  "\"radius\":0.25}}}",
                  i ? "," : "", i, i % 2, i);
    tb_printf(b, "],\"allowed_pairs\":[");
    for (int i = 0; i < pairs; i++)
        tb_printf(b, "%s[\"l0\",\"l%d\"]", i ? "," : "", 1 + i % (n - 1));
    tb_printf(b, "],\"allowed_scene\":[");
    for (int i = 0; i < scene_pairs; i++)
        tb_printf(b, "%s[\"l%d\",\"o%d\"]", i ? "," : "", i % n, i);
    tb_printf(b, "]}}");
}

/* A check of model "m" (two frames at the identity) with `attached` spheres
 * on l0, each with `touch` touch links l0..l(touch-1), and `scene_pairs`
 * allowed scene pairs (l(i mod 24), o<i>). */
static void check_request(textbuf *b, int attached, int touch, int scene_pairs)
{
    tb_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"check\",\"params\":{\"model\":\"m\","
                 "\"frames\":[{},{}],\"attached\":[");
    for (int i = 0; i < attached; i++) {
        tb_printf(b,
                  "%s{\"id\":\"a%d\",\"link\":\"l0\",\"shape\":{\"sphere\":{\"center\":[0,0,0],"
                  "\"radius\":0.1}}",
                  i ? "," : "", i);
        if (touch) {
            tb_printf(b, ",\"touch_links\":[");
            for (int t = 0; t < touch; t++)
                tb_printf(b, "%s\"l%d\"", t ? "," : "", t);
            tb_printf(b, "]");
        }
        tb_printf(b, "}");
    }
    tb_printf(b, "],\"allowed_scene\":[");
    for (int i = 0; i < scene_pairs; i++)
        tb_printf(b, "%s[\"l%d\",\"o%d\"]", i ? "," : "", i % 24, i);
    tb_printf(b, "]}}");
}

/* Heavier workloads outside valgrind. */
static int scaled(int full, int wrapped)
{
    return rh_wrapped() ? wrapped : full;
}

/* ---- the cases ---------------------------------------------------------------- */

/* A batch of scene.get too large to send: what each element built and
 * dropped counts against the line's max_reply_bytes, so after the first the
 * line's room is spent (a scene.get that would fit alone is refused too),
 * and the batch runs on a worker while other clients are served. */
static void discarded_replies_spend_the_lines_room(void **state)
{
    (void)state;
    static const char *const flags[] = {"--max-reply-bytes", "1048576", NULL};
    rh_daemon *d = start(flags);
    rh_conn *c = connect_ok(d, false);
    /* 19,000 shapes: the reply's lower bound (about 50 bytes a shape) fits
     * in 1 MiB, the reply itself (about 62) does not, so it is built up
     * to the limit before it is refused. */
    create_big_scene(c, "big", 19000);
    expect_ok(call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":"
                           "{\"scene\":\"small\",\"shapes\":{\"a\":{\"sphere\":{\"center\":"
                           "[0,0,0],\"radius\":1}}}}}"),
              "small scene");
    /* Alone, the small scene's get fits. */
    expect_ok(call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.get\",\"params\":"
                           "{\"scene\":\"small\"}}"),
              "scene.get small");
    pinger *p = pinger_start(d);
    textbuf b = {0};
    tb_printf(&b, "[");
    for (int i = 0; i < 100; i++)
        tb_printf(&b,
                  "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.get\",\"params\":"
                  "{\"scene\":\"big\"}}",
                  i ? "," : "", i);
    tb_printf(&b, ",{\"jsonrpc\":\"2.0\",\"id\":100,\"method\":\"scene.get\",\"params\":"
                  "{\"scene\":\"small\"}}]");
    cJSON *r = call_buf(c, &b);
    pinger_stop(p, "100 oversized scene.get in one batch");
    assert_true(cJSON_IsArray(r));
    assert_int_equal(cJSON_GetArraySize(r), 101);
    for (const cJSON *e = r->child; e; e = e->next)
        if (num_at(e, "error.code") != -32004 ||
            strcmp(str_at(e, "error.data.limit"), "max_reply_bytes") != 0)
            fail_msg("want -32004 max_reply_bytes for every element, got %.300s", show(e));
    cJSON_Delete(r);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

/* model.put runs on the event loop: its allowed scene pairs are priced
 * (RP_WORK_SCENE_PAIR each, plus the shapes each names) before they are
 * decoded, so a million of them is refused against max_loop_work, on both
 * model forms, while a modest model still goes in. */
static void model_put_pairs_are_priced_before_the_build(void **state)
{
    (void)state;
    /* Under valgrind, a budget 25 times smaller and pairs to match. */
    static const char *const flags[] = {"--max-request-bytes", "67108864", NULL};
    static const char *const wrapped[] = {"--max-request-bytes", "67108864", "--max-loop-work",
                                          "200000", NULL};
    rh_daemon *d = start(rh_wrapped() ? wrapped : flags);
    rh_conn *c = connect_ok(d, false);
    pinger *p = pinger_start(d);
    /* Frame form: 4096 links, a million scene pairs (old daemons: pairs x
     * links string comparisons, about 20 s). */
    textbuf b = {0};
    frame_model_request(&b, "big", 4096, 0, scaled(1000000, 40000));
    const char *m = expect_limit(call_buf(c, &b), "max_loop_work", "frame model, 1M scene pairs");
    assert_non_null(strstr(m, "event loop"));
    /* Kinematic: 4096 shapes on one link, 10,000 pairs naming that link:
     * 41 million exclusions (old daemons built them, about 330 MB). */
    tb_printf(&b,
              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":{\"model\":\"k\","
              "\"joints\":[{\"name\":\"j\",\"type\":\"revolute\",\"parent\":\"base\","
              "\"child\":\"arm\",\"axis\":[0,0,1],\"limits\":{\"lower\":-3,\"upper\":3}}],"
              "\"links\":[");
    for (int i = 0; i < 4096; i++)
        tb_printf(&b,
                  "%s{\"id\":\"s%d\",\"link\":\"arm\",\"shape\":{\"sphere\":{\"center\":"
                  "[0,0,0],\"radius\":0.1}}}",
                  i ? "," : "", i);
    tb_printf(&b, "],\"allowed_scene\":[");
    for (int i = 0; i < 10000; i++)
        tb_printf(&b, "%s[\"arm\",\"o%d\"]", i ? "," : "", i);
    tb_printf(&b, "]}}");
    expect_limit(call_buf(c, &b), "max_loop_work", "kinematic model, 10k pairs x 4096 shapes");
    /* Refused means nothing changed. */
    cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"model.list\"}");
    assert_int_equal(cJSON_GetArraySize(at(r, "result.models")), 0);
    cJSON_Delete(r);
    /* A model the budget admits: 24 links, 100,000 scene pairs (10,000
     * under valgrind). */
    frame_model_request(&b, "m", 24, 0, scaled(100000, 10000));
    expect_ok(call_buf(c, &b), "24 links, 100k scene pairs");
    pinger_stop(p, "model.put with 1M allowed scene pairs");
    rh_close(c);
    stop_ok(d);
}

/* A check with 4096 attached shapes on a model with 100,000 allowed pairs:
 * an attached shape takes its link's row of the skip table instead of a
 * list of attached x pairs (old daemons: 21 s and 6.5 GB).  Run under a
 * 2 GiB address-space limit where the daemon is not sanitized: old daemons
 * retried the failed allocation for minutes. */
static void attached_shapes_times_allowed_pairs_stay_small(void **state)
{
    (void)state;
    struct rlimit old_as;
    assert_int_equal(getrlimit(RLIMIT_AS, &old_as), 0);
    bool limited = false;
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    if (!rh_wrapped()) {
        struct rlimit as = {(rlim_t)2 << 30, old_as.rlim_max};
        limited = setrlimit(RLIMIT_AS, &as) == 0; /* the daemon inherits it */
    }
#endif
    static const char *const flags[] = {"--max-request-bytes", "67108864", NULL};
    rh_daemon *d = start(flags);
    if (limited)
        assert_int_equal(setrlimit(RLIMIT_AS, &old_as), 0);
    rh_conn *c = connect_ok(d, false);
    textbuf b = {0};
    frame_model_request(&b, "m", 24, 100000, 0);
    expect_ok(call_buf(c, &b), "24 links, 100k allowed pairs");
    long rss_before = rh_rss_kb(d);
    pinger *p = pinger_start(d);
    check_request(&b, scaled(4096, 1024), 0, 0);
    cJSON *r = call_buf(c, &b);
    pinger_stop(p, "check with 4096 attached x 100k allowed pairs");
    if (!cJSON_IsBool(at(r, "result.collision")))
        fail_msg("check: want a result, got %.300s", show(r));
    cJSON_Delete(r);
    long rss_after = rh_rss_kb(d);
    printf("# RSS %ld -> %ld kB%s\n", rss_before, rss_after,
           limited ? " (address space limited to 2 GiB)" : "");
    assert_true(rss_after - rss_before < 1024 * 1024); /* far below the 6.5 GB */
    rh_close(c);
    stop_ok(d);
}

/* Request allowed_scene pairs and touch links are looked up by hash, and
 * priced: 100,000 pairs on a check, and 4096 attached shapes with 24 touch
 * links each, are answered; a million attached shapes' worth of touch
 * pairs over the budget is refused. */
static void request_pairs_and_touch_links_are_cheap_and_priced(void **state)
{
    (void)state;
    static const char *const flags[] = {"--max-request-bytes", "67108864", NULL};
    rh_daemon *d = start(flags);
    rh_conn *c = connect_ok(d, false);
    textbuf b = {0};
    frame_model_request(&b, "m", 24, 0, 0);
    expect_ok(call_buf(c, &b), "model");
    pinger *p = pinger_start(d);
    check_request(&b, 0, 0, scaled(100000, 20000));
    expect_ok(call_buf(c, &b), "check with 100k allowed_scene pairs");
    check_request(&b, scaled(4096, 1024), 24, 0);
    expect_ok(call_buf(c, &b), "check with 4096 attached x 24 touch links");
    pinger_stop(p, "check with 100k scene pairs, then 4096 attached x 24 touch links");
    /* With a budget of 100,000 units, the same attached shapes are refused. */
    rh_close(c);
    stop_ok(d);
    static const char *const low[] = {"--max-request-work", "100000", NULL};
    d = start(low);
    c = connect_ok(d, false);
    frame_model_request(&b, "m", 24, 0, 0);
    expect_ok(call_buf(c, &b), "model");
    check_request(&b, 4096, 24, 0);
    expect_limit(call_buf(c, &b), "max_request_work", "4096 attached x 24 touch, low budget");
    check_request(&b, 0, 0, 10000);
    expect_limit(call_buf(c, &b), "max_request_work", "10k scene pairs, low budget");
    rh_close(c);
    stop_ok(d);
}

/* A discrete check.motion's states follow from the path and the
 * resolution: one that needs more than the budget is refused before any
 * state is checked, and the message gives the exact count (old daemons
 * checked 25 million states first). */
static void discrete_motion_over_budget_is_refused_before_any_state(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    expect_ok(call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":{"
                           "\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"revolute\","
                           "\"parent\":\"base\",\"child\":\"arm\",\"axis\":[0,0,1],\"limits\":"
                           "{\"lower\":-4,\"upper\":4}}],\"links\":[{\"id\":\"s\",\"link\":\"arm\","
                           "\"shape\":{\"sphere\":{\"center\":[1,0,0],\"radius\":0.1}}}]}}"),
              "model");
    pinger *p = pinger_start(d);
    /* 6 / 2^-20 = 6,291,456 steps: 6,291,457 states with both ends. */
    const char *m = expect_limit(
        call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"check.motion\",\"params\":{"
                     "\"model\":\"k\",\"path\":[[-3],[3]],\"resolution\":9.5367431640625e-07}}"),
        "max_request_work", "check.motion of 6.3M states");
    if (!strstr(m, "needs 6291457 states"))
        fail_msg("want the exact state count in the message, got: %s", m);
    /* The same path at a resolution the budget allows is answered. */
    expect_ok(call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"check.motion\",\"params\":{"
                           "\"model\":\"k\",\"path\":[[-3],[3]],\"resolution\":0.001}}"),
              "check.motion of 6001 states");
    /* Certified motions cannot be counted in advance: they stop when the
     * budget is spent, also with -32004. */
    pinger_stop(p, "check.motion over budget");
    rh_close(c);
    stop_ok(d);
}

/* A batch of puts on a scene with many watches: the fan-out goes out over
 * several turns of the event loop (RPD_WATCH_FLUSH_SENDS changes a turn),
 * every watch still gets every change in order, and other clients are
 * served in between. */
static void watch_fan_out_is_spread_over_turns(void **state)
{
    (void)state;
    enum { CONNS = 16, WATCHES = 256, PUTS = 10 };
    int conns = scaled(CONNS, 4);
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    expect_ok(call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":"
                           "{\"scene\":\"w\"}}"),
              "scene");
    rh_conn *w[CONNS];
    int base[CONNS]; /* a connection's watches have consecutive ids */
    double start_rev = 0;
    for (int k = 0; k < conns; k++) {
        w[k] = connect_ok(d, false);
        textbuf b = {0};
        tb_printf(&b, "[");
        for (int i = 0; i < WATCHES; i++)
            tb_printf(&b,
                      "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.watch\",\"params\":"
                      "{\"scene\":\"w\"}}",
                      i ? "," : "", i);
        tb_printf(&b, "]");
        cJSON *r = call_buf(w[k], &b);
        assert_int_equal(cJSON_GetArraySize(r), WATCHES);
        base[k] = (int)num_at(r->child, "result.watch");
        start_rev = num_at(r->child, "result.revision");
        for (int i = 0; i < WATCHES; i++)
            assert_int_equal((int)num_at(cJSON_GetArrayItem(r, i), "result.watch"), base[k] + i);
        cJSON_Delete(r);
    }
    pinger *p = pinger_start(d);
    textbuf b = {0};
    tb_printf(&b, "[");
    for (int i = 0; i < PUTS; i++)
        tb_printf(&b,
                  "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":"
                  "{\"scene\":\"w\",\"shapes\":{\"p%d\":{\"sphere\":{\"center\":[%d,0,0],"
                  "\"radius\":1}}}}}",
                  i ? "," : "", i, i, i);
    tb_printf(&b, "]");
    cJSON *r = call_buf(c, &b);
    assert_int_equal(cJSON_GetArraySize(r), PUTS);
    double last = num_at(cJSON_GetArrayItem(r, PUTS - 1), "result.revision");
    cJSON_Delete(r);
    /* Every watch of every connection hears of revisions 2..PUTS+1 in
     * order, or of a resync at the last one. */
    for (int k = 0; k < conns; k++) {
        double seen[WATCHES];
        for (int i = 0; i < WATCHES; i++)
            seen[i] = start_rev;
        int done = 0;
        while (done < WATCHES) {
            const char *line;
            size_t len;
            assert_int_equal(rh_read_line(w[k], rh_ms(RH_TIMEOUT_MS), &line, &len), RH_LINE);
            cJSON *n = cJSON_ParseWithLength(line, len);
            assert_non_null(n);
            int id = (int)num_at(n, "params.watch");
            double rev = num_at(n, "params.revision");
            const char *method = str_at(n, "method");
            int slot = id - base[k];
            if (slot < 0 || slot >= WATCHES)
                fail_msg("watch id %d out of this connection's range", id);
            if (strcmp(method, "scene.changed") == 0 && rev != seen[slot] + 1)
                fail_msg("watch %d: revision %.0f after %.0f", id, rev, seen[slot]);
            if (strcmp(method, "scene.resync") == 0 && rev != last)
                fail_msg("watch %d: resync at %.0f, not %.0f", id, rev, last);
            seen[slot] = rev;
            if (rev == last)
                done++;
            cJSON_Delete(n);
        }
    }
    pinger_stop(p, "10 puts fanned out to watches");
    for (int k = 0; k < conns; k++)
        rh_close(w[k]);
    rh_close(c);
    stop_ok(d);
}

/* Lines of 64 KiB and more are parsed on a worker and handed back to the
 * event loop: clients that send one and leave at once must cost nothing
 * (no leak, no use of the gone connection: ASan and valgrind run this),
 * and whatever ran must be whole. */
static void large_lines_of_clients_that_left_are_handled(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    textbuf b = {0};
    tb_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.put\",\"params\":"
                  "{\"scene\":\"gone\",\"create\":true,\"shapes\":{");
    for (int i = 0; i < 2000; i++) /* about 90 KiB */
        tb_printf(&b, "%s\"s%d\":{\"sphere\":{\"center\":[%d,0,0],\"radius\":0.5}}", i ? "," : "",
                  i, i);
    tb_printf(&b, "}}}\n");
    for (int k = 0; k < 20; k++) {
        rh_conn *x = connect_ok(d, k % 2);
        send_raw(x, b.p, b.len);
        rh_close(x);
    }
    free(b.p);
    expect_pong(c);
    cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.list\"}");
    const cJSON *scenes = at(r, "result.scenes");
    assert_true(cJSON_IsArray(scenes));
    cJSON_Delete(r);
    /* A scene the puts made holds all 2000 shapes or does not exist. */
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.get\",\"params\":"
                     "{\"scene\":\"gone\",\"ids\":[\"s1999\"]}}");
    assert_true(at(r, "result") ? at(r, "result.shapes.s1999") != NULL
                                : num_at(r, "error.code") == -32001);
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

/* A tree walk's cost depends on where the shapes are, so its estimate
 * (the tree's depth per query shape) can be far too low: here every shape
 * sits at the same point, every one ties for nearest, and a walk visits
 * them all.  The walks are metered (rp_work): a request whose walks spend
 * what its line has left is stopped with -32004 naming the limit, in
 * every method that walks the tree, and a walk that fits is charged what
 * it spent, so the line's later requests see less. */
static void tree_walks_past_their_estimate_are_stopped(void **state)
{
    (void)state;
    static const char *const flags[] = {"--max-request-work", "100000", NULL};
    rh_daemon *d = start(flags);
    rh_conn *c = connect_ok(d, false);
    enum { N = 20000 };
    textbuf b = {0};
    /* Put in lines of 1000 shapes: a write is priced too (about 70 units
     * a shape here), against this daemon's small budget. */
    expect_ok(call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                           "\"params\":{\"scene\":\"pile\"}}"),
              "scene pile");
    for (int k = 0; k < N; k += 1000) {
        tb_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.put\",\"params\":"
                      "{\"scene\":\"pile\",\"shapes\":{");
        for (int i = k; i < k + 1000; i++)
            tb_printf(&b, "%s\"p%d\":{\"sphere\":{\"center\":[5,0,0],\"radius\":0.01}}",
                      i > k ? "," : "", i);
        tb_printf(&b, "}}}");
        expect_ok(call_buf(c, &b), "1000 shapes at one point");
    }
    /* Ten spheres at one point on the base (every link ties with every
     * other for the closest pair, so none prunes another), and a one-joint
     * arm. */
    tb_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":"
                  "{\"model\":\"ten\",\"links\":[");
    for (int i = 0; i < 10; i++)
        tb_printf(&b,
                  "%s{\"id\":\"l%d\",\"frame\":null,\"shape\":{\"sphere\":{\"center\":"
                  "[0,0,0],\"radius\":0.1}}}",
                  i ? "," : "", i);
    tb_printf(&b, "]}}");
    expect_ok(call_buf(c, &b), "model ten");
    expect_ok(call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":{"
                           "\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"revolute\","
                           "\"parent\":\"base\",\"child\":\"arm\",\"axis\":[0,0,1]}],\"links\":"
                           "[{\"id\":\"s\",\"link\":\"arm\",\"shape\":{\"sphere\":{\"center\":"
                           "[4.5,0,0],\"radius\":0.1}}}]}}"),
              "model k");
    pinger *p = pinger_start(d);

    /* One query shape walks every shape: about 2 N units, within budget. */
    expect_ok(call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.distance\","
                           "\"params\":{\"scene\":\"pile\",\"shape\":{\"sphere\":{\"center\":"
                           "[0,0,0],\"radius\":0.1}}}}"),
              "scene.distance of one shape");
    /* Ten of them, each nearer than the one before (so none is pruned by
     * the nearest pair so far): estimated at 150 units, stopped near
     * 100,000. */
    tb_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.distance\",\"params\":"
                  "{\"scene\":\"pile\",\"shapes\":{");
    for (int i = 0; i < 10; i++)
        tb_printf(&b, "%s\"q%d\":{\"sphere\":{\"center\":[0,0,%d],\"radius\":0.1}}", i ? "," : "",
                  i, 9 - i);
    tb_printf(&b, "}}}");
    const char *m = expect_limit(call_buf(c, &b), "max_request_work", "scene.distance of ten");
    if (!strstr(m, "tree walks were stopped"))
        fail_msg("want the walks named in the message, got: %s", m);
    m = expect_limit(call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"check\",\"params\":"
                                  "{\"model\":\"ten\",\"scene\":\"pile\",\"frames\":[]}}"),
                     "max_request_work", "check of ten links");
    if (!strstr(m, "tree walks were stopped"))
        fail_msg("want the walks named in the message, got: %s", m);
    /* A batch: its slices share the budget. */
    tb_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"check.batch\",\"params\":"
                  "{\"model\":\"k\",\"scene\":\"pile\",\"report\":\"closest\",\"joints\":[");
    for (int i = 0; i < 64; i++)
        tb_printf(&b, "%s[%g]", i ? "," : "", i * 0.01);
    tb_printf(&b, "]}}");
    expect_limit(call_buf(c, &b), "max_request_work", "check.batch of 64");
    /* A certified motion whose states each walk the pile. */
    expect_limit(call_json(c,
                           "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"check.motion\",\"params\":"
                           "{\"model\":\"k\",\"scene\":\"pile\",\"mode\":\"certified\","
                           "\"path\":[[0],[3]]}}"),
                 "max_request_work", "certified check.motion");
    /* A line of queries that each fit alone: they share the line's budget,
     * charged what their walks spent, so the fifth is stopped. */
    tb_printf(&b, "[");
    for (int i = 0; i < 6; i++)
        tb_printf(&b,
                  "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.distance\","
                  "\"params\":{\"scene\":\"pile\",\"shape\":{\"sphere\":{\"center\":"
                  "[0,0,0],\"radius\":0.1}}}}",
                  i ? "," : "", 10 + i);
    tb_printf(&b, "]");
    cJSON *r = call_buf(c, &b);
    assert_true(cJSON_IsArray(r));
    int answered = 0, stopped = 0;
    for (const cJSON *e = r->child; e; e = e->next) {
        answered += at(e, "result") != NULL;
        stopped += at(e, "error.code") && num_at(e, "error.code") == -32004;
    }
    if (answered < 2 || answered > 5 || answered + stopped != 6)
        fail_msg("want the line's budget shared out, got %.600s", show(r));
    cJSON_Delete(r);
    pinger_stop(p, "tree walks past their estimate");
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

/* Scene writes run on the event loop and are priced per shape before
 * their shapes are decoded: a create too large for max_loop_work is
 * refused and leaves nothing behind, the same shapes in two puts go in,
 * and a put that would take the scene past what the budget allows is
 * refused with the scene unchanged. */
static void scene_writes_are_priced_before_decoding(void **state)
{
    (void)state;
    /* Under valgrind, a budget 25 times smaller and scenes to match. */
    static const char *const wrapped[] = {"--max-loop-work", "200000", NULL};
    rh_daemon *d = start(rh_wrapped() ? wrapped : NULL);
    rh_conn *c = connect_ok(d, false);
    int big = scaled(100000, 4000), half = big / 2;
    pinger *p = pinger_start(d);
    textbuf b = {0};
    tb_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":"
                  "{\"scene\":\"s\",\"shapes\":{");
    for (int i = 0; i < big; i++)
        tb_printf(&b, "%s\"a%d\":{\"sphere\":{\"center\":[%d,0,0],\"radius\":0.1}}", i ? "," : "",
                  i, i);
    tb_printf(&b, "}}}");
    const char *m = expect_limit(call_buf(c, &b), "max_loop_work", "create of a big scene");
    if (!strstr(m, "needs about"))
        fail_msg("want the estimate in the message, got: %s", m);
    cJSON *none = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.get\","
                               "\"params\":{\"scene\":\"s\"}}");
    if (!at(none, "error.code") || num_at(none, "error.code") != -32001)
        fail_msg("want no scene after the refused create, got %.300s", show(none));
    cJSON_Delete(none);
    /* Half and half: a create, then a put. */
    for (int k = 0; k < 2; k++) {
        tb_printf(&b,
                  "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"%s\",\"params\":"
                  "{\"scene\":\"s\",\"shapes\":{",
                  k ? "scene.put" : "scene.create");
        for (int i = k * half; i < (k + 1) * half; i++)
            tb_printf(&b, "%s\"a%d\":{\"sphere\":{\"center\":[%d,0,0],\"radius\":0.1}}",
                      i > k * half ? "," : "", i, i);
        tb_printf(&b, "}}}");
        expect_ok(call_buf(c, &b), k ? "put of the second half" : "create of the first half");
    }
    /* As many again, into the scene that holds them: over budget. */
    tb_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"scene.put\",\"params\":"
                  "{\"scene\":\"s\",\"shapes\":{");
    for (int i = 0; i < big; i++)
        tb_printf(&b, "%s\"b%d\":{\"sphere\":{\"center\":[%d,1,0],\"radius\":0.1}}", i ? "," : "",
                  i, i);
    tb_printf(&b, "}}}");
    expect_limit(call_buf(c, &b), "max_loop_work", "put past the budget");
    cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"scene.list\"}");
    const cJSON *s0 = cJSON_GetArrayItem(at(r, "result.scenes"), 0);
    if (!s0 || num_at(s0, "shapes") != big || num_at(s0, "revision") != 2)
        fail_msg("want the scene as the two writes left it, got %.300s", show(r));
    cJSON_Delete(r);
    pinger_stop(p, "scene writes of 100,000 shapes");
    rh_close(c);
    stop_ok(d);
}

#define COST_TEST(f) cmocka_unit_test_teardown(f, cost_teardown)

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        COST_TEST(discarded_replies_spend_the_lines_room),
        COST_TEST(model_put_pairs_are_priced_before_the_build),
        COST_TEST(attached_shapes_times_allowed_pairs_stay_small),
        COST_TEST(request_pairs_and_touch_links_are_cheap_and_priced),
        COST_TEST(discrete_motion_over_budget_is_refused_before_any_state),
        COST_TEST(watch_fan_out_is_spread_over_turns),
        COST_TEST(large_lines_of_clients_that_left_are_handled),
        COST_TEST(tree_walks_past_their_estimate_are_stopped),
        COST_TEST(scene_writes_are_priced_before_decoding),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
