/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: every decoder in src/codec/codec.h, and the writer that
 * prints what they decode.
 *
 * The input is one JSON text.  It goes through the pre-scan and cJSON, as a
 * request line does in the server, and then every decoder is run on every
 * value in the tree (and on a missing value).  A decoder that succeeds must
 * have produced a valid value (finite coordinates, radius and half extents
 * >= 0 and never -0, unit quaternions and normals, orthonormal rotation
 * with det +1, names and ids in their alphabet, the number it was given);
 * one that fails must leave a NUL-terminated, valid UTF-8 path that
 * extends the path it was given (or is that path cut short) and a
 * non-empty reason.  Decoders are run with a short path and with one long
 * enough, and full of multi-byte characters, to be truncated.  Decoded
 * shapes and numbers are written back with the writer, parsed again and
 * compared bit for bit; the whole tree is echoed with rp_jw_cjson (as
 * request ids are) and must parse back to an equal tree.
 */
#include "fuzz_util.h"

#include "codec/codec.h"

/* ---- references ---------------------------------------------------------- */

static bool ref_valid(const char *s, bool name)
{
    size_t n = strlen(s);
    if (n < 1 || n > RP_NAME_MAX || (name && s[0] == '.'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-' || (!name && (c == ':' || c == '/' || c == '#'));
        if (!ok)
            return false;
    }
    return true;
}

static bool ref_in(const char *key, const char *const *allowed)
{
    for (; *allowed; allowed++)
        if (strcmp(*allowed, key) == 0)
            return true;
    return false;
}

/* Whether object j has only allowed member names, none twice. */
static bool ref_keys_ok(const cJSON *j, const char *const *allowed)
{
    for (const cJSON *c = j->child; c; c = c->next) {
        if (allowed && !ref_in(c->string, allowed))
            return false;
        for (const cJSON *d = j->child; d != c; d = d->next)
            if (strcmp(c->string, d->string) == 0)
                return false;
    }
    return true;
}

static size_t member_count(const cJSON *j)
{
    size_t n = 0;
    for (const cJSON *c = j->child; c; c = c->next)
        n++;
    return n;
}

static bool finite3(rp_vec3 v)
{
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

static bool good_radius(double r)
{
    return isfinite(r) && r >= 0 && !signbit(r);
}

/* ---- checks -------------------------------------------------------------- */

/* After a failed decode: path and reason are NUL-terminated valid UTF-8,
 * the reason says something, and the path extends `base` (or is `base`
 * truncated). */
static void check_err(const rp_codec_err *err, const char *base, const char *what)
{
    FUZZ_CHECK(fuzz_cstr_ok(err->path, sizeof err->path), "%s: error path not NUL-terminated UTF-8",
               what);
    FUZZ_CHECK(fuzz_cstr_ok(err->reason, sizeof err->reason),
               "%s: error reason not NUL-terminated UTF-8", what);
    FUZZ_CHECK(err->reason[0] != '\0', "%s: empty reason", what);
    size_t n = strlen(err->path), b = strlen(base);
    FUZZ_CHECK(strncmp(err->path, base, n < b ? n : b) == 0,
               "%s: error path '%s' does not extend '%.40s...'", what, err->path, base);
}

/* Fills err with bytes that are neither NUL nor UTF-8, so a decoder that
 * fails without writing it is caught. */
static void poison(rp_codec_err *err)
{
    memset(err, 0xFF, sizeof *err);
}

/* The writer's text for one value must be valid UTF-8 JSON; returns the
 * parsed tree (caller deletes). */
static cJSON *reparse(const rp_jw *w, const char *what)
{
    FUZZ_CHECK(!w->oom, "%s: writer failed", what);
    FUZZ_CHECK(fuzz_utf8_valid(w->buf, w->len), "%s: writer output not UTF-8: %.*s", what,
               (int)w->len, w->buf);
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(w->buf, w->len, &end, false);
    FUZZ_CHECK(j && end == w->buf + w->len, "%s: writer output does not parse: %.*s", what,
               (int)w->len, w->buf);
    return j;
}

static void check_vec3_bits(rp_vec3 a, rp_vec3 b, const char *what)
{
    FUZZ_CHECK(fuzz_same_bits(a.x, b.x) && fuzz_same_bits(a.y, b.y) && fuzz_same_bits(a.z, b.z),
               "%s: (%a,%a,%a) != (%a,%a,%a)", what, a.x, a.y, a.z, b.x, b.y, b.z);
}

static bool same_quat_bits(rp_quat a, rp_quat b)
{
    return fuzz_same_bits(a.w, b.w) && fuzz_same_bits(a.x, b.x) && fuzz_same_bits(a.y, b.y) &&
           fuzz_same_bits(a.z, b.z);
}

/* A decoded shape is valid (radii and half extents never -0), and
 * survives writer -> cJSON -> decoder bit for bit: a box's rotation and a
 * half-space's normal, unit already, are not normalised again. */
static void check_shape(const rp_shape *s)
{
    FUZZ_CHECK(rp_shape_validate(s) == RP_OK, "decoded shape fails rp_shape_validate");
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        FUZZ_CHECK(finite3(s->sphere.center) && good_radius(s->sphere.radius),
                   "bad sphere (r = %a)", s->sphere.radius);
        break;
    case RP_SHAPE_CAPSULE:
        FUZZ_CHECK(finite3(s->capsule.a) && finite3(s->capsule.b) && good_radius(s->capsule.radius),
                   "bad capsule (r = %a)", s->capsule.radius);
        break;
    case RP_SHAPE_BOX:
        FUZZ_CHECK(finite3(s->box.center) && good_radius(s->box.half_extents.x) &&
                       good_radius(s->box.half_extents.y) && good_radius(s->box.half_extents.z),
                   "bad box (half extents %a %a %a)", s->box.half_extents.x, s->box.half_extents.y,
                   s->box.half_extents.z);
        break;
    case RP_SHAPE_HALFSPACE:
        FUZZ_CHECK(finite3(s->halfspace.normal) && isfinite(s->halfspace.offset),
                   "bad half-space (offset %a)", s->halfspace.offset);
        break;
    default:
        FUZZ_CHECK(false, "shape kind %d", (int)s->kind);
    }
    rp_jw w;
    rp_jw_init(&w);
    rp_jw_shape(&w, s);
    cJSON *j = reparse(&w, "shape");
    rp_shape back;
    rp_codec_err err;
    poison(&err);
    FUZZ_CHECK(rp_codec_shape(j, "s", &back, &err), "written shape %s does not decode: %s %s",
               w.buf, err.path, err.reason);
    FUZZ_CHECK(back.kind == s->kind, "shape kind changed in a round trip");
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        check_vec3_bits(back.sphere.center, s->sphere.center, "sphere centre round trip");
        FUZZ_CHECK(fuzz_same_bits(back.sphere.radius, s->sphere.radius),
                   "sphere radius round trip");
        break;
    case RP_SHAPE_CAPSULE:
        check_vec3_bits(back.capsule.a, s->capsule.a, "capsule a round trip");
        check_vec3_bits(back.capsule.b, s->capsule.b, "capsule b round trip");
        FUZZ_CHECK(fuzz_same_bits(back.capsule.radius, s->capsule.radius),
                   "capsule radius round trip");
        break;
    case RP_SHAPE_BOX:
        check_vec3_bits(back.box.center, s->box.center, "box centre round trip");
        check_vec3_bits(back.box.half_extents, s->box.half_extents, "box half extents round trip");
        FUZZ_CHECK(same_quat_bits(back.box.rotation, s->box.rotation), "box rotation round trip");
        break;
    case RP_SHAPE_HALFSPACE:
        check_vec3_bits(back.halfspace.normal, s->halfspace.normal, "half-space normal round trip");
        FUZZ_CHECK(fuzz_same_bits(back.halfspace.offset, s->halfspace.offset),
                   "half-space offset round trip");
        break;
    }
    cJSON_Delete(j);
    rp_jw_free(&w);
}

