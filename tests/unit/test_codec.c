/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/codec/decode.c: every decoder's rejections with their
 * exact path and reason, and the values it accepts.  The writer and the
 * double formatting are in test_codec_writer.c, the pre-scan in
 * test_codec_prescan.c.
 */
#include "test_util.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/codec.h"

/* ---- helpers --------------------------------------------------------- */

static cJSON *parse(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    if (!j)
        fail_msg("cJSON could not parse test input: %s", json);
    return j;
}

#define assert_err(err, want_path, want_reason)                                                    \
    do {                                                                                           \
        assert_string_equal((err).path, (want_path));                                              \
        assert_string_equal((err).reason, (want_reason));                                          \
    } while (0)

typedef struct reject_case {
    const char *json;   /* the value handed to the decoder */
    const char *path;   /* expected error path */
    const char *reason; /* expected reason */
} reject_case;

typedef bool (*shape_like_fn)(const cJSON *, const char *, void *, rp_codec_err *);

static bool shape_fn(const cJSON *j, const char *path, void *out, rp_codec_err *err)
{
    return rp_codec_shape(j, path, out, err);
}

static bool pose_fn(const cJSON *j, const char *path, void *out, rp_codec_err *err)
{
    return rp_codec_pose(j, path, out, err);
}

/* Runs each case through fn at path "params.a" and checks path and reason. */
static void run_rejects(const reject_case *cases, size_t n, shape_like_fn fn)
{
    for (size_t i = 0; i < n; i++) {
        cJSON *j = parse(cases[i].json);
        rp_codec_err err = {{0}, {0}};
        union {
            rp_shape s;
            rp_transform t;
        } out;
        bool ok = fn(j, "params.a", &out, &err);
        if (ok)
            fail_msg("accepted %s", cases[i].json);
        if (strcmp(err.path, cases[i].path) != 0 || strcmp(err.reason, cases[i].reason) != 0)
            fail_msg("%s: got %s \"%s\", want %s \"%s\"", cases[i].json, err.path, err.reason,
                     cases[i].path, cases[i].reason);
        cJSON_Delete(j);
    }
}

static rp_shape decode_shape_ok(const char *json)
{
    cJSON *j = parse(json);
    rp_codec_err err;
    rp_shape s;
    if (!rp_codec_shape(j, "params.a", &s, &err))
        fail_msg("%s rejected: %s %s", json, err.path, err.reason);
    cJSON_Delete(j);
    return s;
}

static rp_transform decode_pose_ok(const char *json)
{
    cJSON *j = parse(json);
    rp_codec_err err;
    rp_transform t;
    if (!rp_codec_pose(j, "params.base", &t, &err))
        fail_msg("%s rejected: %s %s", json, err.path, err.reason);
    cJSON_Delete(j);
    return t;
}

static void assert_rotation(const rp_transform *t, const double want[3][3], double tol)
{
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            assert_near(t->r[i][k], want[i][k], tol);
}

/* ---- paths and errors ------------------------------------------------ */

static void paths_append_keys_and_indices(void **state)
{
    (void)state;
    char a[RP_CODEC_PATH_MAX], b[RP_CODEC_PATH_MAX];
    assert_string_equal(rp_codec_path_key(a, "params", "shapes"), "params.shapes");
    assert_string_equal(rp_codec_path_key(b, a, "post"), "params.shapes.post");
    assert_string_equal(rp_codec_path_key(b, b, "capsule"), "params.shapes.post.capsule");
    assert_string_equal(rp_codec_path_index(a, "params.frames", 3), "params.frames[3]");
    assert_string_equal(rp_codec_path_key(a, a, "rotation"), "params.frames[3].rotation");
    assert_string_equal(rp_codec_path_index(a, "m", 0), "m[0]");
    assert_string_equal(rp_codec_path_index(a, a, 18446744073709551615u),
                        "m[0][18446744073709551615]");
    assert_string_equal(rp_codec_path_key(a, "", "params"), "params");
}

static void paths_truncate_at_character_boundary(void **state)
{
    (void)state;
    char base[RP_CODEC_PATH_MAX], out[RP_CODEC_PATH_MAX];
    memset(base, 'x', 252);
    base[252] = '\0';
    /* "é" is 2 bytes: ".é" fits in 255 only partly, so "é" is dropped whole. */
    rp_codec_path_key(out, base, "\xC3\xA9\xC3\xA9");
    assert_int_equal(strlen(out), 255);
    assert_memory_equal(out + 252, ".\xC3\xA9", 3);
    memset(base, 'x', 253);
    base[253] = '\0';
    rp_codec_path_key(out, base, "\xC3\xA9");
    assert_string_equal(out + 253, ".");
    /* A path that is already too long is cut, never overrun. */
    char longp[600];
    memset(longp, 'y', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    rp_codec_path_index(out, longp, 7);
    assert_int_equal(strlen(out), RP_CODEC_PATH_MAX - 1);
}

static void fail_formats_reason_and_returns_false(void **state)
{
    (void)state;
    rp_codec_err err;
    assert_false(rp_codec_fail(&err, "params.x", "must be at most %d", 5));
    assert_err(err, "params.x", "must be at most 5");
    char longr[400];
    memset(longr, 'r', sizeof longr - 1);
    longr[sizeof longr - 1] = '\0';
    assert_false(rp_codec_fail(&err, "p", "%s", longr));
    assert_int_equal(strlen(err.reason), RP_CODEC_REASON_MAX - 1);
    assert_false(rp_codec_fail(NULL, "p", "ignored"));
}

/* ---- scalars --------------------------------------------------------- */

static void numbers_reject_wrong_types_and_non_finite(void **state)
{
    (void)state;
    cJSON *j = parse("{\"n\":1.5,\"s\":\"1\",\"inf\":1e400,\"ninf\":-1e400,\"neg\":-2,"
                     "\"z\":-0,\"t\":true,\"f\":false,\"nul\":null}");
    rp_codec_err err;
    double d;
    bool b;
    assert_true(rp_codec_number(cJSON_GetObjectItem(j, "n"), "p.n", &d, &err));
    assert_true(d == 1.5);
    assert_false(rp_codec_number(NULL, "p.m", &d, &err));
    assert_err(err, "p.m", "is required");
    assert_false(rp_codec_number(cJSON_GetObjectItem(j, "s"), "p.s", &d, &err));
    assert_err(err, "p.s", "must be a number");
    assert_false(rp_codec_number(cJSON_GetObjectItem(j, "nul"), "p.nul", &d, &err));
    assert_err(err, "p.nul", "must be a number");
    assert_false(rp_codec_number(cJSON_GetObjectItem(j, "inf"), "p.inf", &d, &err));
    assert_err(err, "p.inf", "must be finite");
    assert_false(rp_codec_number(cJSON_GetObjectItem(j, "ninf"), "p.ninf", &d, &err));
    assert_err(err, "p.ninf", "must be finite");

    assert_true(rp_codec_nonneg(cJSON_GetObjectItem(j, "z"), "p.z", &d, &err));
    assert_same_bits(d, 0.0); /* -0 is stored as +0 */
    assert_false(rp_codec_nonneg(cJSON_GetObjectItem(j, "neg"), "p.neg", &d, &err));
    assert_err(err, "p.neg", "must be finite and >= 0");
    assert_false(rp_codec_nonneg(cJSON_GetObjectItem(j, "inf"), "p.inf", &d, &err));
    assert_err(err, "p.inf", "must be finite and >= 0");
    assert_false(rp_codec_nonneg(cJSON_GetObjectItem(j, "s"), "p.s", &d, &err));
    assert_err(err, "p.s", "must be a number");
    assert_false(rp_codec_nonneg(NULL, "p.r", &d, &err));
    assert_err(err, "p.r", "is required");

    assert_true(rp_codec_bool(cJSON_GetObjectItem(j, "t"), "p.t", &b, &err));
    assert_true(b);
    assert_true(rp_codec_bool(cJSON_GetObjectItem(j, "f"), "p.f", &b, &err));
    assert_false(b);
    assert_false(rp_codec_bool(cJSON_GetObjectItem(j, "n"), "p.n", &b, &err));
    assert_err(err, "p.n", "must be a boolean");
    assert_false(rp_codec_bool(NULL, "p.w", &b, &err));
    assert_err(err, "p.w", "is required");

    const char *s;
    assert_true(rp_codec_string(cJSON_GetObjectItem(j, "s"), "p.s", &s, &err));
    assert_string_equal(s, "1");
    assert_false(rp_codec_string(cJSON_GetObjectItem(j, "n"), "p.n", &s, &err));
    assert_err(err, "p.n", "must be a string");
    cJSON_Delete(j);
}

static void uint_accepts_integers_up_to_2_pow_53(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        uint64_t want;
    } ok[] = {
        {"0", 0},   {"-0", 0},     {"42", 42},
        {"1.0", 1}, {"1e3", 1000}, {"9007199254740992", 9007199254740992ull},
    };
    static const char *const bad[] = {
        "-1", "1.5", "9007199254740994", "1e300", "1e400", "\"1\"", "true", "null", "[1]",
    };
    rp_codec_err err;
    uint64_t u;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        cJSON *j = parse(ok[i].json);
        assert_true(rp_codec_uint(j, "params.if_revision", &u, &err));
        assert_true(u == ok[i].want);
        cJSON_Delete(j);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *j = parse(bad[i]);
        if (rp_codec_uint(j, "params.if_revision", &u, &err))
            fail_msg("accepted %s", bad[i]);
        assert_err(err, "params.if_revision", "must be a non-negative integer");
        cJSON_Delete(j);
    }
    assert_false(rp_codec_uint(NULL, "params.if_revision", &u, &err));
    assert_err(err, "params.if_revision", "is required");
}

