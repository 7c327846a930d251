/* SPDX-License-Identifier: MIT */
/*
 * Daemon limit tests: the real reposed over its real sockets.
 *
 * Usage: test_daemon_limits PATH-TO-REPOSED
 *
 * Each test starts its own daemon (tests/integration/harness.h), so tests
 * are independent and may use special flags.  Helpers shared with the
 * other daemon test programs are in daemon_util.h.
 *
 * Overlong lines, the TCP and Unix connection limits, backpressure on
 * clients that do not read (or read slowly), the reply size limit, the cap
 * on output held for all clients together (max_output_bytes), and the
 * store-wide scene and model counts (max_scenes, max_models).
 *
 * No test asserts a duration: every wait is a generous guard against hangs.
 * Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are smaller.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "daemon_util.h"
#include "harness.h"

/* ---- overlong lines ---------------------------------------------------------------------- */

/* A ping padded with spaces to exactly `len` bytes (before the newline). */
static char *padded_ping(size_t len, const char *id)
{
    char *s = malloc(len + 1);
    int n = snprintf(s, len + 1, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"ping\"}", id);
    memset(s + n, ' ', len - (size_t)n);
    s[len] = '\0';
    return s;
}

static void expect_line_limit_and_close(rh_conn *c)
{
    cJSON *r = read_json(c);
    assert_int_equal((int)num_at(r, "error.code"), -32004);
    assert_true(cJSON_IsNull(at(r, "id")));
    assert_string_equal(str_at(r, "error.data.limit"), "max_request_bytes");
    assert_int_equal((int)num_at(r, "error.data.max"), 4096);
    cJSON_Delete(r);
    rh_read_status st = rh_wait_close(c, rh_ms(RH_TIMEOUT_MS), 0);
    assert_true(st == RH_EOF || st == RH_ERROR);
}

static void overlong_line_gets_limit_error_then_close(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-request-bytes", "4096", NULL};
    rh_daemon *d = start(extra);

    /* Exactly at the limit: fine, also with CRLF. */
    rh_conn *c = connect_ok(d, false);
    char *line = padded_ping(4096, "at-limit");
    cJSON *r = call_json(c, line);
    assert_string_equal(str_at(r, "id"), "at-limit");
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    send_raw(c, line, 4096);
    send_raw(c, "\r\n", 2);
    r = read_json(c);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    free(line);

    /* One byte over: -32004 with id null, then the server closes. */
    line = padded_ping(4097, "over");
    send_raw(c, line, 4097);
    send_raw(c, "\n", 1);
    free(line);
    expect_line_limit_and_close(c);
    rh_close(c);

    /* An endless line without a newline is cut off too. */
    c = connect_ok(d, true);
    expect_pong(c);
    char junk[8192];
    memset(junk, 'x', sizeof junk);
    send_raw(c, junk, sizeof junk);
    expect_line_limit_and_close(c);
    rh_close(c);

    /* Other clients are unaffected and the limit hits are counted. */
    c = connect_ok(d, false);
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stats\"}");
    assert_int_equal((int)num_at(r, "result.limits_hit.max_request_bytes"), 2);
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

/* ---- connection limit -------------------------------------------------------------------- */

/* Connects one more client of the given kind and expects it to be turned
 * away with -32004 naming `limit`. */
static void expect_connection_refused(rh_daemon *d, bool tcp, const char *limit, int max)
{
    rh_conn *c = connect_ok(d, tcp);
    cJSON *r = read_json(c);
    assert_int_equal((int)num_at(r, "error.code"), -32004);
    assert_true(cJSON_IsNull(at(r, "id")));
    assert_string_equal(str_at(r, "error.data.limit"), limit);
    assert_int_equal((int)num_at(r, "error.data.max"), max);
    cJSON_Delete(r);
    rh_read_status st = rh_wait_close(c, rh_ms(RH_TIMEOUT_MS), 0);
    assert_true(st == RH_EOF || st == RH_ERROR);
    rh_close(c);
}

/* TCP and Unix clients have limits of their own: remote clients holding
 * every TCP slot do not lock out local ones, and a freed slot is usable. */
