/* SPDX-License-Identifier: MIT */
/*
 * Daemon lifecycle tests: the real reposed over its real sockets.
 *
 * Usage: test_daemon_lifecycle PATH-TO-REPOSED
 *
 * Each test starts its own daemon (tests/integration/harness.h), so tests
 * are independent and may use special flags.  Helpers shared with the
 * other daemon test programs are in daemon_util.h.
 *
 * The Unix socket file (mode, stale and live sockets, a regular file in
 * the way), SIGTERM flushing replies already made, and the command line
 * (listening lines, port 0, --help, --version, bad flags).
 *
 * No test asserts a duration: every wait is a generous guard against hangs.
 * Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are smaller.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "daemon_util.h"
#include "harness.h"

/* ---- the Unix socket file ---------------------------------------------------------------- */

static void unix_socket_has_mode_0660(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    struct stat st;
    assert_int_equal(lstat(d->unix_path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0660);
    stop_ok(d);
}

static void stale_socket_file_is_replaced(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char path[256];
    snprintf(path, sizeof path, "%s/stale.sock", dir);
    /* Bind and close: the file stays, nobody listens. */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    assert_true(strlen(path) < sizeof sa.sun_path);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);

    rh_opts o = {path, NULL, NULL, false};
    rh_daemon *d = start_with(&o);
    rh_conn *c = connect_ok(d, false);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
    assert_int_equal(lstat(path, &st), -1); /* removed at exit */
}

static void live_socket_is_refused(void **state)
{
    (void)state;
    rh_daemon *first = start(NULL);
    char path[256];
    snprintf(path, sizeof path, "%s", first->unix_path);
    rh_opts o = {path, NULL, NULL, false};
    rh_daemon *second = rh_start(&o);
    assert_non_null(second);
    assert_false(second->up);
    int code = rh_wait_exit(second, rh_ms(RH_TIMEOUT_MS));
    assert_true(code > 0 && code < 128);
    rh_destroy(second);
    /* The first daemon still owns the path and answers. */
    rh_conn *c = connect_ok(first, false);
    expect_pong(c);
    rh_close(c);
    stop_ok(first);
}

static void regular_file_at_socket_path_is_left_alone(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char path[256];
    snprintf(path, sizeof path, "%s/precious.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("do not delete\n", f);
    fclose(f);
    rh_opts o = {path, NULL, NULL, false};
    rh_daemon *d = rh_start(&o);
    assert_non_null(d);
    assert_false(d->up);
    int code = rh_wait_exit(d, rh_ms(RH_TIMEOUT_MS));
    assert_true(code > 0 && code < 128);
    rh_destroy(d);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    char buf[64] = "";
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "do not delete\n");
}

/* ---- SIGTERM ----------------------------------------------------------------------------- */

/* A client pipelines scene.put requests without reading until the daemon
 * stops reading it (backpressure), so the daemon holds replies it could not
 * send yet.  A second client reads the scene's revision: every put up to it
 * has been executed, so its reply must reach the client after SIGTERM. */
static void sigterm_flushes_replies(bool tcp)
{
    rh_daemon *d = start(bp_flags);
    char sock[256];
    snprintf(sock, sizeof sock, "%s", d->unix_path);
    rh_conn *idle = connect_ok(d, !tcp);
    expect_pong(idle);
    rh_conn *c = rh_connect_rcvbuf(d, tcp, 65536);
    assert_non_null(c);
    expect_pong(c);
    cJSON *r = call_json(idle, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"scene.create\","
                               "\"params\":{\"scene\":\"t\"}}");
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);

    const int max_puts = 1000000;
    char req[160];
    int queued = 0;
    size_t part = 0;
    long long stall_since = 0, deadline = rh_now_ms() + rh_ms(30000);
    while (queued < max_puts && rh_now_ms() < deadline) {
        int n = snprintf(req, sizeof req,
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":"
                         "{\"scene\":\"t\",\"shapes\":{}}}\n",
                         queued + 1);
        ssize_t w = send(rh_fd(c), req + part, (size_t)n - part, MSG_NOSIGNAL);
        if (w > 0) {
            part += (size_t)w;
            if (part == (size_t)n) {
                part = 0;
                queued++;
            }
            stall_since = 0;
            continue;
        }
        if (!stall_since)
            stall_since = rh_now_ms();
        else if (rh_now_ms() - stall_since > rh_ms(300))
            break;
        struct pollfd p = {rh_fd(c), POLLOUT, 0};
        poll(&p, 1, 10);
    }
    r = call_json(idle, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.get\","
                        "\"params\":{\"scene\":\"t\"}}");
    int executed = (int)num_at(r, "result.revision") - 1;
    cJSON_Delete(r);
    assert_true(executed >= 1);

    rh_signal(d, SIGTERM);

    /* Every reply the daemon made arrives, in order; requests that were
     * received but not yet executed when the signal came are answered with
     * -32006 (after which nothing else succeeds); then the connection ends
     * (a reset is tolerated only after the last whole reply). */
    int got = 0, refused = 0;
    char want[160], refusal[160];
    rh_read_status st;
    for (;;) {
        const char *line;
        size_t len;
        st = rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len);
        if (st != RH_LINE) {
            if (len != 0)
                fail_msg("after %d replies the stream ends inside a line: %.*s", got,
                         (int)(len > 80 ? 80 : len), line);
            break;
        }
        snprintf(want, sizeof want,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"scene\":\"t\",\"revision\":%d}}",
                 got + 1, got + 2);
        snprintf(refusal, sizeof refusal,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"error\":{\"code\":-32006,\"message\":"
                 "\"Shutting down: scene.put not executed\"}}",
                 got + refused + 1);
        if (refused == 0 && strcmp(line, want) == 0)
            got++;
        else if (strcmp(line, refusal) == 0)
            refused++;
        else
            fail_msg("reply %d: got %s", got + refused + 1, line);
    }
    if (st == RH_TIMEOUT)
        fail_msg("no end of stream after %d replies", got);
    if (got < executed)
        fail_msg("%d puts were executed before SIGTERM but only %d replies arrived (%s)", executed,
                 got, st == RH_EOF ? "then EOF" : "then a reset");
    assert_true(got + refused <= queued);
    st = rh_wait_close(idle, rh_ms(RH_TIMEOUT_MS), 0);
    assert_true(st == RH_EOF || st == RH_ERROR);

    int code = rh_wait_exit(d, rh_ms(6000));
    if (code != 0)
        rh_dump_log(d);
    assert_int_equal(code, 0);
    struct stat sst;
    assert_int_equal(lstat(sock, &sst), -1);
    assert_int_equal(errno, ENOENT);
    rh_close(c);
    rh_close(idle);
    rh_destroy(d);
}