/* A decoded pose: finite, rotation orthonormal with det +1.  The decoder
 * accepts 1e-6 (RP_CODEC_ROTATION_TOL); 2e-6 leaves room for the rounding
 * of this check's own arithmetic. */
static void check_pose(const rp_transform *t)
{
    const double tol = 2 * RP_CODEC_ROTATION_TOL;
    FUZZ_CHECK(finite3(t->t), "non-finite translation");
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            FUZZ_CHECK(isfinite(t->r[i][k]), "non-finite rotation entry");
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            double dot = 0;
            for (int m = 0; m < 3; m++)
                dot += t->r[i][m] * t->r[k][m];
            FUZZ_CHECK(fabs(dot - (i == k ? 1.0 : 0.0)) <= tol, "R R^T [%d][%d] = %.17g", i, k,
                       dot);
        }
    const double(*r)[3] = t->r;
    double det = r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1]) -
                 r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0]) +
                 r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]);
    FUZZ_CHECK(fabs(det - 1.0) <= tol, "det R = %.17g", det);
}

/* A number printed by the writer and by rp_format_double reads back as the
 * same double. */
static void check_double_text(double x)
{
    if (!isfinite(x))
        return;
    char buf[40];
    size_t n = rp_format_double(buf, x);
    FUZZ_CHECK(n > 0 && n < 32, "rp_format_double length %zu", n);
    buf[n] = '\0';
    char *end = NULL;
    double y = strtod(buf, &end);
    FUZZ_CHECK(end == buf + n && fuzz_same_bits(x, y), "%a printed as %s reads back as %a", x, buf,
               y);
    rp_jw w;
    rp_jw_init(&w);
    rp_jw_double(&w, x);
    cJSON *j = reparse(&w, "double");
    FUZZ_CHECK(cJSON_IsNumber(j) && fuzz_same_bits(j->valuedouble, x),
               "%a written as %s parses as %a", x, w.buf, j->valuedouble);
    cJSON_Delete(j);
    rp_jw_free(&w);
}