static void connection_limit_rejects_then_recovers(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-tcp-connections", "2", "--max-unix-connections", "2",
                                        NULL};
    rh_daemon *d = start(extra);
    rh_conn *cs[4];
    for (int i = 0; i < 4; i++) {
        cs[i] = connect_ok(d, i % 2 == 0);
        expect_pong(cs[i]); /* accepted and served */
    }
    expect_connection_refused(d, true, "max_tcp_connections", 2);
    expect_connection_refused(d, false, "max_unix_connections", 2);
    int rejected = 2;

    /* Free a TCP slot.  The daemon notices the close asynchronously, so a
     * new client may still be turned away for a moment: retry until served. */
    rh_close(cs[2]);
    long long deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    rh_conn *fresh = NULL;
    while (!fresh) {
        rh_conn *c = connect_ok(d, true);
        cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stats\"}");
        if (at(r, "result")) {
            fresh = c;
            assert_int_equal((int)num_at(r, "result.connections.current"), 4);
            assert_int_equal((int)num_at(r, "result.connections.tcp"), 2);
            assert_int_equal((int)num_at(r, "result.connections.unix"), 2);
            assert_int_equal((int)num_at(r, "result.connections.rejected"), rejected);
            assert_int_equal((int)num_at(r, "result.limits_hit.max_tcp_connections"), rejected - 1);
            assert_int_equal((int)num_at(r, "result.limits_hit.max_unix_connections"), 1);
        } else {
            assert_int_equal((int)num_at(r, "error.code"), -32004);
            rejected++;
            rh_close(c);
            assert_true(rh_now_ms() < deadline);
            rh_sleep_ms(10);
        }
        cJSON_Delete(r);
    }
    for (int i = 0; i < 4; i++)
        if (i != 2)
            expect_pong(cs[i]);
    expect_pong(fresh);
    for (int i = 0; i < 4; i++)
        if (i != 2)
            rh_close(cs[i]);
    rh_close(fresh);
    stop_ok(d);
}

