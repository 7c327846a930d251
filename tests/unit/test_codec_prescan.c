/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/codec/prescan.c: nesting depth (the outermost bracket
 * counts), string and escape tracking, and UTF-8 validation with offsets.
 */
#include "test_util.h"

#include <stdio.h>

#include "codec/codec.h"

/* ---- pre-scan ---------------------------------------------------------- */

static rp_scan_result scan(const char *s, int max_depth, size_t *off)
{
    *off = (size_t)-1;
    return rp_json_prescan(s, strlen(s), max_depth, off);
}

static void prescan_depth_limit_counts_outermost_bracket(void **state)
{
    (void)state;
    char buf[300];
    size_t off;
    for (int n = 63; n <= 66; n++) {
        memset(buf, '[', (size_t)n);
        memset(buf + n, ']', (size_t)n);
        buf[2 * n] = '\0';
        rp_scan_result r = scan(buf, 64, &off);
        if (n <= 64) {
            assert_int_equal(r, RP_SCAN_OK);
        } else {
            assert_int_equal(r, RP_SCAN_TOO_DEEP);
            assert_int_equal(off, 64); /* the 65th bracket */
        }
    }
    /* objects count too, mixed with arrays */
    assert_int_equal(scan("{\"a\":[{\"b\":[1]}]}", 4, &off), RP_SCAN_OK);
    assert_int_equal(scan("{\"a\":[{\"b\":[1]}]}", 3, &off), RP_SCAN_TOO_DEEP);
    assert_int_equal(off, 11);
    /* siblings do not add up */
    assert_int_equal(scan("[[1],[2],[[3]],{}]", 3, &off), RP_SCAN_OK);
    assert_int_equal(scan("[[1],[2],[[3]],{}]", 2, &off), RP_SCAN_TOO_DEEP);
    assert_int_equal(off, 10);
    assert_int_equal(scan("1", 0, &off), RP_SCAN_OK);
    assert_int_equal(scan("[]", 0, &off), RP_SCAN_TOO_DEEP);
    assert_int_equal(off, 0);
    assert_int_equal(rp_json_prescan("", 0, 64, &off), RP_SCAN_OK);
    /* Unbalanced closers are left to cJSON and do not go negative. */
    assert_int_equal(scan("]]]]][[", 2, &off), RP_SCAN_OK);
}

static void prescan_ignores_brackets_inside_strings(void **state)
{
    (void)state;
    size_t off;
    assert_int_equal(scan("[\"[[[[{{{{\"]", 1, &off), RP_SCAN_OK);
    assert_int_equal(scan("{\"[[[\":\"]]]{{{\"}", 1, &off), RP_SCAN_OK);
    /* escaped quote keeps the string open */
    assert_int_equal(scan("[\"a\\\"[[[\"]", 1, &off), RP_SCAN_OK);
    /* escaped backslash before the quote closes it, so the '[' counts */
    assert_int_equal(scan("[\"a\\\\\",[]]", 1, &off), RP_SCAN_TOO_DEEP);
    assert_int_equal(off, 7);
    assert_int_equal(scan("[\"\\\\\\\"[\"]", 1, &off), RP_SCAN_OK);
    /* a long string (word-at-a-time path) with the quote at every alignment */
    for (size_t n = 0; n < 40; n++) {
        char buf[64] = "[\"";
        memset(buf + 2, 'a', n);
        strcpy(buf + 2 + n, "\",[[]]]");
        assert_int_equal(scan(buf, 2, &off), RP_SCAN_TOO_DEEP);
        assert_int_equal(off, 2 + n + 3);
        /* A backslash in the middle escapes an 'a'; on the last 'a' it escapes
         * the closing quote (and for n == 0 it replaces it), so the string
         * swallows the brackets. */
        buf[2 + n / 2] = '\\';
        bool swallowed = n / 2 + 1 >= n;
        assert_int_equal(scan(buf, 2, &off), swallowed ? RP_SCAN_OK : RP_SCAN_TOO_DEEP);
    }
}

