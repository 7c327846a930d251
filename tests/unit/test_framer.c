/* SPDX-License-Identifier: MIT */
/* Newline framing: lines split across reads, many lines per read, CRLF,
 * blank lines, overlong lines, and the unterminated last line. */
#include <stdlib.h>

#include "test_util.h"

#include "server/transport/framer.h"

/* Feeds `chunks` one at a time and collects every line into `out`,
 * separated by '|'.  Returns the final status. */
static rpd_frame_status run(size_t max_line, const char *const *chunks, size_t n, char *out,
                            size_t cap)
{
    rpd_framer f;
    rpd_framer_init(&f, max_line);
    out[0] = '\0';
    rpd_frame_status st = RPD_FRAME_NEED_MORE;
    for (size_t i = 0; i < n; i++) {
        assert_true(rpd_framer_feed(&f, chunks[i], strlen(chunks[i])));
        const char *line;
        size_t len;
        while ((st = rpd_framer_next(&f, &line, &len)) == RPD_FRAME_LINE) {
            assert_true(strlen(out) + len + 2 < cap);
            strncat(out, line, len);
            strcat(out, "|");
        }
        if (st == RPD_FRAME_TOO_LONG)
            break;
    }
    rpd_framer_free(&f);
    return st;
}

static void line_split_across_reads_is_reassembled(void **state)
{
    (void)state;
    const char *chunks[] = {"{\"a\"", ":1", "}\n{\"b\":", "2}\n"};
    char out[256];
    assert_int_equal(run(1024, chunks, 4, out, sizeof out), RPD_FRAME_NEED_MORE);
    assert_string_equal(out, "{\"a\":1}|{\"b\":2}|");
}

static void many_lines_in_one_read_come_out_in_order(void **state)
{
    (void)state;
    const char *chunks[] = {"1\n2\n3\n4\n5\n"};
    char out[256];
    run(1024, chunks, 1, out, sizeof out);
    assert_string_equal(out, "1|2|3|4|5|");
}

static void crlf_drops_the_carriage_return(void **state)
{
    (void)state;
    const char *chunks[] = {"ping\r\n", "a\rb\r", "\n"};
    char out[256];
    run(1024, chunks, 3, out, sizeof out);
    assert_string_equal(out, "ping|a\rb|");
}

static void blank_lines_are_returned_empty(void **state)
{
    (void)state;
    /* The framer reports them; the RPC layer ignores them. */
    const char *chunks[] = {"\n\nx\n\r\n"};
    char out[256];
    run(1024, chunks, 1, out, sizeof out);
    assert_string_equal(out, "||x||");
}

static void overlong_line_is_reported_before_its_newline(void **state)
{
    (void)state;
    const char *chunks[] = {"12345678", "9012345"};
    char out[256];
    assert_int_equal(run(10, chunks, 2, out, sizeof out), RPD_FRAME_TOO_LONG);
    assert_string_equal(out, "");
}

static void line_of_exactly_the_limit_passes_and_one_more_fails(void **state)
{
    (void)state;
    const char *ok[] = {"1234567890\r\n"};
    char out[256];
    assert_int_equal(run(10, ok, 1, out, sizeof out), RPD_FRAME_NEED_MORE);
    assert_string_equal(out, "1234567890|");
    const char *bad[] = {"12345678901\n"};
    assert_int_equal(run(10, bad, 1, out, sizeof out), RPD_FRAME_TOO_LONG);
}

static void unterminated_last_line_is_available_at_end_of_stream(void **state)
{
    (void)state;
    rpd_framer f;
    rpd_framer_init(&f, 100);
    assert_true(rpd_framer_feed(&f, "a\nlast\r", 7));
    const char *line;
    size_t len;
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_LINE);
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_NEED_MORE);
    assert_int_equal(rpd_framer_pending(&f), 5);
    assert_true(rpd_framer_rest(&f, &line, &len));
    assert_int_equal(len, 4);
    assert_memory_equal(line, "last", 4);
    assert_false(rpd_framer_rest(&f, &line, &len));
    rpd_framer_free(&f);
}

/* Found by tests/fuzz/fuzz_framer: an unterminated last line of max_line + 1
 * bytes not ending in '\r' was NEED_MORE, so at end of stream the rest came
 * out one byte over the limit. */
static void unterminated_line_one_over_the_limit_is_too_long(void **state)
{
    (void)state;
    rpd_framer f;
    rpd_framer_init(&f, 10);
    assert_true(rpd_framer_feed(&f, "12345678901", 11));
    const char *line;
    size_t len;
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_TOO_LONG);
    rpd_framer_free(&f);

    /* With a last '\r' it may still be the terminator's: not yet too long,
     * and the rest without it is exactly the limit. */
    rpd_framer_init(&f, 10);
    assert_true(rpd_framer_feed(&f, "1234567890\r", 11));
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_NEED_MORE);
    assert_true(rpd_framer_rest(&f, &line, &len));
    assert_int_equal(len, 10);
    rpd_framer_free(&f);

    /* A '\r' followed by more bytes counts. */
    rpd_framer_init(&f, 10);
    assert_true(rpd_framer_feed(&f, "123456789\r0", 11));
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_TOO_LONG);
    rpd_framer_free(&f);
}