/* ---- backpressure ------------------------------------------------------------------------ */
static void client_that_does_not_read_cannot_exhaust_the_daemon(void **state)
{
    (void)state;
    rh_daemon *d = start(bp_flags);
    rh_conn *other = connect_ok(d, true);
    create_big_scene(other, "big", 400); /* ~25 kB per scene.get reply */

    /* The greedy client asks for far more reply bytes (> 1 GB) than a
     * daemon could buffer, and never reads. */
    rh_conn *greedy = connect_ok(d, false);
    static const char get[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.get\",\"params\":{\"scene\":\"big\"}}\n";
    const size_t n_requests = 50000, glen = sizeof get - 1;
    size_t sent = 0; /* bytes */
    const size_t total = n_requests * glen;
    long long stall_since = 0, deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    int pings = 0;
    long max_rss = 0;
    while (sent < total && rh_now_ms() < deadline) {
        size_t off = sent % glen;
        ssize_t w = send(rh_fd(greedy), get + off, glen - off, MSG_NOSIGNAL);
        if (w > 0) {
            sent += (size_t)w;
            stall_since = 0;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            break; /* disconnected by the daemon: also acceptable */
        /* The daemon has stopped reading us (or is busy): meanwhile it must
         * keep serving everybody else. */
        expect_pong(other);
        pings++;
        long rss = rh_rss_kb(d);
        if (rss > max_rss)
            max_rss = rss;
        if (!stall_since)
            stall_since = rh_now_ms();
        else if (rh_now_ms() - stall_since > rh_ms(1000))
            break; /* stalled for good: the daemon applies backpressure */
        struct pollfd p = {rh_fd(greedy), POLLOUT, 0};
        poll(&p, 1, 20);
    }
    /* It could not push everything: the daemon stopped reading it. */
    assert_true(sent < total);
    assert_true(pings > 0);
    if (!rh_wrapped() && max_rss > 0 && max_rss > 768L * 1024)
        fail_msg("daemon RSS grew to %ld KiB", max_rss);

    /* Dropping the greedy client frees everything; the daemon carries on. */
    rh_close(greedy);
    expect_pong(other);
    assert_string_equal(
        call_line(other, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.list\"}"),
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"scenes\":[{\"scene\":\"big\","
        "\"revision\":1,\"shapes\":400}]}}");
    rh_close(other);
    stop_ok(d);
}

static void slow_reader_gets_every_reply_in_order(void **state)
{
    (void)state;
    rh_daemon *d = start(bp_flags);
    rh_conn *c = connect_ok(d, false);
    const int n = rh_wrapped() ? 4000 : 20000;
    /* All requests, then read them back slowly (a little at a time) while
     * still writing. */
    size_t cap = (size_t)n * 64, len = 0;
    char *buf = malloc(cap);
    for (int i = 1; i <= n; i++)
        len += (size_t)snprintf(buf + len, cap - len,
                                "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", i);
    size_t off = 0;
    int next = 1;
    long long deadline = rh_now_ms() + rh_ms(60000);
    char want[80];
    while (next <= n) {
        if (off < len) {
            ssize_t w =
                send(rh_fd(c), buf + off, len - off < 4096 ? len - off : 4096, MSG_NOSIGNAL);
            if (w > 0)
                off += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                fail_msg("send: %s", strerror(errno));
        }
        /* Slow: at most 8 replies per round, then a short nap. */
        for (int k = 0; k < 8 && next <= n; k++) {
            const char *line;
            size_t llen;
            rh_read_status st = rh_read_line(c, 0, &line, &llen);
            if (st == RH_TIMEOUT)
                break;
            if (st != RH_LINE)
                fail_msg("connection closed after %d replies", next - 1);
            snprintf(want, sizeof want,
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"pong\":true}}", next);
            if (strcmp(line, want) != 0)
                fail_msg("reply %d: got %s", next, line);
            next++;
        }
        if (next % 512 == 0)
            rh_sleep_ms(1);
        if (rh_now_ms() > deadline)
            fail_msg("only %d of %d replies", next - 1, n);
        struct pollfd p = {rh_fd(c), POLLIN | (off < len ? POLLOUT : 0), 0};
        poll(&p, 1, 10);
    }
    free(buf);
    rh_close(c);
    stop_ok(d);
}

/* ---- reply size -------------------------------------------------------------------------- */

/* A reply is built only up to max_reply_bytes (here lowered to kill -
 * pause = 983,040 bytes): a larger one is answered with -32004
 * max_reply_bytes instead, the connection goes on, and a smaller request
 * for the same data works. */
static void reply_over_max_reply_bytes_is_refused_and_connection_goes_on(void **state)
{
    (void)state;
    rh_daemon *d = start(bp_flags);
    rh_conn *c = connect_ok(d, false);
    create_big_scene(c, "huge", 30000); /* scene.get reply ~1.8 MB */
    cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"scene.get\","
                            "\"params\":{\"scene\":\"huge\"}}");
    assert_int_equal((int)num_at(r, "id"), 9);
    assert_int_equal((int)num_at(r, "error.code"), -32004);
    assert_string_equal(str_at(r, "error.data.limit"), "max_reply_bytes");
    assert_int_equal((int)num_at(r, "error.data.max"), 1048576 - 65536);
    cJSON_Delete(r);
    expect_pong(c);
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"scene.get\","
                     "\"params\":{\"scene\":\"huge\",\"ids\":[\"s00000\",\"s29999\"]}}");
    assert_int_equal(cJSON_GetArraySize(at(r, "result.shapes")), 2);
    cJSON_Delete(r);
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"hello\"}");
    assert_int_equal((int)num_at(r, "result.limits.max_reply_bytes"), 1048576 - 65536);
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

/* RSS bounds are asserted only for a plain build: sanitizers keep freed
 * memory in quarantine, and valgrind has its own allocator. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_MEANINGFUL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RSS_MEANINGFUL 0
#endif
#endif
#ifndef RSS_MEANINGFUL
#define RSS_MEANINGFUL 1
#endif

/* Waits (at most a guard of 10 s, never asserted) for the daemon's RSS to
 * come down to `bound_kb`, pinging it meanwhile; returns the last RSS. */
