/* SPDX-License-Identifier: MIT */
/*
 * The JSON strings of --log-format json (src/server/core/log.c): quotes,
 * backslashes and control characters escaped, UTF-8 kept, bytes that are
 * not UTF-8 (stray continuation bytes, overlong forms, surrogates, values
 * past U+10FFFF, cut sequences) replaced by U+FFFD, and a string cut to
 * its buffer still closed, never cut inside an escape or a character.
 */
#include "test_util.h"

#include <stdbool.h>
#include <string.h>

#include "server/core/log.h"

static void expect(const char *in, size_t n, const char *want)
{
    char out[256];
    rpd_log_json_string(in, n, out, sizeof out);
    if (strcmp(out, want) != 0)
        fail_msg("%s: got %s, want %s", in, out, want);
}

static void escapes_and_keeps_utf8(void **state)
{
    (void)state;
    expect("plain", 5, "\"plain\"");
    expect("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    expect("\x01\n\t\x1f\x7f", 5, "\"\\u0001\\u000a\\u0009\\u001f\\u007f\"");
    expect("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80", 14,
           "\"caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"");
    expect("", 0, "\"\"");
    expect("a\0b", 3, "\"a\\u0000b\"");
}

static void replaces_bytes_that_are_not_utf8(void **state)
{
    (void)state;
    expect("\x80", 1, "\"\\ufffd\"");                                  /* a stray continuation */
    expect("\xc0\x80", 2, "\"\\ufffd\\ufffd\"");                       /* overlong NUL */
    expect("\xe0\x80\xaf", 3, "\"\\ufffd\\ufffd\\ufffd\"");            /* overlong '/' */
    expect("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");            /* a surrogate */
    expect("\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* past U+10FFFF */
    expect("\xf5", 1, "\"\\ufffd\"");
    expect("x\xe4\xb8", 3, "\"x\\ufffd\\ufffd\""); /* cut short */
    expect("\xff\xfe"
           "ok",
           4, "\"\\ufffd\\ufffdok\"");
}

static void a_short_buffer_still_closes_the_string(void **state)
{
    (void)state;
    const char *in = "ab\"\xe4\xb8\xad\x01z";
    for (size_t cap = 0; cap < 40; cap++) {
        char out[64];
        memset(out, 'X', sizeof out);
        rpd_log_json_string(in, strlen(in), out, cap);
        if (cap == 0) {
            assert_int_equal(out[0], 'X'); /* nothing written */
            continue;
        }
        size_t n = strlen(out);
        assert_true(n < cap);
        if (cap < 3) {
            assert_int_equal(n, 0);
            continue;
        }
        assert_true(n >= 2 && out[0] == '"' && out[n - 1] == '"');
        /* The inside is a prefix of the whole escaped string, cut between
         * pieces. */
        static const char *const whole = "\"ab\\\"\xe4\xb8\xad\\u0001z\"";
        static const size_t cuts[] = {0, 1, 2, 4, 7, 13, 14};
        bool ok = false;
        for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++)
            ok |= n == cuts[k] + 2 && memcmp(out + 1, whole + 1, cuts[k]) == 0;
        if (!ok)
            fail_msg("cap %zu: %s", cap, out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escapes_and_keeps_utf8),
        cmocka_unit_test(replaces_bytes_that_are_not_utf8),
        cmocka_unit_test(a_short_buffer_still_closes_the_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