static void sigterm_flushes_replies_unix(void **state)
{
    (void)state;
    sigterm_flushes_replies(false);
}

/* Over TCP, closing a connection that still has unread requests in its
 * receive queue makes the kernel send a reset that destroys replies still
 * queued for sending; the daemon shuts down its write side and drains the
 * input first (conn.c, linger_close), so every executed request is
 * answered. */
static void sigterm_flushes_replies_tcp(void **state)
{
    (void)state;
    sigterm_flushes_replies(true);
}

/* ---- command line ------------------------------------------------------------------------ */

/* Scripts find the daemon through the "listening" lines: they are printed
 * whatever the log level. */
static void listening_lines_survive_quiet_log_levels(void **state)
{
    (void)state;
    static const char *const quiet[] = {"--log-level", "error", NULL};
    rh_daemon *d = start(quiet);
    assert_true(d->tcp_port > 0);
    rh_conn *c = connect_ok(d, true);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

static void tcp_port_zero_picks_a_port(void **state)
{
    (void)state;
    rh_opts o = {"none", "127.0.0.1:0", NULL, false};
    rh_daemon *d = start_with(&o);
    assert_true(d->tcp_port > 0 && d->tcp_port < 65536);
    assert_string_equal(d->unix_path, "");
    rh_conn *c = connect_ok(d, true);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

static void help_and_version_exit_zero(void **state)
{
    (void)state;
    char out[8192];
    static const char *const help[] = {"--help", NULL};
    assert_int_equal(rh_run(help, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 0);
    assert_non_null(strstr(out, "usage: reposed"));
    assert_non_null(strstr(out, "--max-connections"));
    static const char *const version[] = {"--version", NULL};
    assert_int_equal(rh_run(version, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 0);
    assert_int_equal(strncmp(out, "reposed ", 8), 0);
}

static void bad_command_lines_exit_two(void **state)
{
    (void)state;
    static const char *const unknown[] = {"--bogus", NULL};
    static const char *const missing[] = {"--tcp", NULL};
    static const char *const zero[] = {"--max-connections", "0", NULL};
    static const char *const junk[] = {"--max-request-bytes", "12abc", NULL};
    static const char *const level[] = {"--log-level", "loud", NULL};
    static const char *const none[] = {"--unix", "none", "--tcp", "none", NULL};
    static const char *const order[] = {"--write-pause-bytes", "1000", "--write-kill-bytes", "10",
                                        NULL};
    static const char *const fsync_word[] = {"--fsync", "sometimes", NULL};
    static const char *const fsync_alone[] = {"--fsync", "always", NULL};
    static const char *const repair_alone[] = {"--repair", NULL};
    static const char *const empty_dir[] = {"--data-dir", "", NULL};
    const char *const *cases[] = {unknown, missing,    zero,        junk,         level,    none,
                                  order,   fsync_word, fsync_alone, repair_alone, empty_dir};
    char out[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int code = rh_run(cases[i], out, sizeof out, rh_ms(RH_TIMEOUT_MS));
        if (code != 2)
            fail_msg("%s: exit %d, want 2 (%s)", cases[i][0], code, out);
        assert_non_null(strstr(out, "reposed: "));
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(unix_socket_has_mode_0660),
        DAEMON_TEST(stale_socket_file_is_replaced),
        DAEMON_TEST(live_socket_is_refused),
        DAEMON_TEST(regular_file_at_socket_path_is_left_alone),
        DAEMON_TEST(sigterm_flushes_replies_unix),
        DAEMON_TEST(sigterm_flushes_replies_tcp),
        DAEMON_TEST(tcp_port_zero_picks_a_port),
        DAEMON_TEST(listening_lines_survive_quiet_log_levels),
        DAEMON_TEST(help_and_version_exit_zero),
        DAEMON_TEST(bad_command_lines_exit_two),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