/* ---- names and ids --------------------------------------------------- */

#define NAME_REASON "must be 1-128 characters of [A-Za-z0-9_.-], not starting with '.'"
#define ID_REASON "must be 1-128 characters of [A-Za-z0-9_.:/#-]"

static void names_allow_1_to_128_safe_characters(void **state)
{
    (void)state;
    char s128[130], s129[131];
    memset(s128, 'a', 128);
    s128[128] = '\0';
    memset(s129, 'b', 129);
    s129[129] = '\0';
    assert_true(rp_codec_valid_name(s128));
    assert_false(rp_codec_valid_name(s129));
    assert_true(rp_codec_valid_id(s128));
    assert_false(rp_codec_valid_id(s129));

    static const char *const good_names[] = {"a", "Scene_1", "a.b-c", "0", "x.", "A-Z_a-z.0-9"};
    static const char *const bad_names[] = {"",         ".hidden", ".",    "a b",  "a/b", "a:b",
                                            "\xC3\xA9", "tab\t",   "a\"b", "a\\b", "*"};
    static const char *const good_ids[] = {"a", "link/3", "ns:arm.upper-1", ".x",
                                           "/", "a_b",    "hand#0",         "#"};
    static const char *const bad_ids[] = {"", "a b", "a,b", "caf\xC3\xA9", "a\nb", "a=b"};
    for (size_t i = 0; i < sizeof good_names / sizeof *good_names; i++)
        if (!rp_codec_valid_name(good_names[i]))
            fail_msg("name \"%s\" rejected", good_names[i]);
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++)
        if (rp_codec_valid_name(bad_names[i]))
            fail_msg("name \"%s\" accepted", bad_names[i]);
    for (size_t i = 0; i < sizeof good_ids / sizeof *good_ids; i++)
        if (!rp_codec_valid_id(good_ids[i]))
            fail_msg("id \"%s\" rejected", good_ids[i]);
    for (size_t i = 0; i < sizeof bad_ids / sizeof *bad_ids; i++)
        if (rp_codec_valid_id(bad_ids[i]))
            fail_msg("id \"%s\" accepted", bad_ids[i]);
    assert_false(rp_codec_valid_name(NULL));
    assert_false(rp_codec_valid_id(NULL));
}

static void name_and_id_decoders_report_path_and_reason(void **state)
{
    (void)state;
    cJSON *j = parse("{\"good\":\"arm.v2\",\"dot\":\".arm\",\"slash\":\"a/b\",\"empty\":\"\","
                     "\"num\":7,\"link\":\"ns:link/3\",\"space\":\"a b\"}");
    rp_codec_err err;
    const char *s;
    assert_true(rp_codec_name(cJSON_GetObjectItem(j, "good"), "params.scene", &s, &err));
    assert_string_equal(s, "arm.v2");
    assert_false(rp_codec_name(cJSON_GetObjectItem(j, "dot"), "params.scene", &s, &err));
    assert_err(err, "params.scene", NAME_REASON);
    assert_false(rp_codec_name(cJSON_GetObjectItem(j, "slash"), "params.model", &s, &err));
    assert_err(err, "params.model", NAME_REASON);
    assert_false(rp_codec_name(cJSON_GetObjectItem(j, "empty"), "params.scene", &s, &err));
    assert_err(err, "params.scene", NAME_REASON);
    assert_false(rp_codec_name(cJSON_GetObjectItem(j, "num"), "params.scene", &s, &err));
    assert_err(err, "params.scene", "must be a string");
    assert_false(rp_codec_name(NULL, "params.scene", &s, &err));
    assert_err(err, "params.scene", "is required");

    assert_true(rp_codec_id(cJSON_GetObjectItem(j, "link"), "params.links[0].id", &s, &err));
    assert_string_equal(s, "ns:link/3");
    assert_true(rp_codec_id(cJSON_GetObjectItem(j, "slash"), "params.links[0].id", &s, &err));
    assert_false(rp_codec_id(cJSON_GetObjectItem(j, "space"), "params.links[1].id", &s, &err));
    assert_err(err, "params.links[1].id", ID_REASON);
    assert_false(rp_codec_id(cJSON_GetObjectItem(j, "empty"), "params.ids[0]", &s, &err));
    assert_err(err, "params.ids[0]", ID_REASON);
    assert_false(rp_codec_id(cJSON_GetObjectItem(j, "num"), "params.ids[0]", &s, &err));
    assert_err(err, "params.ids[0]", "must be a string");
    cJSON_Delete(j);
}