static void prescan_accepts_valid_utf8(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "[\"\xC3\xA9\"]",                         /* U+00E9, 2 bytes */
        "[\"\xC2\x80\xDF\xBF\"]",                 /* U+0080, U+07FF */
        "[\"\xE2\x82\xAC\"]",                     /* U+20AC, 3 bytes */
        "[\"\xE0\xA0\x80\xEF\xBF\xBF\"]",         /* U+0800, U+FFFF */
        "[\"\xED\x9F\xBF\xEE\x80\x80\"]",         /* U+D7FF, U+E000 around the surrogates */
        "[\"\xF0\x9F\x98\x80\"]",                 /* U+1F600, 4 bytes */
        "[\"\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\"]", /* U+10000, U+10FFFF */
        "\xC3\xA9",                               /* outside strings too */
        "[\"\\\xC3\xA9\"]",                       /* after a backslash */
    };
    size_t off;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (scan(ok[i], 64, &off) != RP_SCAN_OK)
            fail_msg("case %zu rejected at %zu", i, off);
}

static void prescan_rejects_invalid_utf8_at_its_offset(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t off;
    } bad[] = {
        {"[\"ab\xC0\x80\"]", 4},       /* overlong NUL */
        {"[\"\xC1\xBF\"]", 2},         /* overlong */
        {"[\"\xE0\x80\x80\"]", 2},     /* overlong 3-byte */
        {"[\"\xE0\x9F\xBF\"]", 2},     /* overlong U+07FF */
        {"[\"\xED\xA0\x80\"]", 2},     /* surrogate U+D800 */
        {"[\"\xED\xBF\xBF\"]", 2},     /* surrogate U+DFFF */
        {"[\"\xF0\x80\x80\x80\"]", 2}, /* overlong 4-byte */
        {"[\"\xF0\x8F\xBF\xBF\"]", 2}, /* overlong U+FFFF */
        {"[\"\xF4\x90\x80\x80\"]", 2}, /* U+110000 */
        {"[\"\xF5\x80\x80\x80\"]", 2},
        {"[\"\xFF\"]", 2},
        {"[\"\xFE\"]", 2},
        {"[\"x\x80\"]", 3}, /* lone continuation */
        {"[\"\xBF\"]", 2},
        {"[\"\xC3\xA9\xA9\"]", 4}, /* one continuation too many */
        {"[\"\xE2\x82\"]", 2},     /* truncated, then '"' */
        {"[\"\xE2\x82\x41\"]", 2},
        {"[\"\xF0\x9F\x98\"]", 2},
        {"\x80[]", 0},       /* outside strings */
        {"[\"\\\x80\"]", 3}, /* after a backslash */
    };
    size_t off;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rp_scan_result r = scan(bad[i].s, 64, &off);
        if (r != RP_SCAN_BAD_UTF8 || off != bad[i].off)
            fail_msg("case %zu: result %d offset %zu, want bad utf8 at %zu", i, (int)r, off,
                     bad[i].off);
    }
    /* truncated at the very end of the buffer */
    static const char *const cut[] = {"\xC3", "\xE2\x82", "\xF0\x9F\x98", "\xE2"};
    for (size_t i = 0; i < sizeof cut / sizeof *cut; i++) {
        char buf[16] = "[\"ab";
        strcat(buf, cut[i]);
        assert_int_equal(scan(buf, 64, &off), RP_SCAN_BAD_UTF8);
        assert_int_equal(off, 4);
    }
    /* a bad byte at every position of a long string (word-at-a-time path) */
    for (size_t pos = 0; pos < 40; pos++) {
        char buf[64] = "[\"";
        memset(buf + 2, 'a', 40);
        strcpy(buf + 42, "\"]");
        buf[2 + pos] = (char)0xC0;
        assert_int_equal(scan(buf, 64, &off), RP_SCAN_BAD_UTF8);
        assert_int_equal(off, 2 + pos);
    }
}

