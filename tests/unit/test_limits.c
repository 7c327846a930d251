/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
/*
 * The limits table (src/server/core/limits.h): defaults, flag parsing with
 * ranges, the relations between limits, --help and hello.
 */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "server/core/limits.h"

static void defaults_are_the_documented_ones(void **state)
{
    (void)state;
    rpd_limits l = rpd_default_limits();
    assert_int_equal(l.max_request_bytes, 16u << 20);
    assert_int_equal(l.max_request_bytes_before_auth, 16u << 10);
    assert_int_equal(l.max_reply_bytes, 32u << 20);
    assert_int_equal(l.max_json_depth, 64);
    assert_int_equal(l.max_tcp_connections, 1024);
    assert_int_equal(l.max_unix_connections, 1024);
    assert_int_equal(l.write_pause_bytes, 1u << 20);
    assert_int_equal(l.write_kill_bytes, 64u << 20);
    assert_int_equal(l.max_shapes_per_scene, 1000000);
    assert_int_equal(l.max_batch_configurations, 100000);
    assert_int_equal(l.max_model_links, 4096);
    assert_int_equal(l.idle_timeout_s, 300);
    assert_int_equal(l.auth_timeout_s, 10);
    assert_true(rpd_limits_check(&l, stderr));
    assert_int_equal(l.max_reply_bytes, 32u << 20); /* consistent as they are */
}

static void flags_parse_integers_in_range_only(void **state)
{
    (void)state;
    rpd_limits l = rpd_default_limits();
    assert_int_equal(rpd_limits_parse_flag(&l, "--max-reply-bytes", "65536"), 1);
    assert_int_equal(l.max_reply_bytes, 65536);
    assert_int_equal(rpd_limits_parse_flag(&l, "--idle-timeout", "0"), 1); /* 0: off */
    assert_int_equal(l.idle_timeout_s, 0);
    static const char *const bad[][2] = {
        {"--max-request-bytes", "18446744073709551615"}, /* used to wrap the line limit */
        {"--max-request-bytes", "18446744073709551616"},
        {"--max-request-bytes", "-1"},
        {"--max-request-bytes", "+5"},
        {"--max-request-bytes", "63"}, /* below the minimum */
        {"--max-request-bytes", "1e6"},
        {"--max-request-bytes", ""},
        {"--max-reply-bytes", "12 "},
        {"--max-json-depth", "513"},
        {"--max-tcp-connections", "0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rpd_limits before = l;
        assert_int_equal(rpd_limits_parse_flag(&l, bad[i][0], bad[i][1]), -1);
        assert_memory_equal(&before, &l, sizeof l);
    }
    assert_int_equal(rpd_limits_parse_flag(&l, "--no-such-limit", "5"), 0);
    assert_false(rpd_limits_is_flag("--unix"));
    assert_true(rpd_limits_is_flag("--max-connections"));
    assert_int_equal(rpd_limits_parse_flag(&l, "--max-connections", "7"), 1);
    assert_int_equal(l.max_tcp_connections, 7);
    assert_int_equal(l.max_unix_connections, 7);
}

static void check_lowers_the_reply_limit_under_the_kill_limit(void **state)
{
    (void)state;
    rpd_limits l = rpd_default_limits();
    l.write_pause_bytes = 65536;
    l.write_kill_bytes = 1 << 20;
    assert_true(rpd_limits_check(&l, stderr));
    assert_int_equal(l.max_reply_bytes, (1 << 20) - 65536);
    l = rpd_default_limits();
    l.max_request_bytes = 1000;
    assert_true(rpd_limits_check(&l, stderr));
    assert_int_equal(l.max_request_bytes_before_auth, 1000);
    l = rpd_default_limits();
    l.write_kill_bytes = l.write_pause_bytes + 100;
    FILE *sink = fopen("/dev/null", "w");
    assert_false(rpd_limits_check(&l, sink));
    fclose(sink);
}

/* The cap on output held for all clients lowers the kill limit (and so
 * the reply limit and the watch buffer) so that one client alone never
 * reaches it; a cap that leaves no room above the pause threshold is
 * refused. */
static void check_fits_the_kill_limit_under_the_output_cap(void **state)
{
    (void)state;
    rpd_limits l = rpd_default_limits();
    assert_true(rpd_limits_check(&l, stderr));
    assert_true(l.write_kill_bytes <= l.max_output_bytes);
    l = rpd_default_limits();
    l.max_output_bytes = 8u << 20;
    assert_true(rpd_limits_check(&l, stderr));
    assert_int_equal(l.write_kill_bytes, 8u << 20);
    assert_int_equal(l.max_reply_bytes, (8u << 20) - l.write_pause_bytes);
    assert_int_equal(l.watch_buffer_bytes, 4u << 20);
    l = rpd_default_limits();
    l.max_output_bytes = l.write_pause_bytes + 100;
    FILE *sink = fopen("/dev/null", "w");
    assert_false(rpd_limits_check(&l, sink));
    fclose(sink);
}

static void help_and_hello_name_every_limit(void **state)
{
    (void)state;
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    assert_non_null(f);
    rpd_limits_usage(f);
    fclose(f);
    rpd_limits l = rpd_default_limits();
    rp_jw w;
    rp_jw_init(&w);
    rpd_limits_write(&w, &l);
    assert_false(rp_jw_failed(&w));
    for (int i = 0; i < RPD_LIMIT_COUNT; i++) {
        char key[80];
        snprintf(key, sizeof key, "\"%s\":", rpd_limit_name((rpd_limit_id)i));
        assert_non_null(strstr(w.buf, key));
    }
    assert_non_null(strstr(w.buf, "\"max_reply_bytes\":33554432"));
    assert_non_null(strstr(text, "--max-reply-bytes N"));
    assert_non_null(strstr(text, "--idle-timeout N"));
    assert_non_null(strstr(text, "--max-connections N"));
    assert_string_equal(rpd_limit_name(RPD_LIMIT_COUNT), "?");
    rp_jw_free(&w);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_are_the_documented_ones),
        cmocka_unit_test(flags_parse_integers_in_range_only),
        cmocka_unit_test(check_lowers_the_reply_limit_under_the_kill_limit),
        cmocka_unit_test(check_fits_the_kill_limit_under_the_output_cap),
        cmocka_unit_test(help_and_hello_name_every_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