/* ---- objects --------------------------------------------------------- */

static void object_keys_reject_unknown_and_duplicate_keys(void **state)
{
    (void)state;
    static const char *const allowed[] = {"scene", "shapes", "if_revision", NULL};
    rp_codec_err err;
    cJSON *j = parse("{\"scene\":\"s\",\"shapes\":{}}");
    assert_true(rp_codec_object_keys(j, "params", allowed, &err));
    cJSON_Delete(j);
    j = parse("{}");
    assert_true(rp_codec_object_keys(j, "params", allowed, &err));
    cJSON_Delete(j);
    j = parse("{\"scene\":\"s\",\"shape\":{}}");
    assert_false(rp_codec_object_keys(j, "params", allowed, &err));
    assert_err(err, "params.shape", "unknown key");
    cJSON_Delete(j);
    j = parse("{\"scene\":\"s\",\"if_revision\":1,\"scene\":\"t\"}");
    assert_false(rp_codec_object_keys(j, "params", allowed, &err));
    assert_err(err, "params.scene", "duplicate key");
    cJSON_Delete(j);
    j = parse("{\"Scene\":\"s\"}"); /* keys are case-sensitive */
    assert_false(rp_codec_object_keys(j, "params", allowed, &err));
    assert_err(err, "params.Scene", "unknown key");
    cJSON_Delete(j);
    j = parse("[1]");
    assert_false(rp_codec_object_keys(j, "params", allowed, &err));
    assert_err(err, "params", "must be an object");
    cJSON_Delete(j);
    assert_false(rp_codec_object_keys(NULL, "params", allowed, &err));
    assert_err(err, "params", "is required");
}

static void object_unique_finds_duplicates_in_large_maps(void **state)
{
    (void)state;
    rp_codec_err err;
    cJSON *small = parse("{\"a\":1,\"b\":2,\"a\":3}");
    assert_int_equal(rp_codec_object_unique(small, "params.shapes", &err), RP_ERR_INVALID_ARG);
    assert_err(err, "params.shapes.a", "duplicate key");
    cJSON_Delete(small);

    cJSON *big = cJSON_CreateObject();
    char key[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "s%d", i);
        cJSON_AddItemToObject(big, key, cJSON_CreateNumber(i));
    }
    assert_int_equal(rp_codec_object_unique(big, "params.shapes", &err), RP_OK);
    cJSON_AddItemToObject(big, "s4321", cJSON_CreateNull());
    cJSON_AddItemToObject(big, "s17", cJSON_CreateNull());
    assert_int_equal(rp_codec_object_unique(big, "params.shapes", &err), RP_ERR_INVALID_ARG);
    assert_err(err, "params.shapes.s4321", "duplicate key");
    cJSON_Delete(big);

    cJSON *arr = parse("[]");
    assert_int_equal(rp_codec_object_unique(arr, "params.shapes", &err), RP_ERR_INVALID_ARG);
    assert_err(err, "params.shapes", "must be an object");
    cJSON_Delete(arr);
    cJSON *empty = parse("{}");
    assert_int_equal(rp_codec_object_unique(empty, "params.shapes", &err), RP_OK);
    cJSON_Delete(empty);
}

/* ---- vec3 and shapes ------------------------------------------------- */

static void vec3_requires_three_finite_numbers(void **state)
{
    (void)state;
    static const reject_case cases[] = {
        {"[1,2]", "params.v", "must be an array of 3 numbers"},
        {"[1,2,3,4]", "params.v", "must be an array of 3 numbers"},
        {"[]", "params.v", "must be an array of 3 numbers"},
        {"{\"x\":1,\"y\":2,\"z\":3}", "params.v", "must be an array of 3 numbers"},
        {"7", "params.v", "must be an array of 3 numbers"},
        {"[1,\"2\",3]", "params.v[1]", "must be a number"},
        {"[1,2,null]", "params.v[2]", "must be a number"},
        {"[1e400,2,3]", "params.v[0]", "must be finite"},
        {"[1,2,-1e999]", "params.v[2]", "must be finite"},
        {"[[1],2,3]", "params.v[0]", "must be a number"},
    };
    rp_codec_err err;
    rp_vec3 v;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *j = parse(cases[i].json);
        if (rp_codec_vec3(j, "params.v", &v, &err))
            fail_msg("accepted %s", cases[i].json);
        if (strcmp(err.path, cases[i].path) || strcmp(err.reason, cases[i].reason))
            fail_msg("%s: got %s \"%s\"", cases[i].json, err.path, err.reason);
        cJSON_Delete(j);
    }
    assert_false(rp_codec_vec3(NULL, "params.v", &v, &err));
    assert_err(err, "params.v", "is required");
    cJSON *j = parse("[1.5,-2,3e-300]");
    assert_true(rp_codec_vec3(j, "params.v", &v, &err));
    assert_true(v.x == 1.5 && v.y == -2 && v.z == 3e-300);
    cJSON_Delete(j);
}

static void shape_rejections_name_the_offending_value(void **state)
{
    (void)state;
    static const reject_case cases[] = {
        {"[]", "params.a", "must be an object"},
        {"\"sphere\"", "params.a", "must be an object"},
        {"{}", "params.a", "must have exactly one of sphere, capsule, box, halfspace"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":1},"
         "\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,1],\"radius\":1}}",
         "params.a", "must have exactly one of sphere, capsule, box, halfspace"},
        {"{\"cylinder\":{}}", "params.a.cylinder", "unknown key"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":1},\"color\":\"red\"}", "params.a.color",
         "unknown key"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":1},\"sphere\":{\"center\":[0,0,0],"
         "\"radius\":2}}",
         "params.a.sphere", "duplicate key"},
        {"{\"sphere\":5}", "params.a.sphere", "must be an object"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":1,\"color\":1}}", "params.a.sphere.color",
         "unknown key"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":1,\"radius\":2}}", "params.a.sphere.radius",
         "duplicate key"},
        {"{\"sphere\":{\"radius\":1}}", "params.a.sphere.center", "is required"},
        {"{\"sphere\":{\"center\":[0,0,0]}}", "params.a.sphere.radius", "is required"},
        {"{\"sphere\":{\"center\":[0,\"x\",0],\"radius\":1}}", "params.a.sphere.center[1]",
         "must be a number"},
        {"{\"sphere\":{\"center\":[0,1e400,0],\"radius\":1}}", "params.a.sphere.center[1]",
         "must be finite"},
        {"{\"sphere\":{\"center\":[0,0],\"radius\":1}}", "params.a.sphere.center",
         "must be an array of 3 numbers"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":-1}}", "params.a.sphere.radius",
         "must be finite and >= 0"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":-1e-300}}", "params.a.sphere.radius",
         "must be finite and >= 0"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":1e400}}", "params.a.sphere.radius",
         "must be finite and >= 0"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":\"1\"}}", "params.a.sphere.radius",
         "must be a number"},
        {"{\"capsule\":{\"a\":[0,0,0],\"radius\":1}}", "params.a.capsule.b", "is required"},
        {"{\"capsule\":{\"a\":[0,0,true],\"b\":[0,0,1],\"radius\":1}}", "params.a.capsule.a[2]",
         "must be a number"},
        {"{\"capsule\":{\"a\":[0,0,0],\"b\":[0,-1e309,1],\"radius\":1}}", "params.a.capsule.b[1]",
         "must be finite"},
        {"{\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,1],\"radius\":-0.5}}", "params.a.capsule.radius",
         "must be finite and >= 0"},
        {"{\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,1],\"radius\":1,\"c\":[0,0,0]}}",
         "params.a.capsule.c", "unknown key"},
        {"{\"capsule\":{\"a\":[0,0,0],\"a\":[0,0,0],\"b\":[0,0,1],\"radius\":1}}",
         "params.a.capsule.a", "duplicate key"},
        {"{\"capsule\":[]}", "params.a.capsule", "must be an object"},
    };
    run_rejects(cases, sizeof cases / sizeof *cases, shape_fn);

    rp_codec_err err;
    rp_shape s;
    assert_false(rp_codec_shape(NULL, "params.b", &s, &err));
    assert_err(err, "params.b", "is required");
}