static void prescan_rejects_control_bytes_and_nul_escapes(void **state)
{
    (void)state;
    size_t off = 99;
    /* Between tokens only space, tab, CR and LF are whitespace. */
    const char ok[] = "{\"a\":\t1,\r \"b\":\"x\\ty\\u0001\"}";
    assert_int_equal(rp_json_prescan(ok, strlen(ok), 64, &off), RP_SCAN_OK);
    const char ctl_out[] = "{\"a\":1,\x01\"b\":2}";
    assert_int_equal(rp_json_prescan(ctl_out, strlen(ctl_out), 64, &off), RP_SCAN_CONTROL);
    assert_int_equal(off, 7);
    const char vt_out[] = "{\x0b}";
    assert_int_equal(rp_json_prescan(vt_out, strlen(vt_out), 64, &off), RP_SCAN_CONTROL);
    assert_int_equal(off, 1);
    /* Inside strings no raw control byte, not even a tab, in either the
     * word-at-a-time or the byte-at-a-time path. */
    const char tab_in[] = "{\"abc\tdef\":1}";
    assert_int_equal(rp_json_prescan(tab_in, strlen(tab_in), 64, &off), RP_SCAN_CONTROL);
    assert_int_equal(off, 5);
    const char long_in[] = "[\"0123456789abcdef0123456789\x1f\"]";
    assert_int_equal(rp_json_prescan(long_in, strlen(long_in), 64, &off), RP_SCAN_CONTROL);
    assert_int_equal(off, 28);
    const char esc_ctl[] = "[\"a\\\x01\"]"; /* backslash then a raw control byte */
    assert_int_equal(rp_json_prescan(esc_ctl, strlen(esc_ctl), 64, &off), RP_SCAN_CONTROL);
    const char nul[] = "{\"scene\":\"keep\\u0000junk\"}";
    assert_int_equal(rp_json_prescan(nul, strlen(nul), 64, &off), RP_SCAN_NUL_ESCAPE);
    assert_int_equal(off, 14);
    const char escaped_backslash[] = "[\"\\\\u0000\"]"; /* \\ then literal u0000 */
    assert_int_equal(rp_json_prescan(escaped_backslash, strlen(escaped_backslash), 64, &off),
                     RP_SCAN_OK);
}

/* ---- numbers ----------------------------------------------------------- */

/* Where a value sits in a line, before and after; the first sends the line
 * down the fast path (printable ASCII, no backslash), the second down the
 * full scan (an escape and a UTF-8 character before the value). */
static const char *const number_places[][2] = {
    {"[", "]"},
    {"{\"a\":", "}"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"v\":[0, ", " ,1]}}"},
    {"[\"\\n\",\t", "\r]"},
    {"{\"\xC3\xA9\\\"1\":", "}"},
    {"", ""},
};

/* The line of place k around value v, and where v starts in it. */
static size_t place(char *buf, size_t cap, size_t k, const char *v)
{
    snprintf(buf, cap, "%s%s%s", number_places[k][0], v, number_places[k][1]);
    return strlen(number_places[k][0]);
}

static void prescan_takes_strict_json_numbers(void **state)
{
    (void)state;
    static const char *const good[] = {
        "0", "-0", "1", "-1", "10", "0.5", "-0.5", "1.50", "1e5", "1E5", "1e05", "1e+05", "1e-05",
        "1E+0", "0e0", "-0.0e-0", "123.456e789", "1e400", "9007199254740993",
        "12345678901234567890123456789", "[1,-2,3.5e-7]", "{\"0\":0}", "[0,0]", "true",
        "[true,false,null]", "\"01\"", "\"1.\"", "\"-01.50 +1 .5 1e 0x10\"", "[\"a\",1]",
        /* Words that do not start like a number are cJSON's to refuse. */
        "NaN", "Infinity", "nul01", "true-1", "x.5"};
    for (size_t k = 0; k < sizeof number_places / sizeof number_places[0]; k++) {
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
            char line[256];
            size_t off = 99;
            place(line, sizeof line, k, good[i]);
            rp_scan_result r = scan(line, 64, &off);
            if (r != RP_SCAN_OK)
                fail_msg("%s: result %d at %zu", line, (int)r, off);
        }
    }
}