/* Equality for rp_jw_cjson's echo: numbers bit for bit, non-finite ones
 * written as null; member order and duplicates kept. */
static bool same_tree(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsNumber(a) && !isfinite(a->valuedouble))
        return cJSON_IsNull(b);
    if ((a->type & 0xFF) != (b->type & 0xFF))
        return false;
    if (a->string && (!b->string || strcmp(a->string, b->string) != 0))
        return false;
    if (cJSON_IsNumber(a))
        return a->valuedouble == b->valuedouble; /* -0 may print as 0 */
    if (cJSON_IsString(a))
        return strcmp(a->valuestring, b->valuestring) == 0;
    const cJSON *x = a->child, *y = b->child;
    for (; x && y; x = x->next, y = y->next)
        if (!same_tree(x, y))
            return false;
    return !x && !y;
}

/* ---- every decoder on one value ----------------------------------------- */

static const char *const small_allowed[] = {
    "center",       "radius",   "a",         "b",      "sphere", "capsule", "box",
    "half_extents", "rotation", "halfspace", "normal", "offset", NULL};
/* More than 64 names, with the likely ones past the 64-bit "seen" mask, so
 * the fallback duplicate search runs too. */
static const char *const big_allowed[] = {
    "_0",  "_1",  "_2",  "_3",  "_4",  "_5",  "_6",    "_7",  "_8",  "_9",  "_10", "_11", "_12",
    "_13", "_14", "_15", "_16", "_17", "_18", "_19",   "_20", "_21", "_22", "_23", "_24", "_25",
    "_26", "_27", "_28", "_29", "_30", "_31", "_32",   "_33", "_34", "_35", "_36", "_37", "_38",
    "_39", "_40", "_41", "_42", "_43", "_44", "_45",   "_46", "_47", "_48", "_49", "_50", "_51",
    "_52", "_53", "_54", "_55", "_56", "_57", "_58",   "_59", "_60", "_61", "_62", "_63", "x",
    "y",   "z",   "w",   "a",   "b",   "id",  "scene", NULL};