static void shape_paths_nest_under_map_ids(void **state)
{
    (void)state;
    cJSON *j = parse("{\"post\":{\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,2],\"radius\":-1}}}");
    char p[RP_CODEC_PATH_MAX];
    rp_codec_err err;
    rp_shape s;
    const cJSON *post = cJSON_GetObjectItem(j, "post");
    assert_false(
        rp_codec_shape(post, rp_codec_path_key(p, "params.shapes", post->string), &s, &err));
    assert_err(err, "params.shapes.post.capsule.radius", "must be finite and >= 0");
    cJSON_Delete(j);
}

static void shape_accepts_spheres_and_capsules(void **state)
{
    (void)state;
    rp_shape s = decode_shape_ok("{\"sphere\":{\"center\":[1,2,3],\"radius\":0.5}}");
    assert_int_equal(s.kind, RP_SHAPE_SPHERE);
    assert_true(s.sphere.center.x == 1 && s.sphere.center.y == 2 && s.sphere.center.z == 3);
    assert_true(s.sphere.radius == 0.5);

    s = decode_shape_ok("{\"sphere\":{\"radius\":0,\"center\":[0,0,0]}}"); /* any key order */
    assert_same_bits(s.sphere.radius, 0.0);
    s = decode_shape_ok("{\"sphere\":{\"center\":[0,0,0],\"radius\":-0}}");
    assert_same_bits(s.sphere.radius, 0.0);

    s = decode_shape_ok("{\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,1],\"radius\":0.1}}");
    assert_int_equal(s.kind, RP_SHAPE_CAPSULE);
    assert_true(s.capsule.b.z == 1 && s.capsule.radius == 0.1);
    s = decode_shape_ok("{\"capsule\":{\"radius\":2,\"b\":[5,5,5],\"a\":[5,5,5]}}");
    assert_true(s.capsule.a.x == 5 && s.capsule.b.x == 5 && s.capsule.radius == 2);
}

#define ONE_KIND "must have exactly one of sphere, capsule, box, halfspace"
#define BOX_AT(body) "{\"box\":{" body "}}"
#define UNIT_BOX "\"center\":[0,0,0],\"half_extents\":[1,1,1]"
#define HALFSPACE_AT(body) "{\"halfspace\":{" body "}}"

