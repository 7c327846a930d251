/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/codec/writer.c: comma placement, string
 * escaping, cJSON echo, buffer growth, shortest round-trip doubles (known
 * values, random bit patterns, powers of two and ten), and shapes of every
 * kind decoding back to the same bits.
 */
#include "test_util.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/codec.h"

static cJSON *parse(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    if (!j)
        fail_msg("cJSON could not parse test input: %s", json);
    return j;
}

/* ---- doubles ----------------------------------------------------------- */

static const char *fmt(double x)
{
    static char buf[64];
    size_t n = rp_format_double(buf, x);
    assert_int_equal(n, strlen(buf));
    return buf;
}

static void format_double_known_values(void **state)
{
    (void)state;
    static const struct {
        double x;
        const char *want;
    } cases[] = {
        {0.0, "0"},
        {-0.0, "-0"},
        {1.0, "1"},
        {-1.0, "-1"},
        {100.0, "100"},
        {1.5, "1.5"},
        {0.1, "0.1"},
        {0.2 + 0.1, "0.30000000000000004"},
        {1.0 / 3.0, "0.3333333333333333"},
        {2.0 / 3.0, "0.6666666666666666"},
        {1e-300, "1e-300"},
        {5e-324, "5e-324"},
        {-5e-324, "-5e-324"},
        {2.2250738585072014e-308, "2.2250738585072014e-308"},
        {2.2250738585072009e-308, "2.225073858507201e-308"},
        {DBL_MAX, "1.7976931348623157e+308"},
        {123456789012345678.0, "1.2345678901234568e+17"},
        {9007199254740992.0, "9007199254740992"},
        {9007199254740993.0 * 2, "18014398509481984"},
        {1e16, "10000000000000000"},
        {1e17, "1e+17"},
        {1e21, "1e+21"},
        {1e22, "1e+22"},
        {1e23, "1e+23"},
        {0.0001, "0.0001"},
        {0.00001, "1e-5"},
        {0.001234, "0.001234"},
        {123.456, "123.456"},
        {-0.5, "-0.5"},
        {9.5, "9.5"},
        {0.3, "0.3"},
        {1e-7, "1e-7"},
        {4.35, "4.35"},
        {5e-310, "5e-310"},
        {1.7976931348623157e308 / 2, "8.988465674311579e+307"},
        {3.141592653589793, "3.141592653589793"},
        {12345678.9, "12345678.9"},
        {9.999999999999999e22, "1e+23"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (strcmp(fmt(cases[i].x), cases[i].want) != 0)
            fail_msg("%.17g formatted as %s, want %s", cases[i].x, fmt(cases[i].x), cases[i].want);
    assert_string_equal(fmt(INFINITY), "null");
    assert_string_equal(fmt(-INFINITY), "null");
    assert_string_equal(fmt(NAN), "null");
}

/* Counts the significant digits of a formatted number and copies them,
 * without leading or trailing zeros, into dig. */
static int sig_digits(const char *s, char *dig)
{
    int n = 0;
    for (; *s && *s != 'e' && *s != 'E'; s++)
        if (*s >= '0' && *s <= '9' && (n > 0 || *s != '0'))
            dig[n++] = *s;
    while (n > 0 && dig[n - 1] == '0')
        n--;
    dig[n] = '\0';
    return n;
}

static double bits_to_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* The properties every output must have: reads back bitwise identical, no
 * longer than "%.17g", no shorter digit string reads back, and equal to the
 * correctly rounded digits of that length whenever those read back. */
static void check_round_trip(double x)
{
    char buf[64], ref[64], dig[32], refdig[32];
    size_t len = rp_format_double(buf, x);
    assert_true(len < 32);
    char *end;
    double back = strtod(buf, &end);
    if (*end != '\0' || !same_bits(back, x))
        fail_msg("%a formatted as %s reads back as %a", x, buf, back);
    int ref_len = snprintf(ref, sizeof ref, "%.17g", x);
    if ((int)len > ref_len)
        fail_msg("%a: %s is longer than %%.17g %s", x, buf, ref);
    int n = sig_digits(buf, dig);
    if (x == 0)
        return;
    if (n > 1) {
        snprintf(ref, sizeof ref, "%.*e", n - 2, x);
        if (same_bits(strtod(ref, NULL), x))
            fail_msg("%a: %s is not shortest, %s also reads back", x, buf, ref);
    }
    snprintf(ref, sizeof ref, "%.*e", n - 1, x);
    if (same_bits(strtod(ref, NULL), x)) {
        sig_digits(ref, refdig);
        if (strcmp(dig, refdig) != 0)
            fail_msg("%a: %s is not the closest, %s", x, buf, ref);
    }
}

static void format_double_round_trips_random_bit_patterns(void **state)
{
    (void)state;
    test_rng rng = {0x5eed0001};
    for (int i = 0; i < 200000; i++) {
        double x = bits_to_double(rng_next(&rng));
        if (isfinite(x))
            check_round_trip(x);
    }
    /* Coordinates and distances as the daemon sees them. */
    for (int i = 0; i < 50000; i++)
        check_round_trip(rng_uniform(&rng, -10, 10));
    /* Subnormals. */
    for (int i = 0; i < 20000; i++)
        check_round_trip(bits_to_double(rng_next(&rng) & 0x800FFFFFFFFFFFFFull));
    /* Short decimals, the common case in requests. */
    for (int i = 0; i < 20000; i++) {
        char s[32];
        snprintf(s, sizeof s, "%de%d", (int)(rng_next(&rng) % 100000),
                 (int)(rng_next(&rng) % 40) - 20);
        check_round_trip(strtod(s, NULL));
    }
}

static void format_double_round_trips_edge_values(void **state)
{
    (void)state;
    /* Every power of two (the lower neighbour is closer there), its
     * neighbours, and every power of ten with its neighbours. */
    for (uint64_t e = 0; e < 2047; e++) {
        uint64_t b = e << 52;
        check_round_trip(bits_to_double(b));
        check_round_trip(bits_to_double(b + 1));
        if (b)
            check_round_trip(bits_to_double(b - 1));
    }
    for (int p = -323; p <= 308; p++) {
        char s[16];
        snprintf(s, sizeof s, "1e%d", p);
        double x = strtod(s, NULL);
        check_round_trip(x);
        check_round_trip(nextafter(x, 0));
        check_round_trip(nextafter(x, INFINITY));
        assert_same_bits(strtod(fmt(x), NULL), x);
    }
    for (int64_t i = -100000; i <= 100000; i++)
        check_round_trip((double)i);
    check_round_trip(DBL_MAX);
    check_round_trip(DBL_MIN);
    check_round_trip(DBL_TRUE_MIN);
    check_round_trip(-DBL_MAX);
}

/* ---- writer ------------------------------------------------------------ */

static void writer_inserts_commas_in_nested_containers(void **state)
{
    (void)state;
    rp_jw w;
    rp_jw_init(&w);
    rp_jw_object_begin(&w);
    rp_jw_key(&w, "jsonrpc");
    rp_jw_string(&w, "2.0");
    rp_jw_key(&w, "id");
    rp_jw_int(&w, 7);
    rp_jw_key(&w, "result");
    rp_jw_object_begin(&w);
    rp_jw_key(&w, "empty_obj");
    rp_jw_object_begin(&w);
    rp_jw_object_end(&w);
    rp_jw_key(&w, "empty_arr");
    rp_jw_array_begin(&w);
    rp_jw_array_end(&w);
    rp_jw_key(&w, "list");
    rp_jw_array_begin(&w);
    rp_jw_uint(&w, 1);
    rp_jw_array_begin(&w);
    rp_jw_array_end(&w);
    rp_jw_array_begin(&w);
    rp_jw_null(&w);
    rp_jw_bool(&w, true);
    rp_jw_array_end(&w);
    rp_jw_object_begin(&w);
    rp_jw_key(&w, "k");
    rp_jw_bool(&w, false);
    rp_jw_object_end(&w);
    rp_jw_double(&w, 0.5);
    rp_jw_array_end(&w);
    rp_jw_key(&w, "raw");
    rp_jw_value_raw(&w, "{\"x\":1}", 7);
    rp_jw_object_end(&w);
    rp_jw_object_end(&w);
    assert_false(w.oom);
    assert_int_equal(w.depth, 0);
    assert_string_equal(w.buf, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"empty_obj\":{},"
                               "\"empty_arr\":[],\"list\":[1,[],[null,true],{\"k\":false},0.5],"
                               "\"raw\":{\"x\":1}}}");
    assert_int_equal(w.len, strlen(w.buf));

    /* reset keeps the buffer and starts a fresh document */
    char *before = w.buf;
    rp_jw_reset(&w);
    assert_int_equal(w.len, 0);
    rp_jw_array_begin(&w);
    rp_jw_array_begin(&w);
    rp_jw_array_begin(&w);
    rp_jw_array_end(&w);
    rp_jw_array_end(&w);
    rp_jw_int(&w, -1);
    rp_jw_array_end(&w);
    rp_jw_raw(&w, "\n", 1);
    assert_ptr_equal(w.buf, before);
    assert_string_equal(w.buf, "[[[]],-1]\n");
    rp_jw_free(&w);
    assert_null(w.buf);
    rp_jw_free(NULL);
}

static void writer_escapes_strings(void **state)
{
    (void)state;
    rp_jw w;
    rp_jw_init(&w);
    rp_jw_array_begin(&w);
    rp_jw_string(&w, "a\"b\\c/\n\r\t\b\f\x01\x1f\x7f \xC3\xA9\xF0\x9F\x98\x80");
    rp_jw_string_n(&w, "nul\0byte", 8);
    rp_jw_string(&w, "");
    rp_jw_array_end(&w);
    assert_string_equal(w.buf, "[\"a\\\"b\\\\c/\\n\\r\\t\\b\\f\\u0001\\u001f\x7f "
                               "\xC3\xA9\xF0\x9F\x98\x80\",\"nul\\u0000byte\",\"\"]");
    rp_jw_reset(&w);
    rp_jw_object_begin(&w);
    rp_jw_key(&w, "we\"ird\n");
    rp_jw_uint(&w, UINT64_MAX);
    rp_jw_key(&w, "min");
    rp_jw_int(&w, INT64_MIN);
    rp_jw_key(&w, "max");
    rp_jw_int(&w, INT64_MAX);
    rp_jw_key(&w, "zero");
    rp_jw_int(&w, 0);
    rp_jw_object_end(&w);
    assert_string_equal(w.buf, "{\"we\\\"ird\\n\":18446744073709551615,"
                               "\"min\":-9223372036854775808,\"max\":9223372036854775807,"
                               "\"zero\":0}");
    /* A string made only of escapes grows past the first reservation. */
    rp_jw_reset(&w);
    char ctl[3000];
    memset(ctl, 1, sizeof ctl);
    rp_jw_string_n(&w, ctl, sizeof ctl);
    assert_false(w.oom);
    assert_int_equal(w.len, 2 + 6 * sizeof ctl);
    assert_memory_equal(w.buf + 1 + 6 * 2999, "\\u0001\"", 7);
    rp_jw_free(&w);
}

static void writer_prints_doubles_vec3_and_shapes_without_spaces(void **state)
{
    (void)state;
    rp_jw w;
    rp_jw_init(&w);
    rp_jw_array_begin(&w);
    rp_jw_double(&w, 0.1);
    rp_jw_double(&w, -0.0);
    rp_jw_double(&w, INFINITY);
    rp_jw_double(&w, NAN);
    rp_jw_double(&w, 1e-300);
    rp_jw_vec3(&w, (rp_vec3){1, -2.5, 1e22});
    rp_jw_array_end(&w);
    assert_string_equal(w.buf, "[0.1,-0,null,null,1e-300,[1,-2.5,1e+22]]");

    rp_jw_reset(&w);
    rp_shape s = rp_shape_from_sphere((rp_sphere){{0.1, 0.2, 0.3}, 0.05});
    rp_shape c = rp_shape_from_capsule((rp_capsule){{0, 0, 0}, {0, 0, 1.5}, 0.25});
    rp_jw_object_begin(&w);
    rp_jw_key(&w, "a");
    rp_jw_shape(&w, &s);
    rp_jw_key(&w, "b");
    rp_jw_shape(&w, &c);
    rp_jw_object_end(&w);
    assert_string_equal(w.buf, "{\"a\":{\"sphere\":{\"center\":[0.1,0.2,0.3],\"radius\":0.05}},"
                               "\"b\":{\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,1.5],"
                               "\"radius\":0.25}}}");

    /* What the writer prints, the decoder reads back exactly. */
    cJSON *j = parse(w.buf);
    rp_codec_err err;
    rp_shape back;
    assert_true(rp_codec_shape(cJSON_GetObjectItem(j, "b"), "b", &back, &err));
    assert_memory_equal(&back.capsule, &c.capsule, sizeof c.capsule);
    cJSON_Delete(j);
    rp_jw_free(&w);
}

static void writer_prints_boxes_and_halfspaces(void **state)
{
    (void)state;
    rp_jw w;
    rp_jw_init(&w);
    rp_shape b = rp_shape_from_box((rp_box){{1, -2, 0.5}, {0.25, 0, 3}, {1, 0, 0, 0}});
    rp_shape h = rp_shape_from_halfspace((rp_halfspace){{0, 0, 1}, -0.75});
    rp_jw_array_begin(&w);
    rp_jw_shape(&w, &b);
    rp_jw_shape(&w, &h);
    rp_jw_array_end(&w);
    /* The rotation is written also when it is the identity. */
    assert_string_equal(w.buf, "[{\"box\":{\"center\":[1,-2,0.5],\"half_extents\":[0.25,0,3],"
                               "\"rotation\":{\"w\":1,\"x\":0,\"y\":0,\"z\":0}}},"
                               "{\"halfspace\":{\"normal\":[0,0,1],\"offset\":-0.75}}]");
    rp_jw_free(&w);
}

/* A finite double from random bits: every exponent, the longest texts. */
static double any_finite(test_rng *r)
{
    double x;
    do
        x = bits_to_double(rng_next(r));
    while (!isfinite(x));
    return x;
}

static void writer_shapes_decode_back_bit_for_bit(void **state)
{
    (void)state;
    test_rng r = {0x5eed0002};
    for (int i = 0; i < 20000; i++) {
        /* Boxes and half-spaces as their constructors leave them, from
         * quaternions and normals at every scale, centres and offsets of
         * any bits. */
        double scale = ldexp(1, (int)(rng_next(&r) % 2000) - 1000);
        rp_box box;
        rp_halfspace hs;
        assert_int_equal(rp_box_new((rp_vec3){any_finite(&r), any_finite(&r), any_finite(&r)},
                                    (rp_vec3){fabs(any_finite(&r)), rng_uniform(&r, 0, 1), 0},
                                    scale * rng_uniform(&r, -1, 1), scale * rng_uniform(&r, -1, 1),
                                    scale * rng_uniform(&r, -1, 1), scale * rng_uniform(&r, -1, 1),
                                    &box),
                         RP_OK);
        assert_int_equal(rp_halfspace_new((rp_vec3){scale * rng_uniform(&r, -1, 1),
                                                    scale * rng_uniform(&r, -1, 1),
                                                    scale * rng_uniform(&r, -1, 1)},
                                          rng_uniform(&r, -1, 1), &hs),
                         RP_OK);
        if (!isfinite(hs.offset)) /* a tiny normal's offset past DBL_MAX */
            hs.offset = any_finite(&r);
        const rp_shape shapes[] = {
            rp_shape_from_box(box),
            rp_shape_from_halfspace(hs),
            rp_shape_from_halfspace((rp_halfspace){hs.normal, any_finite(&r)}),
            rp_shape_from_sphere((rp_sphere){box.center, fabs(any_finite(&r))}),
            rp_shape_from_capsule((rp_capsule){box.center, box.half_extents, box.half_extents.x}),
        };
        rp_jw w;
        rp_jw_init(&w);
        rp_jw_array_begin(&w);
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
            rp_jw_shape(&w, &shapes[k]);
        rp_jw_array_end(&w);
        cJSON *j = parse(w.buf);
        const cJSON *c = j->child;
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++, c = c->next) {
            const rp_shape *s = &shapes[k];
            rp_codec_err err;
            rp_shape back;
            if (!rp_codec_shape(c, "s", &back, &err))
                fail_msg("%s: %s %s", w.buf, err.path, err.reason);
            assert_int_equal(back.kind, s->kind);
            switch (s->kind) {
            case RP_SHAPE_SPHERE:
                assert_memory_equal(&back.sphere, &s->sphere, sizeof s->sphere);
                break;
            case RP_SHAPE_CAPSULE:
                assert_memory_equal(&back.capsule, &s->capsule, sizeof s->capsule);
                break;
            case RP_SHAPE_BOX:
                assert_memory_equal(&back.box, &s->box, sizeof s->box);
                break;
            case RP_SHAPE_HALFSPACE:
                assert_memory_equal(&back.halfspace, &s->halfspace, sizeof s->halfspace);
                break;
            }
        }
        cJSON_Delete(j);
        rp_jw_free(&w);
    }
}

static void writer_echoes_cjson_values(void **state)
{
    (void)state;
    static const char *const values[] = {
        "7",
        "-0",
        "\"req-1\"",
        "null",
        "true",
        "false",
        "1.5e300",
        "[]",
        "{}",
        "[1,\"two\",[3,{\"four\":4}],null]",
        "{\"a\":{\"b\":[true,false]},\"c\":\"\\n\\u00e9\"}",
        "123456789012345678",
    };
    static const char *const want[] = {
        "7",
        "-0",
        "\"req-1\"",
        "null",
        "true",
        "false",
        "1.5e+300",
        "[]",
        "{}",
        "[1,\"two\",[3,{\"four\":4}],null]",
        "{\"a\":{\"b\":[true,false]},\"c\":\"\\n\xC3\xA9\"}",
        "1.2345678901234568e+17",
    };
    rp_jw w;
    rp_jw_init(&w);
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        cJSON *j = parse(values[i]);
        rp_jw_reset(&w);
        rp_jw_cjson(&w, j);
        assert_string_equal(w.buf, want[i]);
        cJSON_Delete(j);
    }
    rp_jw_reset(&w);
    rp_jw_array_begin(&w);
    rp_jw_cjson(&w, NULL);
    rp_jw_array_end(&w);
    assert_string_equal(w.buf, "[null]");
    rp_jw_free(&w);
}