static void run_decoders(const cJSON *j, const char *base)
{
    rp_codec_err err;

    rp_vec3 v;
    poison(&err);
    if (rp_codec_vec3(j, base, &v, &err)) {
        FUZZ_CHECK(cJSON_IsArray(j) && member_count(j) == 3, "vec3 from a non-triple");
        FUZZ_CHECK(finite3(v), "vec3 not finite");
        check_vec3_bits(v,
                        (rp_vec3){cJSON_GetArrayItem(j, 0)->valuedouble,
                                  cJSON_GetArrayItem(j, 1)->valuedouble,
                                  cJSON_GetArrayItem(j, 2)->valuedouble},
                        "vec3 value");
    } else {
        check_err(&err, base, "vec3");
    }

    rp_shape s;
    poison(&err);
    if (rp_codec_shape(j, base, &s, &err))
        check_shape(&s);
    else
        check_err(&err, base, "shape");

    rp_transform t;
    poison(&err);
    if (rp_codec_pose(j, base, &t, &err))
        check_pose(&t);
    else
        check_err(&err, base, "pose");

    const char *str = NULL;
    poison(&err);
    if (rp_codec_name(j, base, &str, &err))
        FUZZ_CHECK(str == j->valuestring && ref_valid(str, true), "bad name accepted");
    else
        check_err(&err, base, "name");
    poison(&err);
    if (rp_codec_id(j, base, &str, &err))
        FUZZ_CHECK(str == j->valuestring && ref_valid(str, false), "bad id accepted");
    else
        check_err(&err, base, "id");
    poison(&err);
    if (rp_codec_string(j, base, &str, &err))
        FUZZ_CHECK(cJSON_IsString(j) && str == j->valuestring, "string decoded wrongly");
    else
        check_err(&err, base, "string");
    if (cJSON_IsString(j)) {
        FUZZ_CHECK(rp_codec_valid_name(j->valuestring) == ref_valid(j->valuestring, true),
                   "rp_codec_valid_name disagrees on '%s'", j->valuestring);
        FUZZ_CHECK(rp_codec_valid_id(j->valuestring) == ref_valid(j->valuestring, false),
                   "rp_codec_valid_id disagrees on '%s'", j->valuestring);
    }

    double x;
    poison(&err);
    if (rp_codec_number(j, base, &x, &err))
        FUZZ_CHECK(isfinite(x) && fuzz_same_bits(x, j->valuedouble), "number decoded wrongly");
    else
        check_err(&err, base, "number");
    poison(&err);
    if (rp_codec_nonneg(j, base, &x, &err))
        FUZZ_CHECK(good_radius(x) && x == j->valuedouble, "nonneg decoded wrongly: %a", x);
    else
        check_err(&err, base, "nonneg");
    bool b;
    poison(&err);
    if (rp_codec_bool(j, base, &b, &err))
        FUZZ_CHECK(cJSON_IsBool(j) && b == cJSON_IsTrue(j), "bool decoded wrongly");
    else
        check_err(&err, base, "bool");
    uint64_t u;
    poison(&err);
    if (rp_codec_uint(j, base, &u, &err))
        FUZZ_CHECK(cJSON_IsNumber(j) && u <= ((uint64_t)1 << 53) && (double)u == j->valuedouble,
                   "uint decoded wrongly: %llu", (unsigned long long)u);
    else
        check_err(&err, base, "uint");
    if (cJSON_IsNumber(j))
        check_double_text(j->valuedouble);

    const char *const *lists[] = {small_allowed, big_allowed};
    for (int k = 0; k < 2; k++) {
        poison(&err);
        bool ok = rp_codec_object_keys(j, base, lists[k], &err);
        bool want = j && cJSON_IsObject(j) && ref_keys_ok(j, lists[k]);
        FUZZ_CHECK(ok == want, "object_keys (list %d): %d, reference %d", k, (int)ok, (int)want);
        if (!ok)
            check_err(&err, base, "object_keys");
    }
    /* The reference is quadratic; very large maps are only checked for
     * not crashing and for a well-formed error. */
    poison(&err);
    rp_status st = rp_codec_object_unique(j, base, &err);
    FUZZ_CHECK(st == RP_OK || st == RP_ERR_INVALID_ARG, "object_unique: status %d", (int)st);
    if (j && cJSON_IsObject(j) && member_count(j) <= 2000)
        FUZZ_CHECK((st == RP_OK) == ref_keys_ok(j, NULL), "object_unique: %d, reference %d",
                   (int)st, (int)ref_keys_ok(j, NULL));
    if (st != RP_OK)
        check_err(&err, base, "object_unique");
}