static void box_and_halfspace_rejections_name_the_offending_value(void **state)
{
    (void)state;
    static const reject_case cases[] = {
        /* One kind per shape. */
        {"{\"box\":{" UNIT_BOX "},\"sphere\":{\"center\":[0,0,0],\"radius\":1}}", "params.a",
         ONE_KIND},
        {"{\"box\":{" UNIT_BOX "},\"halfspace\":{\"normal\":[0,0,1],\"offset\":0}}", "params.a",
         ONE_KIND},
        {"{\"box\":[]}", "params.a.box", "must be an object"},
        {"{\"halfspace\":null}", "params.a.halfspace", "must be an object"},
        /* Box fields, in declaration order. */
        {BOX_AT("\"half_extents\":[1,1,1]"), "params.a.box.center", "is required"},
        {BOX_AT("\"center\":[0,0,0]"), "params.a.box.half_extents", "is required"},
        {BOX_AT(UNIT_BOX ",\"color\":\"red\""), "params.a.box.color", "unknown key"},
        {BOX_AT(UNIT_BOX ",\"size\":[1,1,1]"), "params.a.box.size", "unknown key"},
        {BOX_AT(UNIT_BOX ",\"center\":[0,0,0]"), "params.a.box.center", "duplicate key"},
        {BOX_AT("\"center\":[0,\"NaN\",0],\"half_extents\":[1,1,1]"), "params.a.box.center[1]",
         "must be a number"},
        {BOX_AT("\"center\":[0,1e999,0],\"half_extents\":[1,1,1]"), "params.a.box.center[1]",
         "must be finite"},
        {BOX_AT("\"center\":[0,0],\"half_extents\":[1,1,1]"), "params.a.box.center",
         "must be an array of 3 numbers"},
        {BOX_AT("\"center\":[0,0,0],\"half_extents\":[1,-1,1]"), "params.a.box.half_extents[1]",
         "must be finite and >= 0"},
        {BOX_AT("\"center\":[0,0,0],\"half_extents\":[1,1,-1e-300]"),
         "params.a.box.half_extents[2]", "must be finite and >= 0"},
        {BOX_AT("\"center\":[0,0,0],\"half_extents\":[1e400,1,1]"), "params.a.box.half_extents[0]",
         "must be finite and >= 0"},
        {BOX_AT("\"center\":[0,0,0],\"half_extents\":[1,\"1e400\",1]"),
         "params.a.box.half_extents[1]", "must be a number"},
        {BOX_AT("\"center\":[0,0,0],\"half_extents\":[1,1]"), "params.a.box.half_extents",
         "must be an array of 3 numbers"},
        {BOX_AT("\"center\":[0,0,0],\"half_extents\":{\"x\":1,\"y\":1,\"z\":1}"),
         "params.a.box.half_extents", "must be an array of 3 numbers"},
        /* The rotation, as a pose's. */
        {BOX_AT(UNIT_BOX ",\"rotation\":[1,0,0,0]"), "params.a.box.rotation",
         "must be an object {\"w\":..,\"x\":..,\"y\":..,\"z\":..}, not a list"},
        {BOX_AT(UNIT_BOX ",\"rotation\":\"identity\""), "params.a.box.rotation",
         "must be an object {\"w\":..,\"x\":..,\"y\":..,\"z\":..}"},
        {BOX_AT(UNIT_BOX ",\"rotation\":{\"w\":1,\"x\":0,\"y\":0}"), "params.a.box.rotation.z",
         "is required"},
        {BOX_AT(UNIT_BOX ",\"rotation\":{\"w\":\"1\",\"x\":0,\"y\":0,\"z\":0}"),
         "params.a.box.rotation.w", "must be a number"},
        {BOX_AT(UNIT_BOX ",\"rotation\":{\"w\":1,\"x\":0,\"y\":0,\"z\":0,\"angle\":0}"),
         "params.a.box.rotation.angle", "unknown key"},
        {BOX_AT(UNIT_BOX ",\"rotation\":{\"w\":2,\"x\":0,\"y\":0,\"z\":0}"),
         "params.a.box.rotation",
         "quaternion norm must be within 1e-6 of 1 (a unit quaternion), has norm 2"},
        {BOX_AT(UNIT_BOX ",\"rotation\":{\"w\":0,\"x\":0,\"y\":0,\"z\":0}"),
         "params.a.box.rotation",
         "quaternion norm must be within 1e-6 of 1 (a unit quaternion), has norm 0"},
        {BOX_AT(UNIT_BOX ",\"rotation\":{\"w\":1,\"x\":0,\"y\":1e999,\"z\":0}"),
         "params.a.box.rotation.y", "must be finite"},
        /* Half-space fields. */
        {HALFSPACE_AT("\"offset\":0"), "params.a.halfspace.normal", "is required"},
        {HALFSPACE_AT("\"normal\":[0,0,1]"), "params.a.halfspace.offset", "is required"},
        {HALFSPACE_AT("\"normal\":[0,0,0],\"offset\":1"), "params.a.halfspace.normal",
         "must not be zero (the outward normal of the half-space)"},
        {HALFSPACE_AT("\"normal\":[-0,0,-0],\"offset\":1"), "params.a.halfspace.normal",
         "must not be zero (the outward normal of the half-space)"},
        /* The normal is checked before the offset. */
        {HALFSPACE_AT("\"normal\":[0,0,0]"), "params.a.halfspace.normal",
         "must not be zero (the outward normal of the half-space)"},
        {HALFSPACE_AT("\"normal\":[0,0,\"1\"],\"offset\":0"), "params.a.halfspace.normal[2]",
         "must be a number"},
        {HALFSPACE_AT("\"normal\":[0,0,1e400],\"offset\":0"), "params.a.halfspace.normal[2]",
         "must be finite"},
        {HALFSPACE_AT("\"normal\":[0,0,1,0],\"offset\":0"), "params.a.halfspace.normal",
         "must be an array of 3 numbers"},
        {HALFSPACE_AT("\"normal\":[0,0,1],\"offset\":\"NaN\""), "params.a.halfspace.offset",
         "must be a number"},
        {HALFSPACE_AT("\"normal\":[0,0,1],\"offset\":-1e400"), "params.a.halfspace.offset",
         "must be finite"},
        {HALFSPACE_AT("\"normal\":[0,0,1],\"offset\":0,\"point\":[0,0,0]"),
         "params.a.halfspace.point", "unknown key"},
        {HALFSPACE_AT("\"normal\":[0,0,1],\"normal\":[0,0,1],\"offset\":0"),
         "params.a.halfspace.normal", "duplicate key"},
        /* Divided by the normal's length, the offset passes DBL_MAX. */
        {HALFSPACE_AT("\"normal\":[1e-300,0,0],\"offset\":1e10"), "params.a.halfspace.offset",
         "is too large for this normal: offset / |normal| passes the double range"},
    };
    run_rejects(cases, sizeof cases / sizeof *cases, shape_fn);
}

/* The paths as a scene.put reports them. */
static void box_and_halfspace_paths_nest_under_map_ids(void **state)
{
    (void)state;
    cJSON *j = parse("{\"table\":{\"box\":{\"center\":[0,0,0.7],\"half_extents\":[0.6,-0.4,0.05]}},"
                     "\"floor\":{\"halfspace\":{\"normal\":[0,0,0],\"offset\":0}}}");
    char p[RP_CODEC_PATH_MAX];
    rp_codec_err err;
    rp_shape s;
    const cJSON *table = cJSON_GetObjectItem(j, "table"), *floor = cJSON_GetObjectItem(j, "floor");
    assert_false(rp_codec_shape(table, rp_codec_path_key(p, "params.shapes", "table"), &s, &err));
    assert_err(err, "params.shapes.table.box.half_extents[1]", "must be finite and >= 0");
    assert_false(rp_codec_shape(floor, rp_codec_path_key(p, "params.shapes", "floor"), &s, &err));
    assert_err(err, "params.shapes.floor.halfspace.normal",
               "must not be zero (the outward normal of the half-space)");
    cJSON_Delete(j);
}

static double quat_norm2(rp_quat q)
{
    return q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z;
}

static void assert_quat_bits(rp_quat a, rp_quat b)
{
    assert_same_bits(a.w, b.w);
    assert_same_bits(a.x, b.x);
    assert_same_bits(a.y, b.y);
    assert_same_bits(a.z, b.z);
}

static void shape_accepts_boxes(void **state)
{
    (void)state;
    /* Without a rotation: the identity. */
    rp_shape s =
        decode_shape_ok("{\"box\":{\"center\":[1,-2,3.5],\"half_extents\":[0.5,0.25,0.125]}}");
    assert_int_equal(s.kind, RP_SHAPE_BOX);
    assert_true(s.box.center.x == 1 && s.box.center.y == -2 && s.box.center.z == 3.5);
    assert_true(s.box.half_extents.x == 0.5 && s.box.half_extents.y == 0.25 &&
                s.box.half_extents.z == 0.125);
    assert_quat_bits(s.box.rotation, (rp_quat){1, 0, 0, 0});
    assert_int_equal(rp_shape_validate(&s), RP_OK);

    /* Any key order; zero extents (a rectangle, a point) are boxes; -0 is
     * stored as +0, as a radius is. */
    s = decode_shape_ok("{\"box\":{\"rotation\":{\"z\":0,\"y\":0,\"x\":0,\"w\":1},"
                        "\"half_extents\":[0,-0,2],\"center\":[0,0,0]}}");
    assert_same_bits(s.box.half_extents.x, 0.0);
    assert_same_bits(s.box.half_extents.y, 0.0);
    assert_true(s.box.half_extents.z == 2);

    /* A rotation inside the 1e-6 tolerance is normalised as rp_box_new
     * normalises it. */
    static const double q[][4] = {{1 + 5e-7, 0, 0, 0},
                                  {0.6 * (1 - 9e-7), 0.8 * (1 - 9e-7), 0, 0},
                                  {0.5, 0.5, 0.5, 0.5000009}};
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"box\":{\"center\":[0,0,0],\"half_extents\":[1,2,3],"
                 "\"rotation\":{\"w\":%.17g,\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}}}",
                 q[i][0], q[i][1], q[i][2], q[i][3]);
        s = decode_shape_ok(json);
        rp_box want;
        assert_int_equal(rp_box_new((rp_vec3){0, 0, 0}, (rp_vec3){1, 2, 3}, q[i][0], q[i][1],
                                    q[i][2], q[i][3], &want),
                         RP_OK);
        assert_quat_bits(s.box.rotation, want.rotation);
        assert_true(fabs(quat_norm2(s.box.rotation) - 1) <= 4 * DBL_EPSILON);
    }

    /* A quarter turn about z, and a unit quaternion as rp_box_new leaves
     * it, are kept bit for bit (see shape_round_trips_bit_for_bit). */
    char json[256];
    snprintf(json, sizeof json,
             "{\"box\":{\"center\":[0,0,0],\"half_extents\":[1,1,1],"
             "\"rotation\":{\"w\":%.17g,\"x\":0,\"y\":0,\"z\":%.17g}}}",
             sqrt(0.5), sqrt(0.5));
    s = decode_shape_ok(json);
    assert_quat_bits(s.box.rotation, (rp_quat){sqrt(0.5), 0, 0, sqrt(0.5)});
    rp_vec3 axes[3];
    rp_box_axes(&s.box, axes);
    assert_near(axes[0].y, 1, 1e-15); /* x turns into y */
    s = decode_shape_ok("{\"box\":{\"center\":[0,0,0],\"half_extents\":[1,1,1],"
                        "\"rotation\":{\"w\":-1,\"x\":0,\"y\":-0,\"z\":0}}}");
    assert_quat_bits(s.box.rotation, (rp_quat){-1, 0, -0.0, 0});
}