static long wait_rss_down(rh_daemon *d, rh_conn *c, long bound_kb)
{
    long rss = rh_rss_kb(d);
    long long until = rh_now_ms() + rh_ms(10000);
    while (rss > bound_kb && rh_now_ms() < until) {
        rh_sleep_ms(100);
        expect_pong(c);
        rss = rh_rss_kb(d);
    }
    return rss;
}

/* ---- output held for all clients together ------------------------------------------------ */

/* Cap used below: 16 MiB (which lowers write_kill_bytes to it and
 * max_reply_bytes to 15 MiB). */
#define OUTPUT_CAP (16u << 20)

static cJSON *stats(rh_conn *c)
{
    cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":\"st\",\"method\":\"stats\"}");
    assert_non_null(at(r, "result"));
    return r;
}

/* stats.requests.by_method["scene.get"] (0 when absent). */
static int scene_gets(const cJSON *stats_reply)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(at(stats_reply, "result.requests.by_method"), "scene.get");
    return cJSON_IsNumber(v) ? (int)v->valuedouble : 0;
}

/* Many clients ask for a large reply each and never read it.  Each holds
 * what the kernel's socket buffer did not take, far more together than
 * the cap: the largest holders are disconnected (each counted in
 * limits_hit.max_output_bytes) while the clients that hold less, and a
 * client that reads, keep their replies and get answers throughout. */
static void clients_that_do_not_read_are_shed_largest_first(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-output-bytes", "16777216", NULL};
    rh_daemon *d = start(extra);
    rh_conn *good = connect_ok(d, false);
    create_big_scene(good, "big", 40000);  /* scene.get reply ~2.4 MB */
    create_big_scene(good, "small", 8000); /* ~480 kB */
    cJSON *r = call_json(good, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}");
    assert_int_equal((int)num_at(r, "result.limits.max_output_bytes"), (int)OUTPUT_CAP);
    assert_int_equal((int)num_at(r, "result.limits.write_kill_bytes"), (int)OUTPUT_CAP);
    cJSON_Delete(r);

    /* 100 clients without wrappers; every third asks for the small scene.
     * The small ones hold about 0.3 MB each, 10 MB together: under the cap
     * once the big ones are gone, so none of them may be disconnected. */
    enum { ATTACKERS = 100 };
    const int n = rh_wrapped() ? 30 : ATTACKERS;
    rh_conn *a[ATTACKERS];
    for (int i = 0; i < n; i++) {
        a[i] = connect_ok(d, false);
        char line[160];
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.get\",\"params\":"
                 "{\"scene\":\"%s\"}}\n",
                 i, i % 3 == 2 ? "small" : "big");
        send_raw(a[i], line, strlen(line));
        /* A client that reads gets its answers during the attack. */
        if (i % 10 == 9)
            expect_pong(good);
    }
    expect_pong(good);
    /* scene.get runs on worker threads: wait until every one has been
     * answered (a worker's counts join the stats when its reply does). */
    long long deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    for (r = stats(good); scene_gets(r) < n; r = stats(good)) {
        if (rh_now_ms() > deadline)
            fail_msg("the scene.get requests were not all answered: %.300s", show(r));
        cJSON_Delete(r);
        rh_sleep_ms(10);
    }
    double shed = num_at(r, "result.limits_hit.max_output_bytes");
    double held = num_at(r, "result.memory.output_bytes");
    double peak = num_at(r, "result.memory.output_peak_bytes");
    print_message("%d clients: %.0f disconnected, %.0f bytes held, peak %.0f\n", n, shed, held,
                  peak);
    /* Without the cap they would hold some 150 MB (30 MB wrapped). */
    assert_true(held <= OUTPUT_CAP);
    assert_true(peak <= OUTPUT_CAP + (4u << 20)); /* one reply over, before the check */
    assert_true(shed >= (rh_wrapped() ? 5 : 40));
    assert_true(shed <= n - n / 3); /* only big ones */
    cJSON_Delete(r);

    /* Every small one is still there and gets its whole reply. */
    for (int i = 2; i < n; i += 3) {
        const char *line;
        size_t len;
        rh_read_status st = rh_read_line(a[i], rh_ms(RH_TIMEOUT_MS), &line, &len);
        if (st != RH_LINE)
            fail_msg("client %d (small reply) lost its reply (status %d)", i, (int)st);
        assert_non_null(strstr(line, "\"result\""));
    }
    /* The big ones: disconnected, or whole replies for those that stayed. */
    int closed = 0;
    for (int i = 0; i < n; i++) {
        if (i % 3 == 2)
            continue;
        const char *line;
        size_t len;
        rh_read_status st = rh_read_line(a[i], rh_ms(RH_TIMEOUT_MS), &line, &len);
        if (st == RH_LINE)
            assert_non_null(strstr(line, "\"result\""));
        else
            closed++;
    }
    assert_int_equal(closed, (int)shed);
    for (int i = 0; i < n; i++)
        rh_close(a[i]);
    expect_pong(good);
    r = stats(good);
    assert_int_equal((int)num_at(r, "result.memory.output_bytes"), 0);
    cJSON_Delete(r);
    rh_close(good);
    stop_ok(d);
}