static void writer_grows_geometrically_and_fails_on_overdeep_nesting(void **state)
{
    (void)state;
    rp_jw w;
    rp_jw_init(&w);
    assert_true(rp_jw_reserve(&w, 10));
    assert_true(w.cap >= 11);
    rp_jw_array_begin(&w);
    size_t grows = 0, cap = w.cap;
    for (int i = 0; i < 200000; i++) {
        rp_jw_int(&w, i);
        if (w.cap != cap) {
            assert_true(w.cap >= 2 * cap);
            cap = w.cap;
            grows++;
        }
    }
    rp_jw_array_end(&w);
    assert_false(w.oom);
    assert_true(grows < 20);
    cJSON *j = cJSON_ParseWithLength(w.buf, w.len);
    assert_non_null(j);
    assert_int_equal(cJSON_GetArraySize(j), 200000);
    assert_int_equal((int)cJSON_GetArrayItem(j, 199999)->valuedouble, 199999);
    cJSON_Delete(j);

    rp_jw_reset(&w);
    for (int i = 0; i < RP_JW_MAX_DEPTH; i++)
        rp_jw_array_begin(&w);
    assert_false(w.oom);
    rp_jw_array_begin(&w);
    assert_true(w.oom);
    size_t len = w.len;
    rp_jw_int(&w, 1); /* dropped once failed */
    assert_int_equal(w.len, len);
    rp_jw_reset(&w);
    assert_false(w.oom);
    rp_jw_free(&w);
}