static void shape_accepts_halfspaces(void **state)
{
    (void)state;
    rp_shape s = decode_shape_ok("{\"halfspace\":{\"normal\":[0,0,1],\"offset\":-0.5}}");
    assert_int_equal(s.kind, RP_SHAPE_HALFSPACE);
    assert_true(s.halfspace.normal.x == 0 && s.halfspace.normal.y == 0 &&
                s.halfspace.normal.z == 1 && s.halfspace.offset == -0.5);
    assert_int_equal(rp_shape_validate(&s), RP_OK);

    /* The server normalises the normal and divides the offset by its
     * length: the same solid. */
    s = decode_shape_ok("{\"halfspace\":{\"offset\":3,\"normal\":[0,0,2]}}");
    assert_true(s.halfspace.normal.x == 0 && s.halfspace.normal.y == 0 &&
                s.halfspace.normal.z == 1);
    assert_true(s.halfspace.offset == 1.5);
    s = decode_shape_ok("{\"halfspace\":{\"normal\":[3,0,-4],\"offset\":10}}");
    assert_near(s.halfspace.normal.x, 0.6, 1e-16);
    assert_true(s.halfspace.normal.y == 0);
    assert_near(s.halfspace.normal.z, -0.8, 1e-16);
    assert_near(s.halfspace.offset, 2, 4e-16);
    assert_int_equal(rp_shape_validate(&s), RP_OK);
    /* Huge and tiny normals, without overflow or underflow. */
    s = decode_shape_ok("{\"halfspace\":{\"normal\":[1e300,1e300,0],\"offset\":1e300}}");
    assert_near(s.halfspace.normal.x, sqrt(0.5), 2e-16);
    assert_near(s.halfspace.offset, sqrt(0.5), 2e-16);
    s = decode_shape_ok("{\"halfspace\":{\"normal\":[0,-5e-324,0],\"offset\":-0}}");
    assert_true(s.halfspace.normal.y == -1);
    assert_true(s.halfspace.offset == 0);
    /* Exactly rp_halfspace_new's result, for a normal that is not unit. */
    s = decode_shape_ok("{\"halfspace\":{\"normal\":[0.1,0.2,0.3],\"offset\":0.7}}");
    rp_halfspace want;
    assert_int_equal(rp_halfspace_new((rp_vec3){0.1, 0.2, 0.3}, 0.7, &want), RP_OK);
    assert_same_bits(s.halfspace.normal.x, want.normal.x);
    assert_same_bits(s.halfspace.normal.y, want.normal.y);
    assert_same_bits(s.halfspace.normal.z, want.normal.z);
    assert_same_bits(s.halfspace.offset, want.offset);
}

/* What rp_box_new and rp_halfspace_new build decodes back to the same bits
 * from its shortest round-trip text, although renormalising it would move
 * about a third of them by an ulp (the decoder keeps a unit quaternion or
 * normal as it is). */
static void shape_round_trips_bit_for_bit(void **state)
{
    (void)state;
    test_rng r = {0xb0c5};
    for (int i = 0; i < 20000; i++) {
        double q[4], n[3];
        for (int k = 0; k < 4; k++)
            q[k] = rng_uniform(&r, -1, 1);
        for (int k = 0; k < 3; k++)
            n[k] = rng_uniform(&r, -1, 1);
        rp_box b;
        rp_halfspace h;
        assert_int_equal(rp_box_new((rp_vec3){rng_uniform(&r, -9, 9), 0, 1},
                                    (rp_vec3){rng_uniform(&r, 0, 2), 0, 3}, q[0], q[1], q[2], q[3],
                                    &b),
                         RP_OK);
        assert_int_equal(rp_halfspace_new((rp_vec3){n[0], n[1], n[2]}, rng_uniform(&r, -9, 9), &h),
                         RP_OK);

        char json[512];
        snprintf(json, sizeof json,
                 "{\"box\":{\"center\":[%.17g,0,1],\"half_extents\":[%.17g,0,3],"
                 "\"rotation\":{\"w\":%.17g,\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}}}",
                 b.center.x, b.half_extents.x, b.rotation.w, b.rotation.x, b.rotation.y,
                 b.rotation.z);
        rp_shape s = decode_shape_ok(json);
        assert_same_bits(s.box.center.x, b.center.x);
        assert_same_bits(s.box.half_extents.x, b.half_extents.x);
        assert_quat_bits(s.box.rotation, b.rotation);
        snprintf(json, sizeof json,
                 "{\"halfspace\":{\"normal\":[%.17g,%.17g,%.17g],\"offset\":%.17g}}", h.normal.x,
                 h.normal.y, h.normal.z, h.offset);
        s = decode_shape_ok(json);
        assert_same_bits(s.halfspace.normal.x, h.normal.x);
        assert_same_bits(s.halfspace.normal.y, h.normal.y);
        assert_same_bits(s.halfspace.normal.z, h.normal.z);
        assert_same_bits(s.halfspace.offset, h.offset);
    }
}