/* Watchers that never read: each may fall up to watch_buffer_bytes behind
 * (8 MiB; 64 of them half a gigabyte), but together they stay under the
 * cap: the largest holders are disconnected, the writer keeps working. */
static void stalled_watchers_are_shed_under_the_output_cap(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-output-bytes", "16777216", NULL};
    rh_daemon *d = start(extra);
    rh_conn *writer = connect_ok(d, false);
    create_big_scene(writer, "w", 10);
    enum { WATCHERS = 64 };
    const int n = rh_wrapped() ? 16 : WATCHERS;
    rh_conn *wc[WATCHERS];
    long rss0 = rh_rss_kb(d);
    for (int i = 0; i < n; i++) {
        wc[i] = connect_ok(d, false);
        cJSON *r = call_json(wc[i], "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.watch\","
                                    "\"params\":{\"scene\":\"w\"}}");
        assert_non_null(at(r, "result"));
        cJSON_Delete(r);
    }
    /* Puts of 2000 shapes: each brings every watcher a notification of
     * about 150 kB. */
    const int puts = rh_wrapped() ? 20 : 60;
    textbuf t = {0};
    for (int k = 0; k < puts; k++) {
        t.len = 0;
        tb_printf(&t,
                  "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":"
                  "{\"scene\":\"w\",\"shapes\":{",
                  k);
        for (int i = 0; i < 2000; i++)
            tb_printf(&t, "%s\"p%04d\":{\"sphere\":{\"center\":[%d,%d,0.5],\"radius\":0.25}}",
                      i ? "," : "", i, i, k);
        tb_printf(&t, "}}}");
        cJSON *r = call_json(writer, t.p);
        assert_non_null(at(r, "result"));
        cJSON_Delete(r);
    }
    free(t.p);
    expect_pong(writer);
    cJSON *r = stats(writer);
    double shed = num_at(r, "result.limits_hit.max_output_bytes");
    double held = num_at(r, "result.memory.output_bytes");
    double peak = num_at(r, "result.memory.output_peak_bytes");
    print_message("%d stalled watchers: %.0f disconnected, %.0f bytes held, peak %.0f\n", n, shed,
                  held, peak);
    assert_true(shed >= 1);
    assert_true(held <= OUTPUT_CAP);
    assert_true(peak <= OUTPUT_CAP + (1u << 20)); /* one notification over */
    assert_int_equal((int)num_at(r, "result.connections.current"), n + 1 - (int)shed);
    cJSON_Delete(r);
    for (int i = 0; i < n; i++)
        rh_close(wc[i]);
    expect_pong(writer);
    /* What the watchers held goes back to the system once they are gone
     * (the sweep timer trims): back within 16 MiB of where it started. */
    long bound = rss0 + 16 * 1024;
    long rss = wait_rss_down(d, writer, bound);
    print_message("RSS %ld KiB before the watchers, %ld after they closed\n", rss0, rss);
    if (RSS_MEANINGFUL && !rh_wrapped() && rss0 > 0 && rss > bound)
        fail_msg("RSS stayed at %ld KiB after the watchers closed (was %ld)", rss, rss0);
    rh_close(writer);
    stop_ok(d);
}