/* The byte limit: writes that would pass it are dropped and `over` is set;
 * a rewind keeps the limit; clearing the failure accepts writes again; and
 * a writer whose length is already past its limit (an error written with
 * the limit lifted) still refuses more. */
static void writer_limit_stops_writes_and_recovers(void **state)
{
    (void)state;
    rp_jw w;
    rp_jw_init(&w);
    rp_jw_set_limit(&w, 16);
    rp_jw mark = w;
    rp_jw_string(&w, "0123456789");
    assert_false(rp_jw_failed(&w));
    assert_int_equal(w.len, 12);
    rp_jw_string(&w, "abc");
    assert_true(w.over);
    assert_false(w.oom);
    assert_int_equal(w.len, 12);
    rp_jw_rewind(&w, &mark);
    assert_true(w.over); /* sticky until cleared */
    rp_jw_clear_failure(&w);
    assert_int_equal(w.limit, 16);
    rp_jw_string(&w, "abc");
    assert_false(rp_jw_failed(&w));
    assert_string_equal(w.buf, "\"abc\"");

    rp_jw_set_limit(&w, SIZE_MAX);
    rp_jw_string(&w, "a longer string past the old limit");
    rp_jw_set_limit(&w, 16); /* len is now past it */
    rp_jw_raw(&w, "x", 1);
    assert_true(w.over);
    rp_jw_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writer_limit_stops_writes_and_recovers),
        cmocka_unit_test(format_double_known_values),
        cmocka_unit_test(format_double_round_trips_random_bit_patterns),
        cmocka_unit_test(format_double_round_trips_edge_values),
        cmocka_unit_test(writer_inserts_commas_in_nested_containers),
        cmocka_unit_test(writer_escapes_strings),
        cmocka_unit_test(writer_prints_doubles_vec3_and_shapes_without_spaces),
        cmocka_unit_test(writer_prints_boxes_and_halfspaces),
        cmocka_unit_test(writer_shapes_decode_back_bit_for_bit),
        cmocka_unit_test(writer_echoes_cjson_values),
        cmocka_unit_test(writer_grows_geometrically_and_fails_on_overdeep_nesting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