static void query_shapes_are_spheres_and_capsules(void **state)
{
    (void)state;
    static const char *const refused[] = {
        "{\"box\":{\"center\":[0,0,0],\"half_extents\":[1,1,1]}}",
        "{\"halfspace\":{\"normal\":[0,0,1],\"offset\":0}}",
    };
    rp_codec_err err;
    rp_shape s;
    for (size_t i = 0; i < 2; i++) {
        cJSON *j = parse(refused[i]);
        assert_false(rp_codec_sphere_or_capsule(j, "params.shape", "query", &s, &err));
        assert_err(err, "params.shape",
                   "must be a sphere or a capsule: boxes and half-spaces are not query shapes");
        cJSON_Delete(j);
    }
    cJSON *j = parse("{\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,1],\"radius\":0.5}}");
    assert_true(rp_codec_sphere_or_capsule(j, "params.shape", "query", &s, &err));
    assert_int_equal(s.kind, RP_SHAPE_CAPSULE);
    cJSON_Delete(j);
    /* A bad shape is reported as rp_codec_shape reports it. */
    j = parse("{\"box\":{\"center\":[0,0,0],\"half_extents\":[1,1,-1]}}");
    assert_false(rp_codec_sphere_or_capsule(j, "params.links[0].shape", "model", &s, &err));
    assert_err(err, "params.links[0].shape.box.half_extents[2]", "must be finite and >= 0");
    cJSON_Delete(j);
}

/* ---- poses ----------------------------------------------------------- */

static const double identity3[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};

static void pose_defaults_to_identity(void **state)
{
    (void)state;
    rp_transform t = decode_pose_ok("{}");
    assert_rotation(&t, identity3, 0);
    assert_true(t.t.x == 0 && t.t.y == 0 && t.t.z == 0);
    t = decode_pose_ok("{\"translation\":[1,-2,3.5]}");
    assert_rotation(&t, identity3, 0);
    assert_true(t.t.x == 1 && t.t.y == -2 && t.t.z == 3.5);
    t = decode_pose_ok("{\"rotation\":{\"w\":1,\"x\":0,\"y\":0,\"z\":0}}");
    assert_rotation(&t, identity3, 0);
    assert_true(t.t.x == 0 && t.t.y == 0 && t.t.z == 0);
}

static void pose_quarter_turn_about_z(void **state)
{
    (void)state;
    char json[256];
    snprintf(json, sizeof json,
             "{\"translation\":[1,2,3],\"rotation\":{\"z\":%.17g,\"w\":%.17g,\"x\":0,\"y\":0}}",
             sqrt(0.5), sqrt(0.5));
    rp_transform t = decode_pose_ok(json);
    static const double want[3][3] = {{0, -1, 0}, {1, 0, 0}, {0, 0, 1}};
    assert_rotation(&t, want, 1e-15);
    rp_vec3 p = rp_transform_point(&t, (rp_vec3){1, 0, 0});
    assert_near(p.x, 1, 1e-15);
    assert_near(p.y, 3, 1e-15);
    assert_near(p.z, 3, 1e-15);
}

static void pose_quaternion_norm_tolerance_is_1e6(void **state)
{
    (void)state;
    char json[160];
    /* 1 + 5e-7: inside the tolerance, accepted and normalised. */
    snprintf(json, sizeof json, "{\"rotation\":{\"w\":%.17g,\"x\":0,\"y\":0,\"z\":0}}", 1 + 5e-7);
    rp_transform t = decode_pose_ok(json);
    assert_rotation(&t, identity3, 1e-15);
    snprintf(json, sizeof json, "{\"rotation\":{\"w\":0,\"x\":0,\"y\":%.17g,\"z\":0}}", 1 - 5e-7);
    t = decode_pose_ok(json);
    static const double flip_y[3][3] = {{-1, 0, 0}, {0, 1, 0}, {0, 0, -1}};
    assert_rotation(&t, flip_y, 1e-15);

    /* 1 + 2e-6 and 1 - 2e-6: rejected, and the reason says the norm given,
     * with enough digits to tell it from 1. */
    static const struct {
        double w;
        const char *norm;
    } bad[] = {{1 + 2e-6, "1.000002"}, {1 - 2e-6, "0.999998"}, {0, "0"}, {2, "2"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(json, sizeof json, "{\"rotation\":{\"w\":%.17g,\"x\":0,\"y\":0,\"z\":0}}",
                 bad[i].w);
        cJSON *j = parse(json);
        rp_codec_err err;
        assert_false(rp_codec_pose(j, "params.frames[3]", &t, &err));
        char want[160];
        snprintf(want, sizeof want,
                 "quaternion norm must be within 1e-6 of 1 (a unit quaternion), has norm %s",
                 bad[i].norm);
        assert_err(err, "params.frames[3].rotation", want);
        cJSON_Delete(j);
    }
}

static void pose_quaternion_as_a_list_names_the_object_form(void **state)
{
    (void)state;
    static const reject_case cases[] = {
        {"{\"rotation\":[1,0,0,0]}", "params.a.rotation",
         "must be an object {\"w\":..,\"x\":..,\"y\":..,\"z\":..}, not a list"},
        {"{\"rotation\":[]}", "params.a.rotation",
         "must be an object {\"w\":..,\"x\":..,\"y\":..,\"z\":..}, not a list"},
        {"{\"rotation\":1}", "params.a.rotation",
         "must be an object {\"w\":..,\"x\":..,\"y\":..,\"z\":..}"},
        {"{\"rotation\":\"identity\"}", "params.a.rotation",
         "must be an object {\"w\":..,\"x\":..,\"y\":..,\"z\":..}"},
        {"{\"rotation\":null}", "params.a.rotation",
         "must be an object {\"w\":..,\"x\":..,\"y\":..,\"z\":..}"},
    };
    run_rejects(cases, sizeof cases / sizeof *cases, pose_fn);
}

static void pose_rejections_name_the_offending_value(void **state)
{
    (void)state;
    static const reject_case cases[] = {
        {"[]", "params.a", "must be an object"},
        {"{\"scale\":2}", "params.a.scale", "unknown key"},
        {"{\"translation\":[0,0,0],\"translation\":[1,1,1]}", "params.a.translation",
         "duplicate key"},
        {"{\"translation\":[0,0]}", "params.a.translation", "must be an array of 3 numbers"},
        {"{\"translation\":[0,0,1e999]}", "params.a.translation[2]", "must be finite"},
        {"{\"rotation\":{\"w\":1,\"x\":0,\"y\":0}}", "params.a.rotation.z", "is required"},
        {"{\"rotation\":{\"x\":0,\"y\":0,\"z\":0}}", "params.a.rotation.w", "is required"},
        {"{\"rotation\":{\"w\":1,\"x\":0,\"y\":0,\"z\":0,\"v\":0}}", "params.a.rotation.v",
         "unknown key"},
        {"{\"rotation\":{\"w\":1,\"w\":1,\"x\":0,\"y\":0,\"z\":0}}", "params.a.rotation.w",
         "duplicate key"},
        {"{\"rotation\":{\"w\":\"1\",\"x\":0,\"y\":0,\"z\":0}}", "params.a.rotation.w",
         "must be a number"},
        {"{\"rotation\":{\"w\":1,\"x\":1e400,\"y\":0,\"z\":0}}", "params.a.rotation.x",
         "must be finite"},
        {"{\"rotation\":{\"w\":1e200,\"x\":1e200,\"y\":0,\"z\":0}}", "params.a.rotation",
         "quaternion norm must be within 1e-6 of 1 (a unit quaternion), has norm 1.41421356e+200"},
        /* The squares overflow: the norm is still reported, not "inf". */
        {"{\"rotation\":{\"w\":1e300,\"x\":0,\"y\":0,\"z\":1e300}}", "params.a.rotation",
         "quaternion norm must be within 1e-6 of 1 (a unit quaternion), has norm 1.41421356e+300"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0],[0,0,1,0]],\"translation\":[0,0,0]}", "params.a",
         "must have either matrix or translation/rotation, not both"},
        {"{\"rotation\":{\"w\":1,\"x\":0,\"y\":0,\"z\":0},\"matrix\":[[1,0,0,0],[0,1,0,0],"
         "[0,0,1,0]]}",
         "params.a", "must have either matrix or translation/rotation, not both"},
        {"{\"matrix\":{}}", "params.a.matrix", "must be an array of 3 or 4 rows"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0]]}", "params.a.matrix",
         "must be an array of 3 or 4 rows"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1],[0,0,0,1]]}", "params.a.matrix",
         "must be an array of 3 or 4 rows"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0],[0,0,1,0]]}", "params.a.matrix[1]",
         "must be an array of 4 numbers"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0,0],[0,0,1,0]]}", "params.a.matrix[1]",
         "must be an array of 4 numbers"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0],5]}", "params.a.matrix[2]",
         "must be an array of 4 numbers"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0],[0,0,1,\"z\"]]}", "params.a.matrix[2][3]",
         "must be a number"},
        {"{\"matrix\":[[1,0,0,1e400],[0,1,0,0],[0,0,1,0]]}", "params.a.matrix[0][3]",
         "must be finite"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,2]]}", "params.a.matrix[3]",
         "must be [0,0,0,1]"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0.5,0,0,1]]}", "params.a.matrix[3]",
         "must be [0,0,0,1]"},
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0]]}", "params.a.matrix[3]",
         "must be an array of 4 numbers"},
        /* reflection: orthonormal, det -1 */
        {"{\"matrix\":[[1,0,0,0],[0,1,0,0],[0,0,-1,0]]}", "params.a.matrix",
         "rotation must be orthonormal with det +1"},
        /* shear */
        {"{\"matrix\":[[1,0.1,0,0],[0,1,0,0],[0,0,1,0]]}", "params.a.matrix",
         "rotation must be orthonormal with det +1"},
        /* uniform scale */
        {"{\"matrix\":[[2,0,0,0],[0,2,0,0],[0,0,2,0]]}", "params.a.matrix",
         "rotation must be orthonormal with det +1"},
        /* off by 1e-5 */
        {"{\"matrix\":[[1.00001,0,0,0],[0,1,0,0],[0,0,1,0]]}", "params.a.matrix",
         "rotation must be orthonormal with det +1"},
    };
    run_rejects(cases, sizeof cases / sizeof *cases, pose_fn);

    rp_codec_err err;
    rp_transform t;
    assert_false(rp_codec_pose(NULL, "params.base", &t, &err));
    assert_err(err, "params.base", "is required");
}

