/*
 * Unit tests for src/codec: decoders with their exact error paths and
 * reasons, the reply writer, shortest double formatting and the pre-scan.
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

#define assert_err(err, want_path, want_reason)                                \
    do {                                                                       \
        assert_string_equal((err).path, (want_path));                          \
        assert_string_equal((err).reason, (want_reason));                      \
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
        union { rp_shape s; rp_transform t; } out;
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
    static const struct { const char *json; uint64_t want; } ok[] = {
        {"0", 0}, {"-0", 0}, {"42", 42}, {"1.0", 1}, {"1e3", 1000},
        {"9007199254740992", 9007199254740992ull},
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
#define ID_REASON "must be 1-128 characters of [A-Za-z0-9_.:/-]"

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
    static const char *const bad_names[] = {"", ".hidden", ".", "a b", "a/b", "a:b", "\xC3\xA9",
                                            "tab\t", "a\"b", "a\\b", "*"};
    static const char *const good_ids[] = {"a", "link/3", "ns:arm.upper-1", ".x", "/", "a_b"};
    static const char *const bad_ids[] = {"", "a b", "a,b", "caf\xC3\xA9", "a\nb", "#"};
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
        {"{}", "params.a", "must have exactly one of sphere, capsule"},
        {"{\"sphere\":{\"center\":[0,0,0],\"radius\":1},"
         "\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,1],\"radius\":1}}",
         "params.a", "must have exactly one of sphere, capsule"},
        {"{\"box\":{}}", "params.a.box", "unknown key"},
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
        {"{\"capsule\":{\"a\":[0,0,0],\"b\":[0,-1e309,1],\"radius\":1}}",
         "params.a.capsule.b[1]", "must be finite"},
        {"{\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,1],\"radius\":-0.5}}",
         "params.a.capsule.radius", "must be finite and >= 0"},
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
    assert_false(rp_codec_shape(post, rp_codec_path_key(p, "params.shapes", post->string), &s,
                                &err));
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
    snprintf(json, sizeof json, "{\"rotation\":{\"w\":%.17g,\"x\":0,\"y\":0,\"z\":0}}",
             1 + 5e-7);
    rp_transform t = decode_pose_ok(json);
    assert_rotation(&t, identity3, 1e-15);
    snprintf(json, sizeof json, "{\"rotation\":{\"w\":0,\"x\":0,\"y\":%.17g,\"z\":0}}",
             1 - 5e-7);
    t = decode_pose_ok(json);
    static const double flip_y[3][3] = {{-1, 0, 0}, {0, 1, 0}, {0, 0, -1}};
    assert_rotation(&t, flip_y, 1e-15);

    /* 1 + 2e-6 and 1 - 2e-6: rejected. */
    static const double bad[] = {1 + 2e-6, 1 - 2e-6, 0, 2};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(json, sizeof json, "{\"rotation\":{\"w\":%.17g,\"x\":0,\"y\":0,\"z\":0}}",
                 bad[i]);
        cJSON *j = parse(json);
        rp_codec_err err;
        assert_false(rp_codec_pose(j, "params.frames[3]", &t, &err));
        assert_err(err, "params.frames[3].rotation", "quaternion norm must be within 1e-6 of 1");
        cJSON_Delete(j);
    }
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
        {"{\"rotation\":[1,0,0,0]}", "params.a.rotation", "must be an object"},
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
         "quaternion norm must be within 1e-6 of 1"},
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
    static const struct { double x; const char *want; } cases[] = {
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
            fail_msg("%.17g formatted as %s, want %s", cases[i].x, fmt(cases[i].x),
                     cases[i].want);
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

static void writer_echoes_cjson_values(void **state)
{
    (void)state;
    static const char *const values[] = {
        "7", "-0", "\"req-1\"", "null", "true", "false", "1.5e300", "[]", "{}",
        "[1,\"two\",[3,{\"four\":4}],null]", "{\"a\":{\"b\":[true,false]},\"c\":\"\\n\\u00e9\"}",
        "123456789012345678",
    };
    static const char *const want[] = {
        "7", "-0", "\"req-1\"", "null", "true", "false", "1.5e+300", "[]", "{}",
        "[1,\"two\",[3,{\"four\":4}],null]", "{\"a\":{\"b\":[true,false]},\"c\":\"\\n\xC3\xA9\"}",
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
        "[\"\xC3\xA9\"]",                 /* U+00E9, 2 bytes */
        "[\"\xC2\x80\xDF\xBF\"]",         /* U+0080, U+07FF */
        "[\"\xE2\x82\xAC\"]",             /* U+20AC, 3 bytes */
        "[\"\xE0\xA0\x80\xEF\xBF\xBF\"]", /* U+0800, U+FFFF */
        "[\"\xED\x9F\xBF\xEE\x80\x80\"]", /* U+D7FF, U+E000 around the surrogates */
        "[\"\xF0\x9F\x98\x80\"]",         /* U+1F600, 4 bytes */
        "[\"\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\"]", /* U+10000, U+10FFFF */
        "\xC3\xA9",                       /* outside strings too */
        "[\"\\\xC3\xA9\"]",               /* after a backslash */
    };
    size_t off;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (scan(ok[i], 64, &off) != RP_SCAN_OK)
            fail_msg("case %zu rejected at %zu", i, off);
}

static void prescan_rejects_invalid_utf8_at_its_offset(void **state)
{
    (void)state;
    static const struct { const char *s; size_t off; } bad[] = {
        {"[\"ab\xC0\x80\"]", 4},             /* overlong NUL */
        {"[\"\xC1\xBF\"]", 2},               /* overlong */
        {"[\"\xE0\x80\x80\"]", 2},           /* overlong 3-byte */
        {"[\"\xE0\x9F\xBF\"]", 2},           /* overlong U+07FF */
        {"[\"\xED\xA0\x80\"]", 2},           /* surrogate U+D800 */
        {"[\"\xED\xBF\xBF\"]", 2},           /* surrogate U+DFFF */
        {"[\"\xF0\x80\x80\x80\"]", 2},       /* overlong 4-byte */
        {"[\"\xF0\x8F\xBF\xBF\"]", 2},       /* overlong U+FFFF */
        {"[\"\xF4\x90\x80\x80\"]", 2},       /* U+110000 */
        {"[\"\xF5\x80\x80\x80\"]", 2},
        {"[\"\xFF\"]", 2},
        {"[\"\xFE\"]", 2},
        {"[\"x\x80\"]", 3},                  /* lone continuation */
        {"[\"\xBF\"]", 2},
        {"[\"\xC3\xA9\xA9\"]", 4},           /* one continuation too many */
        {"[\"\xE2\x82\"]", 2},               /* truncated, then '"' */
        {"[\"\xE2\x82\x41\"]", 2},
        {"[\"\xF0\x9F\x98\"]", 2},
        {"\x80[]", 0},                       /* outside strings */
        {"[\"\\\x80\"]", 3},                 /* after a backslash */
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
        cmocka_unit_test(pose_defaults_to_identity),
        cmocka_unit_test(pose_quarter_turn_about_z),
        cmocka_unit_test(pose_quaternion_norm_tolerance_is_1e6),
        cmocka_unit_test(pose_rejections_name_the_offending_value),
        cmocka_unit_test(pose_matrix_with_three_or_four_rows),
        cmocka_unit_test(pose_paths_under_frames_index),
        cmocka_unit_test(format_double_known_values),
        cmocka_unit_test(format_double_round_trips_random_bit_patterns),
        cmocka_unit_test(format_double_round_trips_edge_values),
        cmocka_unit_test(writer_inserts_commas_in_nested_containers),
        cmocka_unit_test(writer_escapes_strings),
        cmocka_unit_test(writer_prints_doubles_vec3_and_shapes_without_spaces),
        cmocka_unit_test(writer_echoes_cjson_values),
        cmocka_unit_test(writer_grows_geometrically_and_fails_on_overdeep_nesting),
        cmocka_unit_test(prescan_depth_limit_counts_outermost_bracket),
        cmocka_unit_test(prescan_ignores_brackets_inside_strings),
        cmocka_unit_test(prescan_accepts_valid_utf8),
        cmocka_unit_test(prescan_rejects_invalid_utf8_at_its_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