/* Path helpers: the result is NUL-terminated UTF-8 within the limit and a
 * prefix of the untruncated path. */
static void check_path_helpers(const char *base, const cJSON *j)
{
    char full[2 * RP_CODEC_PATH_MAX + 4200], p[RP_CODEC_PATH_MAX];
    if (j->string && strlen(j->string) < 4096) {
        rp_codec_path_key(p, base, j->string);
        snprintf(full, sizeof full, "%s%s%s", base, base[0] ? "." : "", j->string);
        FUZZ_CHECK(fuzz_cstr_ok(p, sizeof p), "path_key: not NUL-terminated UTF-8");
        FUZZ_CHECK(strncmp(full, p, strlen(p)) == 0, "path_key: '%s' is not a prefix", p);
        FUZZ_CHECK(strlen(p) == strlen(full) || strlen(p) >= RP_CODEC_PATH_MAX - 4,
                   "path_key: cut to %zu bytes when %zu fit", strlen(p), strlen(full));
    }
    size_t index = cJSON_IsNumber(j) && j->valuedouble >= 0 && j->valuedouble < 1e18
                       ? (size_t)j->valuedouble
                       : SIZE_MAX;
    rp_codec_path_index(p, base, index);
    snprintf(full, sizeof full, "%s[%zu]", base, index);
    FUZZ_CHECK(fuzz_cstr_ok(p, sizeof p), "path_index: not NUL-terminated UTF-8");
    FUZZ_CHECK(strncmp(full, p, strlen(p)) == 0, "path_index: '%s' is not a prefix", p);
}

static void walk(const cJSON *j, const char *base, const char *long_base, size_t *count)
{
    /* Both paths for the first nodes; then alternate, to keep big inputs
     * quick. */
    size_t k = (*count)++;
    if (k < 64 || k % 2 == 0)
        run_decoders(j, base);
    if (k < 64 || k % 2 == 1)
        run_decoders(j, long_base);
    check_path_helpers(long_base, j);
    for (const cJSON *c = j->child; c; c = c->next)
        walk(c, base, long_base, count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    /* As in the server: nothing reaches cJSON without the pre-scan. */
    size_t off;
    if (rp_json_prescan(text, size, 64, &off) != RP_SCAN_OK)
        return 0;
    cJSON *root = cJSON_ParseWithLength(text, size);
    if (!root)
        return 0;

    /* A path 2 bytes short of the limit whose last character is 2 bytes
     * wide, so any appended key or index is cut inside a character. */
    char long_base[RP_CODEC_PATH_MAX];
    size_t n = 0;
    memcpy(long_base, "params.", 7);
    n = 7;
    while (n + 2 <= RP_CODEC_PATH_MAX - 3) {
        long_base[n++] = (char)0xC3; /* U+00E9 */
        long_base[n++] = (char)0xA9;
    }
    long_base[n] = '\0';

    size_t count = 0;
    run_decoders(NULL, "params.missing");
    walk(root, "params", long_base, &count);

    /* The tree echoed as request ids are. */
    rp_jw w;
    rp_jw_init(&w);
    rp_jw_cjson(&w, root);
    cJSON *back = reparse(&w, "rp_jw_cjson");
    FUZZ_CHECK(same_tree(root, back), "rp_jw_cjson echo differs: %.*s", (int)w.len, w.buf);
    cJSON_Delete(back);
    rp_jw_free(&w);
    cJSON_Delete(root);
    return 0;
}
