/* SPDX-License-Identifier: MIT */
/*
 * Daemon auth tests: the real reposed over its real sockets.
 *
 * Usage: test_daemon_auth PATH-TO-REPOSED
 *
 * Each test starts its own daemon (tests/integration/harness.h), so tests
 * are independent and may use special flags.  Helpers shared with the
 * other daemon test programs are in daemon_util.h.
 *
 * --token-file: TCP clients must authenticate, Unix clients need not, and
 * unsafe configurations are refused at start.
 *
 * No test asserts a duration: every wait is a generous guard against hangs.
 * Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are smaller.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "daemon_util.h"
#include "harness.h"

/* ---- auth -------------------------------------------------------------------------------- */

/* With --token-file, TCP connections must auth before anything but ping,
 * hello and auth; a wrong token is refused; Unix connections need nothing;
 * before auth, lines are limited to 16 KiB. */
static void tcp_clients_must_auth_and_unix_clients_need_not(void **state)
{
    (void)state;
    const char *extra[] = {"--token-file", token_file("open sesame", 0600), NULL};
    rh_daemon *d = start(extra);
    rh_conn *t = connect_ok(d, true);
    expect_pong(t);
    cJSON *r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                            "\"params\":{\"scene\":\"s\"}}");
    assert_int_equal((int)num_at(r, "error.code"), -32005);
    cJSON_Delete(r);
    r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"hello\"}");
    assert_non_null(at(r, "result.run_id"));
    cJSON_Delete(r);
    r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"auth\",\"params\":"
                     "{\"token\":\"open sesamE\"}}");
    assert_int_equal((int)num_at(r, "error.code"), -32005);
    cJSON_Delete(r);
    r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"auth\",\"params\":"
                     "{\"token\":\"open sesame\"}}");
    assert_true(cJSON_IsTrue(at(r, "result.ok")));
    cJSON_Delete(r);
    r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"scene.create\","
                     "\"params\":{\"scene\":\"s\"}}");
    assert_true(num_at(r, "result.revision") == 1);
    cJSON_Delete(r);

    /* The Unix socket is governed by file permissions only. */
    rh_conn *u = connect_ok(d, false);
    r = call_json(u, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"scene.list\"}");
    assert_non_null(at(r, "result.scenes"));
    cJSON_Delete(r);

    /* Before auth, a line over 16 KiB: -32004 and the connection closes. */
    rh_conn *big = connect_ok(d, true);
    size_t n = 20 * 1024;
    char *line = malloc(n + 2);
    memset(line, ' ', n);
    line[n] = '\n';
    line[n + 1] = '\0';
    assert_true(rh_send(big, line, n + 1));
    free(line);
    r = read_json(big);
    assert_int_equal((int)num_at(r, "error.code"), -32004);
    assert_string_equal(at(r, "error.data.limit")->valuestring, "max_request_bytes_before_auth");
    cJSON_Delete(r);
    rh_read_status st = rh_wait_close(big, rh_ms(RH_TIMEOUT_MS), 0);
    assert_true(st == RH_EOF || st == RH_ERROR);
    rh_close(big);
    rh_close(u);
    rh_close(t);
    stop_ok(d);
}

/* A world-readable token file, and a non-loopback address without a token,
 * are refused at start with a message; --insecure-tcp overrides the latter. */
static void unsafe_configurations_are_refused_at_start(void **state)
{
    (void)state;
    char out[4096];
    const char *readable[] = {
        "--unix", "none", "--tcp", "127.0.0.1:0", "--token-file", token_file("t", 0644), NULL};
    int code = rh_run(readable, out, sizeof out, rh_ms(10000));
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "readable by every user"));
    const char *open_tcp[] = {"--unix", "none", "--tcp", "0.0.0.0:0", NULL};
    code = rh_run(open_tcp, out, sizeof out, rh_ms(10000));
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "without --token-file"));
    rh_opts o = {"none", "0.0.0.0:0", (const char *const[]){"--insecure-tcp", NULL}, false};
    rh_daemon *d = start_with(&o);
    rh_conn *c = rh_connect_tcp(d->tcp_port);
    assert_non_null(c);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(tcp_clients_must_auth_and_unix_clients_need_not),
        DAEMON_TEST(unsafe_configurations_are_refused_at_start),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