static void prescan_refuses_lenient_numbers_at_their_start(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "01",   "00",   "-01.50",    "007",       "1.",    "-1.",   "1.e5",  ".5",
        "-.5",  "+1",   "+0",        "1e",        "1E",    "1e+",   "1e-",   "-",
        "--1",  "-+1",  "0x10",      "0X1F",      "1.5.5", "1e5e5", "1e5.5", "1-2",
        "0.5x", "1ee5", "-Infinity", "+Infinity", "-NaN",  "-inf",  "1true", "2a"};
    for (size_t k = 0; k < sizeof number_places / sizeof number_places[0]; k++) {
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char line[256];
            size_t off = 99;
            size_t at = place(line, sizeof line, k, bad[i]);
            rp_scan_result r = scan(line, 64, &off);
            if (r != RP_SCAN_BAD_NUMBER || off != at)
                fail_msg("%s: result %d at %zu, want BAD_NUMBER at %zu", line, (int)r, off, at);
        }
    }
    /* The first bad number counts, after good ones; and it comes before a
     * problem further on. */
    size_t off = 99;
    assert_int_equal(scan("[1, 2.5, -3e2, 04, 05]", 64, &off), RP_SCAN_BAD_NUMBER);
    assert_int_equal(off, 15);
    assert_int_equal(scan("[\"\xC3\xA9\", 1., \"\xC0\x80\"]", 64, &off), RP_SCAN_BAD_NUMBER);
    assert_int_equal(off, 7);
    assert_int_equal(scan("[\"\xC0\x80\", 1.]", 64, &off), RP_SCAN_BAD_UTF8);
    assert_int_equal(off, 2);
    /* A long line of numbers: the word-at-a-time path checks them too. */
    char line[4096];
    size_t n = 0;
    line[n++] = '[';
    for (int i = 0; i < 500; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, "%d.25,", i);
    size_t at = n;
    n += (size_t)snprintf(line + n, sizeof line - n, "1.e5]");
    assert_int_equal(rp_json_prescan(line, n, 64, &off), RP_SCAN_BAD_NUMBER);
    assert_int_equal(off, at);
    line[at + 1] = '0'; /* 10e5 */
    assert_int_equal(rp_json_prescan(line, n, 64, &off), RP_SCAN_OK);
}

/* A \u0000 escape is reported only when the rest of the line is fine, at
 * the first one; the marked copy replaces exactly those escapes. */
static void nul_escapes_come_last_and_are_marked(void **state)
{
    (void)state;
    size_t off = 99;
    assert_int_equal(scan("[\"a\\u0000\",\"\\u0000\"]", 64, &off), RP_SCAN_NUL_ESCAPE);
    assert_int_equal(off, 3);
    assert_int_equal(scan("[\"a\\u0000\",\"\xC0\x80\"]", 64, &off), RP_SCAN_BAD_UTF8);
    assert_int_equal(off, 12);
    assert_int_equal(scan("[\"a\\u0000\",01]", 64, &off), RP_SCAN_BAD_NUMBER);
    assert_int_equal(off, 11);
    assert_int_equal(scan("[\"a\\u0000\",[[1]]]", 2, &off), RP_SCAN_TOO_DEEP);
    assert_int_equal(off, 12);
    assert_int_equal(scan("[\"a\\u0000\",\"\x01\"]", 64, &off), RP_SCAN_CONTROL);
    assert_int_equal(off, 12);

    static const struct {
        const char *in, *out;
    } marks[] = {
        {"[\"a\\u0000b\"]", "[\"a\xFF"
                            "b\"]"},
        {"{\"\\u0000\":\"\\u0000\\u0000\"}", "{\"\xFF\":\"\xFF\xFF\"}"},
        {"[\"\\\\u0000\"]", "[\"\\\\u0000\"]"},  /* \\ then a literal u0000 */
        {"[\"\\\"\\u0000\"]", "[\"\\\"\xFF\"]"}, /* \" keeps the string open */
        {"[\\u0000]", "[\\u0000]"},              /* outside strings: left alone */
        {"[\"\\u00001\"]", "[\"\xFF"
                           "1\"]"},
        {"[\"\\u000\"]", "[\"\\u000\"]"},
    };
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        char out[64];
        size_t n = rp_json_mark_nul_escapes(marks[i].in, strlen(marks[i].in), out);
        if (n != strlen(marks[i].out) || memcmp(out, marks[i].out, n) != 0)
            fail_msg("case %zu: got %.*s", i, (int)n, out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prescan_depth_limit_counts_outermost_bracket),
        cmocka_unit_test(prescan_ignores_brackets_inside_strings),
        cmocka_unit_test(prescan_accepts_valid_utf8),
        cmocka_unit_test(prescan_rejects_invalid_utf8_at_its_offset),
        cmocka_unit_test(prescan_rejects_control_bytes_and_nul_escapes),
        cmocka_unit_test(prescan_takes_strict_json_numbers),
        cmocka_unit_test(prescan_refuses_lenient_numbers_at_their_start),
        cmocka_unit_test(nul_escapes_come_last_and_are_marked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