/* ---- scenes and models in the store -------------------------------------------------------- */

static void expect_count_limit(rh_conn *c, const char *request, const char *limit, int max)
{
    cJSON *r = call_json(c, request);
    if (!at(r, "error") || (int)num_at(r, "error.code") != -32004) {
        char *s = show(r);
        fail_msg("%s: want -32004, got %s", request, s);
    }
    assert_string_equal(str_at(r, "error.data.limit"), limit);
    assert_int_equal((int)num_at(r, "error.data.max"), max);
    cJSON_Delete(r);
}

static void expect_result(rh_conn *c, const char *request)
{
    cJSON *r = call_json(c, request);
    if (!at(r, "result")) {
        char *s = show(r);
        fail_msg("%s: %s", request, s);
    }
    cJSON_Delete(r);
}

#define REQ(method, params)                                                                        \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"" method "\",\"params\":" params "}"
#define SPHERE "{\"sphere\":{\"center\":[0,0,0],\"radius\":1}}"
#define MODEL(name)                                                                                \
    REQ("model.put",                                                                               \
        "{\"model\":\"" name "\",\"links\":[{\"id\":\"a\",\"frame\":0,\"shape\":" SPHERE "}]}")

/* max_scenes and max_models: the request that would create one more is
 * refused with -32004 naming the limit, changing nothing; changing an
 * existing one still works, and a delete makes room. */
static void scene_and_model_counts_are_capped(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-scenes", "3", "--max-models", "2", NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}");
    assert_int_equal((int)num_at(r, "result.limits.max_scenes"), 3);
    assert_int_equal((int)num_at(r, "result.limits.max_models"), 2);
    cJSON_Delete(r);

    expect_result(c, REQ("scene.create", "{\"scene\":\"s0\"}"));
    expect_result(
        c, REQ("scene.put", "{\"scene\":\"s1\",\"create\":true,\"shapes\":{\"x\":" SPHERE "}}"));
    expect_result(c, REQ("scene.replace", "{\"scene\":\"s2\",\"create\":true,\"shapes\":{}}"));
    r = stats(c);
    double revision = num_at(r, "result.revision");
    cJSON_Delete(r);
    expect_count_limit(c, REQ("scene.create", "{\"scene\":\"s3\"}"), "max_scenes", 3);
    expect_count_limit(
        c, REQ("scene.put", "{\"scene\":\"s3\",\"create\":true,\"shapes\":{\"x\":" SPHERE "}}"),
        "max_scenes", 3);
    expect_count_limit(c, REQ("scene.replace", "{\"scene\":\"s3\",\"create\":true,\"shapes\":{}}"),
                       "max_scenes", 3);
    /* Existing scenes: no limit (create:true on an existing one included). */
    expect_result(
        c, REQ("scene.put", "{\"scene\":\"s0\",\"create\":true,\"shapes\":{\"y\":" SPHERE "}}"));
    expect_result(c, REQ("scene.replace", "{\"scene\":\"s1\",\"shapes\":{\"z\":" SPHERE "}}"));
    r = call_json(c, REQ("scene.create", "{\"scene\":\"s0\"}"));
    assert_int_equal((int)num_at(r, "error.code"), -32002); /* exists, not a limit */
    cJSON_Delete(r);
    r = stats(c);
    assert_int_equal((int)num_at(r, "result.scenes"), 3);
    assert_int_equal((int)num_at(r, "result.revision"), (int)revision + 2); /* the two puts */
    assert_int_equal((int)num_at(r, "result.limits_hit.max_scenes"), 3);
    cJSON_Delete(r);
    expect_result(c, REQ("scene.delete", "{\"scene\":\"s2\"}"));
    expect_result(c, REQ("scene.create", "{\"scene\":\"s3\"}"));
    expect_count_limit(c, REQ("scene.create", "{\"scene\":\"s4\"}"), "max_scenes", 3);

    expect_result(c, MODEL("m0"));
    expect_result(c, MODEL("m1"));
    expect_count_limit(c, MODEL("m2"), "max_models", 2);
    expect_result(c, MODEL("m0")); /* a replacement always fits */
    r = stats(c);
    assert_int_equal((int)num_at(r, "result.models"), 2);
    assert_int_equal((int)num_at(r, "result.limits_hit.max_models"), 1);
    cJSON_Delete(r);
    r = call_json(c, REQ("model.get", "{\"model\":\"m2\"}"));
    assert_int_equal((int)num_at(r, "error.code"), -32001);
    cJSON_Delete(r);
    expect_result(c, REQ("model.delete", "{\"model\":\"m1\"}"));
    expect_result(c, MODEL("m2"));
    rh_close(c);
    stop_ok(d);
}

