/* SPDX-License-Identifier: MIT */
/*
 * Numbers read straight from the text (numbers.c): every value must equal
 * strtod's (which is what cJSON gives) bit for bit, on random doubles in
 * the formats clients send, on random digit strings across the exponent
 * range, on exact halfway cases, and at the edges of the double range; and
 * only the strict JSON grammar is accepted.  The row parser and the
 * check.batch finder are tested on what they must take and refuse.
 */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "codec/codec.h"

static size_t agreed;

/* text must parse whole, to strtod's double. */
static void same_as_strtod(const char *text)
{
    double got = 0.0;
    size_t n = strlen(text);
    size_t used = rp_json_number(text, n, &got);
    double want = strtod(text, NULL);
    if (isinf(want)) {
        if (used != 0)
            fail_msg("%s: overflows, yet parsed (%zu bytes)", text, used);
        return;
    }
    if (used != n)
        fail_msg("%s: parsed %zu of %zu bytes", text, used, n);
    if (!same_bits(got, want))
        fail_msg("%s: got %.17g (%a), strtod %.17g (%a)", text, got, got, want, want);
    agreed++;
}

static double random_double(test_rng *r)
{
    for (;;) {
        uint64_t bits = rng_next(r);
        double d;
        memcpy(&d, &bits, sizeof d);
        if (isfinite(d))
            return d;
    }
}

static void random_doubles_round_trip(void **state)
{
    (void)state;
    test_rng r = {0x5eedc0de1ULL};
    char buf[64];
    /* Formats as precisions of %g, %e and %f (a literal format each, so the
     * compiler can check them). */
    const int prec[] = {17, 16, 15, 6, 3};
    for (int k = 0; k < 200000; k++) {
        double d = random_double(&r);
        /* Joint values: small, as planners send them. */
        double q = rng_uniform(&r, -6.3, 6.3);
        for (size_t f = 0; f < sizeof prec / sizeof prec[0]; f++) {
            snprintf(buf, sizeof buf, "%.*g", prec[f], d);
            same_as_strtod(buf);
            snprintf(buf, sizeof buf, "%.*g", prec[f], q);
            same_as_strtod(buf);
            snprintf(buf, sizeof buf, "%.*e", prec[f], d);
            same_as_strtod(buf);
        }
        if (fabs(d) < 1e20) { /* %f of a huge double: hundreds of digits */
            snprintf(buf, sizeof buf, "%.1f", d);
            same_as_strtod(buf);
        }
    }
}

static void random_digit_strings(void **state)
{
    (void)state;
    test_rng r = {0xd191757ULL};
    char buf[96];
    for (int k = 0; k < 300000; k++) {
        int nd = 1 + (int)(rng_next(&r) % 22);
        size_t at = 0;
        if (rng_next(&r) & 1)
            buf[at++] = '-';
        int point = (int)(rng_next(&r) % (unsigned)(nd + 1));
        for (int i = 0; i < nd; i++) {
            if (i == point && i > 0)
                buf[at++] = '.';
            char c = (char)('0' + rng_next(&r) % 10);
            if (i == 0 && c == '0')
                c = '1' + (char)(rng_next(&r) % 9);
            buf[at++] = c;
        }
        int e = (int)(rng_next(&r) % 700) - 350;
        snprintf(buf + at, sizeof buf - at, "e%d", e);
        same_as_strtod(buf);
    }
}

/* Integers between 2^53 and 2^64 (odd ones above 2^53 are halfway cases
 * or close to them), scaled by powers of ten. */
static void halfway_and_near_halfway(void **state)
{
    (void)state;
    test_rng r = {0x4a1f3a7ULL};
    char buf[64];
    for (int k = 0; k < 200000; k++) {
        int bits = 53 + (int)(rng_next(&r) % 11);
        uint64_t m = (rng_next(&r) >> (64 - bits)) | ((uint64_t)1 << (bits - 1));
        if (bits == 53 || (rng_next(&r) & 1)) {
            /* exactly halfway: one bit beyond the 53 a double holds */
            m = ((uint64_t)1 << 53) | (rng_next(&r) >> 11);
            m = (m << 1) | 1;
        }
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)m);
        same_as_strtod(buf);
        int e = (int)(rng_next(&r) % 60) - 30;
        snprintf(buf, sizeof buf, "%llue%d", (unsigned long long)m, e);
        same_as_strtod(buf);
    }
    const char *known[] = {
        "9007199254740993",
        "9007199254740995",
        "18014398509481985",
        "2.2250738585072011e-308",
        "2.2250738585072014e-308",
        "4.9406564584124654e-324",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.7976931348623159e308",
        "179769313486231580793728971405301e276",
        "0.1",
        "0.3",
        "1e23",
        "8.98846567431158e307",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "5e-324",
        "1e-400",
        "1e400",
        "123456789012345678901234567890",
        "0.000000000000000000000000000001",
        "-0",
        "-0.0",
        "0e999",
        "1e-22",
        "1e22",
        "9007199254740992e22",
        "4503599627370497.5",
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        same_as_strtod(known[i]);
    double z = 1.0;
    assert_int_equal(rp_json_number("-0", 2, &z), 2);
    assert_true(z == 0.0 && signbit(z));
    printf("%zu numbers agree with strtod\n", agreed);
}