/* Found by tests/fuzz/fuzz_framer: on a new framer, an empty feed or a
 * request for 0 bytes of space returned NULL (read as out of memory) after
 * computing NULL + 0. */
static void empty_feed_on_a_new_framer_succeeds(void **state)
{
    (void)state;
    rpd_framer f;
    rpd_framer_init(&f, 10);
    assert_true(rpd_framer_feed(&f, "", 0));
    const char *line;
    size_t len;
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_NEED_MORE);
    rpd_framer_free(&f);

    rpd_framer_init(&f, 10);
    size_t avail = 0;
    assert_non_null(rpd_framer_space(&f, 0, &avail));
    rpd_framer_free(&f);
}

/* The shutdown path asks a framer that never received a byte for its next
 * line: its buffer is NULL, which must not reach memchr (UBSan flagged
 * it). */
static void next_on_a_framer_that_never_read_needs_more(void **state)
{
    (void)state;
    rpd_framer f;
    rpd_framer_init(&f, 10);
    const char *line;
    size_t len;
    assert_null(f.buf);
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_NEED_MORE);
    assert_false(rpd_framer_rest(&f, &line, &len));
    rpd_framer_free(&f);
}

/* An idle framer gives back a large buffer; one holding unconsumed bytes
 * keeps them. */
static void trim_frees_only_an_empty_large_buffer(void **state)
{
    (void)state;
    rpd_framer f;
    rpd_framer_init(&f, 1 << 20);
    static char big[100000];
    memset(big, 'x', sizeof big);
    assert_true(rpd_framer_feed(&f, big, sizeof big));
    assert_true(rpd_framer_feed(&f, "\nab", 3));
    const char *line;
    size_t len;
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_LINE);
    rpd_framer_trim(&f, 4096);
    assert_non_null(f.buf); /* "ab" is still pending */
    assert_true(rpd_framer_feed(&f, "\n", 1));
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_LINE);
    assert_int_equal(len, 2);
    rpd_framer_trim(&f, 4096);
    assert_null(f.buf);
    assert_int_equal(rpd_framer_pending(&f), 0);
    assert_true(rpd_framer_feed(&f, "z\n", 2)); /* usable again */
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_LINE);
    assert_int_equal(len, 1);
    rpd_framer_free(&f);
}

/* max_line = SIZE_MAX ("no limit", e.g. --max-request-bytes at its
 * maximum) must not wrap when the allowance for a '\r' is added.
 * fuzz_framer runs with this limit too. */
static void no_limit_does_not_wrap(void **state)
{
    (void)state;
    rpd_framer f;
    rpd_framer_init(&f, SIZE_MAX);
    assert_true(rpd_framer_feed(&f, "{\"a\":1}", 7));
    const char *line;
    size_t len;
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_NEED_MORE);
    assert_true(rpd_framer_feed(&f, "\n", 1));
    assert_int_equal(rpd_framer_next(&f, &line, &len), RPD_FRAME_LINE);
    assert_int_equal(len, 7);
    rpd_framer_free(&f);
}

static void byte_at_a_time_equals_all_at_once(void **state)
{
    (void)state;
    const char *text = "{\"jsonrpc\":\"2.0\"}\r\n\nsecond line\nthird\n";
    rpd_framer f;
    rpd_framer_init(&f, 64);
    char out[256] = "";
    for (size_t i = 0; text[i]; i++) {
        size_t avail;
        char *dst = rpd_framer_space(&f, 1, &avail);
        assert_non_null(dst);
        assert_true(avail >= 1);
        *dst = text[i];
        rpd_framer_commit(&f, 1);
        const char *line;
        size_t len;
        while (rpd_framer_next(&f, &line, &len) == RPD_FRAME_LINE) {
            strncat(out, line, len);
            strcat(out, "|");
        }
    }
    assert_string_equal(out, "{\"jsonrpc\":\"2.0\"}||second line|third|");
    rpd_framer_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(line_split_across_reads_is_reassembled),
        cmocka_unit_test(many_lines_in_one_read_come_out_in_order),
        cmocka_unit_test(crlf_drops_the_carriage_return),
        cmocka_unit_test(blank_lines_are_returned_empty),
        cmocka_unit_test(overlong_line_is_reported_before_its_newline),
        cmocka_unit_test(line_of_exactly_the_limit_passes_and_one_more_fails),
        cmocka_unit_test(unterminated_last_line_is_available_at_end_of_stream),
        cmocka_unit_test(unterminated_line_one_over_the_limit_is_too_long),
        cmocka_unit_test(empty_feed_on_a_new_framer_succeeds),
        cmocka_unit_test(no_limit_does_not_wrap),
        cmocka_unit_test(next_on_a_framer_that_never_read_needs_more),
        cmocka_unit_test(trim_frees_only_an_empty_large_buffer),
        cmocka_unit_test(byte_at_a_time_equals_all_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