/* ---- memory returned to the system --------------------------------------------------------- */

/* Many small scenes created, then deleted one by one: the memory they took
 * goes back to the system (the sweep timer trims once enough was freed),
 * instead of staying at the peak.  REPOSE_TEST_SCENES sets how many
 * (100,000 by default, 5,000 under valgrind). */
static void deleted_scenes_give_their_memory_back(void **state)
{
    (void)state;
    const char *env = getenv("REPOSE_TEST_SCENES");
    long n = env ? atol(env) : rh_wrapped() ? 5000 : 100000;
    if (n < 1000)
        n = 1000;
    char max[32];
    snprintf(max, sizeof max, "%ld", n);
    const char *const extra[] = {"--max-scenes", max, NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    expect_pong(c);
    long rss0 = rh_rss_kb(d);
    /* Batches of 1000 requests a line. */
    textbuf t = {0};
    for (int pass = 0; pass < 2; pass++) {
        for (long first = 0; first < n; first += 1000) {
            t.len = 0;
            tb_printf(&t, "[");
            for (long i = first; i < first + 1000 && i < n; i++) {
                if (pass == 0)
                    tb_printf(&t,
                              "%s{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"scene.create\","
                              "\"params\":{\"scene\":\"scene%07ld\",\"shapes\":{\"a\":"
                              "{\"sphere\":{\"center\":[%ld,0,0],\"radius\":0.5}}}}}",
                              i > first ? "," : "", i, i, i);
                else
                    tb_printf(&t,
                              "%s{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"scene.delete\","
                              "\"params\":{\"scene\":\"scene%07ld\"}}",
                              i > first ? "," : "", i, i);
            }
            tb_printf(&t, "]");
            const char *reply = call_line(c, t.p);
            if (!reply || strstr(reply, "\"error\""))
                fail_msg("batch at %ld (pass %d): %.200s", first, pass, reply ? reply : "(none)");
        }
        if (pass == 0) {
            cJSON *r = stats(c);
            assert_int_equal((long)num_at(r, "result.scenes"), n);
            cJSON_Delete(r);
        }
    }
    free(t.p);
    long rss1 = rh_rss_kb(d);
    cJSON *r = stats(c);
    assert_int_equal((int)num_at(r, "result.scenes"), 0);
    cJSON_Delete(r);
    /* Generous: within 16 MiB of the start (the peak is some 60 MB above
     * it for 100,000 scenes). */
    long bound = rss0 + 16 * 1024;
    long rss2 = wait_rss_down(d, c, bound);
    print_message("%ld scenes: RSS %ld KiB at start, %ld after the deletes, %ld after the trim\n",
                  n, rss0, rss1, rss2);
    if (RSS_MEANINGFUL && !rh_wrapped() && rss0 > 0 && rss2 > bound)
        fail_msg("RSS stayed at %ld KiB after deleting every scene (started at %ld)", rss2, rss0);
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(overlong_line_gets_limit_error_then_close),
        DAEMON_TEST(connection_limit_rejects_then_recovers),
        DAEMON_TEST(client_that_does_not_read_cannot_exhaust_the_daemon),
        DAEMON_TEST(slow_reader_gets_every_reply_in_order),
        DAEMON_TEST(reply_over_max_reply_bytes_is_refused_and_connection_goes_on),
        DAEMON_TEST(clients_that_do_not_read_are_shed_largest_first),
        DAEMON_TEST(stalled_watchers_are_shed_under_the_output_cap),
        DAEMON_TEST(scene_and_model_counts_are_capped),
        DAEMON_TEST(deleted_scenes_give_their_memory_back),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