static void pose_matrix_with_three_or_four_rows(void **state)
{
    (void)state;
    static const double want[3][3] = {{0, -1, 0}, {1, 0, 0}, {0, 0, 1}};
    rp_transform t = decode_pose_ok("{\"matrix\":[[0,-1,0,1],[1,0,0,2],[0,0,1,3]]}");
    assert_rotation(&t, want, 0);
    assert_true(t.t.x == 1 && t.t.y == 2 && t.t.z == 3);
    t = decode_pose_ok("{\"matrix\":[[0,-1,0,1],[1,0,0,2],[0,0,1,3],[0,0,0,1]]}");
    assert_rotation(&t, want, 0);
    assert_true(t.t.x == 1 && t.t.y == 2 && t.t.z == 3);
    t = decode_pose_ok("{\"matrix\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[-0,0,0,1.0]]}");
    assert_rotation(&t, identity3, 0);
    /* Within 1e-6 of orthonormal: accepted as given. */
    t = decode_pose_ok("{\"matrix\":[[1.0000001,0,0,0],[0,1,0,0],[0,0,1,0]]}");
    assert_true(t.r[0][0] == 1.0000001);
}

static void pose_paths_under_frames_index(void **state)
{
    (void)state;
    cJSON *j = parse("[{},{},{},{\"rotation\":{\"w\":true,\"x\":0,\"y\":0,\"z\":0}}]");
    char p[RP_CODEC_PATH_MAX];
    rp_codec_err err;
    rp_transform t;
    size_t i = 0;
    bool ok = true;
    for (const cJSON *f = j->child; f && ok; f = f->next, i++)
        ok = rp_codec_pose(f, rp_codec_path_index(p, "params.frames", i), &t, &err);
    assert_false(ok);
    assert_err(err, "params.frames[3].rotation.w", "must be a number");
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paths_append_keys_and_indices),
        cmocka_unit_test(paths_truncate_at_character_boundary),
        cmocka_unit_test(fail_formats_reason_and_returns_false),
        cmocka_unit_test(numbers_reject_wrong_types_and_non_finite),
        cmocka_unit_test(uint_accepts_integers_up_to_2_pow_53),
        cmocka_unit_test(names_allow_1_to_128_safe_characters),
        cmocka_unit_test(name_and_id_decoders_report_path_and_reason),
        cmocka_unit_test(object_keys_reject_unknown_and_duplicate_keys),
        cmocka_unit_test(object_unique_finds_duplicates_in_large_maps),
        cmocka_unit_test(vec3_requires_three_finite_numbers),
        cmocka_unit_test(shape_rejections_name_the_offending_value),
        cmocka_unit_test(shape_paths_nest_under_map_ids),
        cmocka_unit_test(shape_accepts_spheres_and_capsules),
        cmocka_unit_test(box_and_halfspace_rejections_name_the_offending_value),
        cmocka_unit_test(box_and_halfspace_paths_nest_under_map_ids),
        cmocka_unit_test(shape_accepts_boxes),
        cmocka_unit_test(shape_accepts_halfspaces),
        cmocka_unit_test(shape_round_trips_bit_for_bit),
        cmocka_unit_test(query_shapes_are_spheres_and_capsules),
        cmocka_unit_test(pose_defaults_to_identity),
        cmocka_unit_test(pose_quarter_turn_about_z),
        cmocka_unit_test(pose_quaternion_norm_tolerance_is_1e6),
        cmocka_unit_test(pose_quaternion_as_a_list_names_the_object_form),
        cmocka_unit_test(pose_rejections_name_the_offending_value),
        cmocka_unit_test(pose_matrix_with_three_or_four_rows),
        cmocka_unit_test(pose_paths_under_frames_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