static void grammar_is_strict(void **state)
{
    (void)state;
    const char *bad[] = {"",    "-",   "+1",       "01",  "-01",  ".5", "1.",    "1.e5",  "1e",
                         "1e+", "--1", "Infinity", "NaN", "0x10", " 1", "1e400", "-1e400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double d;
        size_t used = rp_json_number(bad[i], strlen(bad[i]), &d);
        /* "01", "-01" and "0x10" parse their leading zero only: the
         * caller then sees a stray character where a delimiter belongs. */
        if (!strcmp(bad[i], "01") || !strcmp(bad[i], "-01") || !strcmp(bad[i], "0x10"))
            assert_int_equal(used, strchr(bad[i], '0') - bad[i] + 1);
        else
            assert_int_equal(used, 0);
    }
    double d;
    assert_int_equal(rp_json_number("1.5,2", 5, &d), 3);
    assert_true(d == 1.5);
    assert_int_equal(rp_json_number("2e-3]", 5, &d), 4);
    assert_true(d == 2e-3);
    /* The length bounds the parse: no reading past it. */
    assert_int_equal(rp_json_number("12345", 2, &d), 2);
    assert_true(d == 12.0);
}

/* rp_json_number_span is the grammar alone: the whole text for every
 * strict number (leading zeros in exponents included), and never the whole
 * text of a lenient one; where rp_json_number succeeds it takes the same
 * bytes. */
static void span_is_the_strict_grammar(void **state)
{
    (void)state;
    static const char *const good[] = {"0",
                                       "-0",
                                       "1",
                                       "-1",
                                       "10",
                                       "1234567890",
                                       "0.5",
                                       "-0.5",
                                       "0.0",
                                       "1.50",
                                       "1e5",
                                       "1E5",
                                       "1e05",
                                       "1e+05",
                                       "1e-05",
                                       "1E+0",
                                       "0e0",
                                       "-0.0e-0",
                                       "123.456e789",
                                       "1e400",
                                       "-1e400",
                                       "2.2250738585072014e-308",
                                       "9007199254740993",
                                       "0.00000000000000000000000000000000000001",
                                       "12345678901234567890123456789"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t n = strlen(good[i]);
        if (rp_json_number_span(good[i], n) != n)
            fail_msg("\"%s\": span %zu", good[i], rp_json_number_span(good[i], n));
        double d;
        size_t used = rp_json_number(good[i], n, &d);
        /* Only a value that overflows makes rp_json_number refuse one. */
        assert_true(used == n || (used == 0 && isinf(strtod(good[i], NULL))));
    }
    /* Bad forms: no span, or a span that stops before the end (the caller
     * then finds a stray byte where a delimiter belongs). */
    static const struct {
        const char *text;
        size_t span;
    } bad[] = {
        {"", 0},      {"-", 0},     {"+1", 0},    {"+0", 0},       {".5", 0},   {"-.5", 0},
        {"1.", 0},    {"-1.", 0},   {"1.e5", 0},  {"1e", 0},       {"1e+", 0},  {"1E-", 0},
        {"--1", 0},   {"-+1", 0},   {"e5", 0},    {"Infinity", 0}, {"NaN", 0},  {"-Infinity", 0},
        {" 1", 0},    {"01", 1},    {"00", 1},    {"-01.50", 2},   {"0x10", 1}, {"007", 1},
        {"1.5.5", 3}, {"1e5e5", 3}, {"1e5.5", 3}, {"1-2", 1},      {"0.5x", 3}, {"1ee5", 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = strlen(bad[i].text), got = rp_json_number_span(bad[i].text, n);
        if (got != bad[i].span)
            fail_msg("\"%s\": span %zu, want %zu", bad[i].text, got, bad[i].span);
        double d;
        assert_int_equal(rp_json_number(bad[i].text, n, &d), got);
    }
    /* The length bounds the span. */
    assert_int_equal(rp_json_number_span("12345", 2), 2);
    assert_int_equal(rp_json_number_span("1.5", 2), 0);
    assert_int_equal(rp_json_number_span("1e5", 2), 0);
}

static void rows(void **state)
{
    (void)state;
    rp_num_rows t;
    const char *ok = "[ [1, 2.5 ,-3e2] ,[4,5,6]\n,[7,8,9]]tail";
    assert_int_equal(rp_json_rows(ok, strlen(ok), &t), strlen(ok) - 4);
    assert_int_equal(t.rows, 3);
    assert_int_equal(t.width, 3);
    assert_int_equal(t.n, 9);
    assert_true(t.v[1] == 2.5 && t.v[2] == -300 && t.v[8] == 9);
    rp_num_rows_free(&t);
    assert_int_equal(rp_json_rows("[]", 2, &t), 2);
    assert_int_equal(t.rows, 0);
    assert_int_equal(rp_json_rows("[[],[]]", 7, &t), 7);
    assert_int_equal(t.rows, 2);
    assert_int_equal(t.width, 0);
    rp_num_rows_free(&t);
    const char *bad[] = {"[[1,2],[3]]", "[[1,\"a\"]]",  "[[1,2],]",   "[[1 2]]",  "[1,2]",
                         "[[1,2]",      "[[1,2],[3,4]", "[[1,],[2]]", "[[null]]", "[{}]",
                         "[[[1]]]",     "[[1e400]]",    "[[01]]",     "{}",       ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rp_json_rows(bad[i], strlen(bad[i]), &t), 0);
        assert_null(t.v);
    }
    /* Many rows: the buffer grows. */
    size_t n = 5000;
    char *big = malloc(n * 40 + 8);
    size_t at = 0;
    big[at++] = '[';
    for (size_t i = 0; i < n; i++)
        at += (size_t)sprintf(big + at, "%s[%zu,%.17g]", i ? "," : "", i, 1.0 / (double)(i + 1));
    big[at++] = ']';
    assert_int_equal(rp_json_rows(big, at, &t), at);
    assert_int_equal(t.rows, n);
    for (size_t i = 0; i < n; i++) {
        assert_true(t.v[2 * i] == (double)i);
        assert_true(same_bits(t.v[2 * i + 1], 1.0 / (double)(i + 1))); /* 17 digits round-trip */
    }
    rp_num_rows_free(&t);
    free(big);
}

static void finds_batch_joints(void **state)
{
    (void)state;
    struct {
        const char *line;
        const char *want; /* the span, or NULL */
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"check.batch\",\"params\":{\"model\":\"m\","
         "\"joints\":[[1,2]],\"scene\":\"s\"}}",
         "[[1,2]]"},
        {" { \"params\" : { \"x\" : {\"joints\": 5}, \"joints\" : [ [1] ] } , \"method\" : "
         "\"check.batch\" } ",
         "[ [1] ]"},
        {"{\"method\":\"check\",\"params\":{\"joints\":[[1]]}}", NULL},
        {"{\"method\":\"check.batch\",\"params\":{\"joints\":[[1]],\"joints\":[[2]]}}", NULL},
        {"{\"method\":\"check.batch\",\"method\":\"check.batch\",\"params\":{\"joints\":[[1]]}}",
         NULL},
        {"{\"method\":\"check.batch\",\"params\":{\"joi\\u006ets\":[[1]]}}", NULL},
        {"{\"method\":\"check.batch\",\"params\":{\"joints\":{\"a\":1}}}", NULL},
        {"{\"method\":\"check.batch\",\"params\":[[1]]}", NULL},
        {"[{\"method\":\"check.batch\",\"params\":{\"joints\":[[1]]}}]", NULL},
        {"{\"method\":\"check.batch\",\"params\":{\"s\":\"}\\\"]\",\"joints\":[[1]]}}", "[[1]]"},
        {"{\"method\":\"check.batch\",\"params\":{\"joints\":[[1]]", NULL},
        {"{\"method\":\"check.batch\",\"params\":{\"joints\":[[1],[\"x\"]]}}", NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t s = 0, e = 0;
        rp_num_rows t;
        bool found = rp_json_batch_joints(cases[c].line, strlen(cases[c].line), &s, &e, &t);
        if (found)
            assert_int_equal(t.rows, 1);
        else
            assert_null(t.v);
        rp_num_rows_free(&t);
        if (!cases[c].want) {
            if (found)
                fail_msg("case %zu: found a span", c);
            continue;
        }
        if (!found)
            fail_msg("case %zu: no span", c);
        assert_int_equal(e - s, strlen(cases[c].want));
        assert_memory_equal(cases[c].line + s, cases[c].want, e - s);
    }
}

/* What cJSON makes of the same texts: equal to this parser's doubles. */
static void same_as_cjson(void **state)
{
    (void)state;
    test_rng r = {0xc0ffeeULL};
    char buf[96];
    for (int k = 0; k < 20000; k++) {
        double d = rng_uniform(&r, -1e3, 1e3) * pow(10.0, rng_uniform(&r, -30, 30));
        snprintf(buf, sizeof buf, k % 2 ? "%.17g" : "%.6g", d);
        cJSON *j = cJSON_Parse(buf);
        assert_non_null(j);
        double got;
        assert_int_equal(rp_json_number(buf, strlen(buf), &got), strlen(buf));
        assert_true(same_bits(got, j->valuedouble));
        cJSON_Delete(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_doubles_round_trip),  cmocka_unit_test(random_digit_strings),
        cmocka_unit_test(halfway_and_near_halfway),   cmocka_unit_test(grammar_is_strict),
        cmocka_unit_test(span_is_the_strict_grammar), cmocka_unit_test(rows),
        cmocka_unit_test(finds_batch_joints),         cmocka_unit_test(same_as_cjson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
