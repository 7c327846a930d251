/* SPDX-License-Identifier: MIT */
/*
 * Decoding request values (cJSON trees) into geometry types, with the path
 * of the offending value and a short reason on failure.
 *
 * The server calls these while it validates params; nothing here allocates
 * (except rp_codec_object_unique's table for large maps, util/strtab.h) and
 * nothing keeps pointers beyond what the caller passes in.  Paths are built
 * only as deep as needed: a decoder appends ".key" or "[i]" to the path it
 * was given when it descends, which costs a short copy per level.
 */
#include "codec/codec.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strtab.h"

/* Every decoder's reason strings, in one place so tests and docs agree. */
#define R_REQUIRED "is required"
#define R_NUMBER "must be a number"
#define R_FINITE "must be finite"
#define R_NONNEG "must be finite and >= 0"
#define R_UINT "must be a non-negative integer"
#define R_BOOL "must be a boolean"
#define R_STRING "must be a string"
#define R_OBJECT "must be an object"
#define R_VEC3 "must be an array of 3 numbers"
#define R_UNKNOWN "unknown key"
#define R_DUPLICATE "duplicate key"
#define R_SHAPE_ONE "must have exactly one of sphere, capsule, box, halfspace"
#define R_NORMAL_ZERO "must not be zero (the outward normal of the half-space)"
#define R_OFFSET_RANGE "is too large for this normal: offset / |normal| passes the double range"
#define R_ROUND_ONLY "must be a sphere or a capsule: boxes and half-spaces are not %s shapes"
#define R_NOT_HALFSPACE "must be a sphere, a capsule or a box: %s shapes cannot be half-spaces"
#define R_POSE_MIX "must have either matrix or translation/rotation, not both"
/* Printed with the norm the client sent, "%.9g": nine digits show a norm
 * just outside the 1e-6 tolerance as different from 1. */
#define R_QUAT_NORM "quaternion norm must be within 1e-6 of 1 (a unit quaternion), has norm %.9g"
#define R_QUAT_OBJECT "must be an object {\"w\":..,\"x\":..,\"y\":..,\"z\":..}"
#define R_QUAT_LIST R_QUAT_OBJECT ", not a list"
#define R_MATRIX "must be an array of 3 or 4 rows"
#define R_MATRIX_ROW "must be an array of 4 numbers"
#define R_MATRIX_LAST "must be [0,0,0,1]"
#define R_ROTATION "rotation must be orthonormal with det +1"
#define R_NAME "must be 1-128 characters of [A-Za-z0-9_.-], not starting with '.'"
#define R_ID "must be 1-128 characters of [A-Za-z0-9_.:/#-]"

/* ---- errors and paths ------------------------------------------------- */

bool rp_codec_fail(rp_codec_err *err, const char *path, const char *fmt, ...)
{
    if (!err)
        return false;
    rp_utf8_copy(err->path, sizeof err->path, path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->reason, sizeof err->reason, fmt, ap);
    va_end(ap);
    if (n < 0)
        err->reason[0] = '\0';
    else if ((size_t)n >= sizeof err->reason)
        err->reason[rp_utf8_trim(err->reason, sizeof err->reason - 1)] = '\0';
    return false;
}

/* Appends sep (0 for none), then s[0..n), to the path in dst[0..len),
 * truncating at RP_CODEC_PATH_MAX - 1 bytes. */
static char *path_append(char *dst, size_t len, char sep, const char *s, size_t n)
{
    const size_t cap = RP_CODEC_PATH_MAX - 1;
    if (sep && len < cap)
        dst[len++] = sep;
    if (n > cap - len)
        n = rp_utf8_trim(s, cap - len);
    memmove(dst + len, s, n);
    dst[len + n] = '\0';
    return dst;
}

/* Copies path into dst (they may be the same buffer) and returns its length. */
static size_t path_base(char *dst, const char *path)
{
    if (!path)
        path = "";
    size_t len = strlen(path);
    if (len > RP_CODEC_PATH_MAX - 1)
        len = rp_utf8_trim(path, RP_CODEC_PATH_MAX - 1);
    if (dst != path)
        memmove(dst, path, len);
    dst[len] = '\0';
    return len;
}

char *rp_codec_path_key(char *dst, const char *path, const char *key)
{
    size_t len = path_base(dst, path);
    return path_append(dst, len, len ? '.' : 0, key, strlen(key));
}

char *rp_codec_path_index(char *dst, const char *path, size_t index)
{
    char num[24];
    size_t n = sizeof num;
    num[--n] = ']';
    do {
        num[--n] = (char)('0' + index % 10);
        index /= 10;
    } while (index);
    num[--n] = '[';
    size_t len = path_base(dst, path);
    return path_append(dst, len, 0, num + n, sizeof num - n);
}

/* ---- scalars --------------------------------------------------------- */

bool rp_codec_number(const cJSON *j, const char *path, double *out, rp_codec_err *err)
{
    if (!j)
        return rp_codec_fail(err, path, R_REQUIRED);
    if (!cJSON_IsNumber(j))
        return rp_codec_fail(err, path, R_NUMBER);
    /* cJSON turns 1e400 into inf; JSON has no NaN, but be safe. */
    if (!isfinite(j->valuedouble))
        return rp_codec_fail(err, path, R_FINITE);
    *out = j->valuedouble;
    return true;
}

bool rp_codec_nonneg(const cJSON *j, const char *path, double *out, rp_codec_err *err)
{
    if (!j)
        return rp_codec_fail(err, path, R_REQUIRED);
    if (!cJSON_IsNumber(j))
        return rp_codec_fail(err, path, R_NUMBER);
    double x = j->valuedouble;
    if (!(isfinite(x) && x >= 0))
        return rp_codec_fail(err, path, R_NONNEG);
    /* -0 is accepted as 0 and stored as +0, so it never prints as "-0". */
    *out = x == 0 ? 0.0 : x;
    return true;
}

bool rp_codec_bool(const cJSON *j, const char *path, bool *out, rp_codec_err *err)
{
    if (!j)
        return rp_codec_fail(err, path, R_REQUIRED);
    if (!cJSON_IsBool(j))
        return rp_codec_fail(err, path, R_BOOL);
    *out = cJSON_IsTrue(j);
    return true;
}

bool rp_codec_uint(const cJSON *j, const char *path, uint64_t *out, rp_codec_err *err)
{
    if (!j)
        return rp_codec_fail(err, path, R_REQUIRED);
    if (!cJSON_IsNumber(j))
        return rp_codec_fail(err, path, R_UINT);
    double x = j->valuedouble;
    /* 2^53: above it a double no longer holds every integer, so the value
     * the client wrote may not be the one we read. */
    if (!(x >= 0 && x <= 9007199254740992.0 && x == floor(x)))
        return rp_codec_fail(err, path, R_UINT);
    *out = (uint64_t)x;
    return true;
}

bool rp_codec_string(const cJSON *j, const char *path, const char **out, rp_codec_err *err)
{
    if (!j)
        return rp_codec_fail(err, path, R_REQUIRED);
    if (!cJSON_IsString(j) || !j->valuestring)
        return rp_codec_fail(err, path, R_STRING);
    *out = j->valuestring;
    return true;
}

/* ---- names and ids (their rules: util/ids.c) --------------------------- */

bool rp_codec_name(const cJSON *j, const char *path, const char **out, rp_codec_err *err)
{
    if (!rp_codec_string(j, path, out, err))
        return false;
    if (!rp_codec_valid_name(*out))
        return rp_codec_fail(err, path, R_NAME);
    return true;
}

bool rp_codec_id(const cJSON *j, const char *path, const char **out, rp_codec_err *err)
{
    if (!rp_codec_string(j, path, out, err))
        return false;
    if (!rp_codec_valid_id(*out))
        return rp_codec_fail(err, path, R_ID);
    return true;
}

/* ---- objects ----------------------------------------------------------- */

/* Checks that j is an object whose members are all named in `allowed`
 * (NULL-terminated), each at most once, and stores member i's value in
 * found[i] (NULL when absent; found may be NULL).  Stops at the first
 * unknown or repeated key, so it looks at no more than |allowed| + 1
 * members however large the object is. */
static bool collect(const cJSON *j, const char *path, const char *const *allowed,
                    const cJSON **found, rp_codec_err *err)
{
    if (!j)
        return rp_codec_fail(err, path, R_REQUIRED);
    if (!cJSON_IsObject(j))
        return rp_codec_fail(err, path, R_OBJECT);
    size_t n = 0;
    while (allowed[n])
        n++;
    if (found)
        for (size_t i = 0; i < n; i++)
            found[i] = NULL;
    uint64_t seen = 0;
    for (const cJSON *c = j->child; c; c = c->next) {
        const char *key = c->string ? c->string : "";
        size_t i = 0;
        while (i < n && strcmp(allowed[i], key) != 0)
            i++;
        char p[RP_CODEC_PATH_MAX];
        if (i == n)
            return rp_codec_fail(err, rp_codec_path_key(p, path, key), R_UNKNOWN);
        bool dup;
        if (i < 64) {
            dup = seen & ((uint64_t)1 << i);
            seen |= (uint64_t)1 << i;
        } else {
            dup = false;
            for (const cJSON *d = j->child; d != c && !dup; d = d->next)
                dup = d->string && strcmp(d->string, key) == 0;
        }
        if (dup)
            return rp_codec_fail(err, rp_codec_path_key(p, path, key), R_DUPLICATE);
        if (found)
            found[i] = c;
    }
    return true;
}

bool rp_codec_object_keys(const cJSON *j, const char *path, const char *const *allowed,
                          rp_codec_err *err)
{
    return collect(j, path, allowed, NULL, err);
}

/* The members of a large map as its duplicate check's table sees them. */
typedef struct member {
    const char *key;
    uint32_t hash;
} member;

static const char *member_key(const void *ctx, uint32_t k)
{
    return ((const member *)ctx)[k].key;
}

static uint32_t member_hash(const void *ctx, uint32_t k)
{
    return ((const member *)ctx)[k].hash;
}

rp_status rp_codec_object_unique(const cJSON *j, const char *path, rp_codec_err *err)
{
    if (!cJSON_IsObject(j)) {
        rp_codec_fail(err, path, R_OBJECT);
        return RP_ERR_INVALID_ARG;
    }
    size_t n = 0;
    for (const cJSON *c = j->child; c; c = c->next)
        n++;
    char p[RP_CODEC_PATH_MAX];
    if (n <= 16) { /* small maps: pairwise is cheaper than a table */
        for (const cJSON *c = j->child; c; c = c->next)
            for (const cJSON *d = j->child; d != c; d = d->next)
                if (strcmp(c->string ? c->string : "", d->string ? d->string : "") == 0) {
                    rp_codec_fail(err, rp_codec_path_key(p, path, c->string ? c->string : ""),
                                  R_DUPLICATE);
                    return RP_ERR_INVALID_ARG;
                }
        return RP_OK;
    }
    member *members = n < RP_STRTAB_EMPTY ? malloc(n * sizeof *members) : NULL;
    rp_strtab t;
    rp_strtab_init_(&t, member_key, member_hash, members);
    if (!members || !rp_strtab_reserve_(&t, n)) {
        free(members);
        return RP_ERR_NOMEM;
    }
    rp_status st = RP_OK;
    uint32_t k = 0;
    for (const cJSON *c = j->child; c && st == RP_OK; c = c->next, k++) {
        members[k].key = c->string ? c->string : "";
        members[k].hash = rp_strhash_(members[k].key);
        size_t slot;
        if (rp_strtab_find_(&t, members[k].key, members[k].hash, &slot)) {
            rp_codec_fail(err, rp_codec_path_key(p, path, members[k].key), R_DUPLICATE);
            st = RP_ERR_INVALID_ARG;
        } else {
            rp_strtab_insert_at_(&t, slot, k);
        }
    }
    rp_strtab_free_(&t);
    free(members);
    return st;
}

/* ---- geometry values ------------------------------------------------- */

/* [x, y, z]: three finite numbers, or with `nonneg` three finite numbers
 * >= 0 (half extents; -0 is stored as +0, as rp_codec_nonneg does).  A bad
 * element is reported at its index by the scalar decoder, so that its
 * reason is the same as for a lone number of that kind. */
static bool vec3_of(const cJSON *j, const char *path, bool nonneg, rp_vec3 *out, rp_codec_err *err)
{
    if (!j)
        return rp_codec_fail(err, path, R_REQUIRED);
    const cJSON *e[3];
    const cJSON *c = cJSON_IsArray(j) ? j->child : NULL;
    int n = 0;
    for (; c && n < 4; c = c->next, n++)
        if (n < 3)
            e[n] = c;
    if (!cJSON_IsArray(j) || n != 3)
        return rp_codec_fail(err, path, R_VEC3);
    double v[3];
    for (int i = 0; i < 3; i++) {
        double x = cJSON_IsNumber(e[i]) ? e[i]->valuedouble : NAN;
        if (!isfinite(x) || (nonneg && !(x >= 0))) {
            char p[RP_CODEC_PATH_MAX];
            rp_codec_path_index(p, path, (size_t)i);
            return nonneg ? rp_codec_nonneg(e[i], p, &v[i], err)
                          : rp_codec_number(e[i], p, &v[i], err);
        }
        v[i] = nonneg && x == 0 ? 0.0 : x;
    }
    out->x = v[0];
    out->y = v[1];
    out->z = v[2];
    return true;
}

bool rp_codec_vec3(const cJSON *j, const char *path, rp_vec3 *out, rp_codec_err *err)
{
    return vec3_of(j, path, false, out, err);
}

static const char *const quat_keys[] = {"w", "x", "y", "z", NULL};

/* {"w","x","y","z"} at `path`: each a finite number, norm within 1e-6 of 1
 * (absolute, on the norm itself, not its square).  Returns the components
 * unnormalised; the caller's constructor (rp_transform_from_quaternion,
 * rp_box_new) normalises. */
static bool decode_quaternion(const cJSON *j, const char *path, double q[4], rp_codec_err *err)
{
    /* A list [w,x,y,z] (or [x,y,z,w], as some libraries write it) is a
     * common guess; say which form is expected rather than only "must be
     * an object", and guess no component order. */
    if (j && !cJSON_IsObject(j))
        return rp_codec_fail(err, path, cJSON_IsArray(j) ? R_QUAT_LIST : R_QUAT_OBJECT);
    const cJSON *m[4];
    if (!collect(j, path, quat_keys, m, err))
        return false;
    char p[RP_CODEC_PATH_MAX];
    for (int i = 0; i < 4; i++)
        if (!rp_codec_number(m[i], rp_codec_path_key(p, path, quat_keys[i]), &q[i], err))
            return false;
    double norm = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(fabs(norm - 1.0) <= RP_CODEC_ROTATION_TOL)) {
        /* The squares overflow for components near 1e154 and up; the
         * message then reports the norm computed on scaled components. */
        if (isinf(norm)) {
            double s = 0;
            for (int i = 0; i < 4; i++)
                s = fmax(s, fabs(q[i]));
            double sum = 0;
            for (int i = 0; i < 4; i++)
                sum += (q[i] / s) * (q[i] / s);
            norm = s * sqrt(sum);
        }
        return rp_codec_fail(err, path, R_QUAT_NORM, norm);
    }
    return true;
}

static const char *const sphere_keys[] = {"center", "radius", NULL};
static const char *const capsule_keys[] = {"a", "b", "radius", NULL};
static const char *const box_keys[] = {"center", "half_extents", "rotation", NULL};
static const char *const halfspace_keys[] = {"normal", "offset", NULL};
static const char *const shape_keys[] = {"sphere", "capsule", "box", "halfspace", NULL};

/* Reports a geometry-core rejection that the decoders' own checks should
 * have caught first; kept so that a stricter core never lets a shape
 * through. */
static bool status_fail(rp_status st, const char *path, rp_codec_err *err)
{
    return rp_codec_fail(err, path, "%s", rp_status_str(st));
}

/* Each decodes the body of one kind at `base` (path.sphere, ...) into
 * *out, which is zero: they set its kind and its member. */
static bool decode_sphere(const cJSON *j, const char *base, rp_shape *out, rp_codec_err *err)
{
    const cJSON *m[2];
    rp_vec3 center = {0, 0, 0};
    double r = 0;
    char p[RP_CODEC_PATH_MAX];
    if (!collect(j, base, sphere_keys, m, err) ||
        !rp_codec_vec3(m[0], rp_codec_path_key(p, base, "center"), &center, err) ||
        !rp_codec_nonneg(m[1], rp_codec_path_key(p, base, "radius"), &r, err))
        return false;
    rp_status st = rp_sphere_new(center, r, &out->sphere);
    if (st)
        return status_fail(st, base, err);
    out->kind = RP_SHAPE_SPHERE;
    return true;
}

static bool decode_capsule(const cJSON *j, const char *base, rp_shape *out, rp_codec_err *err)
{
    const cJSON *m[3];
    rp_vec3 a = {0, 0, 0}, b = {0, 0, 0};
    double r = 0;
    char p[RP_CODEC_PATH_MAX];
    if (!collect(j, base, capsule_keys, m, err) ||
        !rp_codec_vec3(m[0], rp_codec_path_key(p, base, "a"), &a, err) ||
        !rp_codec_vec3(m[1], rp_codec_path_key(p, base, "b"), &b, err) ||
        !rp_codec_nonneg(m[2], rp_codec_path_key(p, base, "radius"), &r, err))
        return false;
    rp_status st = rp_capsule_new(a, b, r, &out->capsule);
    if (st)
        return status_fail(st, base, err);
    out->kind = RP_SHAPE_CAPSULE;
    return true;
}

/* Boxes and half-spaces go through their constructors, which normalise the
 * rotation and the normal but keep one already unit bit for bit: a shape
 * the daemon wrote (scene.get, the journal, watch notifications) decodes to
 * the same bits. */
static bool decode_box(const cJSON *j, const char *base, rp_shape *out, rp_codec_err *err)
{
    const cJSON *m[3];
    rp_vec3 center = {0, 0, 0}, half = {0, 0, 0};
    double q[4] = {1, 0, 0, 0}; /* identity when the rotation is left out */
    char p[RP_CODEC_PATH_MAX];
    if (!collect(j, base, box_keys, m, err) ||
        !rp_codec_vec3(m[0], rp_codec_path_key(p, base, "center"), &center, err) ||
        !vec3_of(m[1], rp_codec_path_key(p, base, "half_extents"), true, &half, err) ||
        (m[2] && !decode_quaternion(m[2], rp_codec_path_key(p, base, "rotation"), q, err)))
        return false;
    out->kind = RP_SHAPE_BOX;
    rp_status st = rp_box_new(center, half, q[0], q[1], q[2], q[3], &out->box);
    if (st)
        return status_fail(st, base, err);
    return true;
}

static bool decode_halfspace(const cJSON *j, const char *base, rp_shape *out, rp_codec_err *err)
{
    const cJSON *m[2];
    rp_vec3 normal = {0, 0, 0};
    double offset = 0;
    char p[RP_CODEC_PATH_MAX];
    if (!collect(j, base, halfspace_keys, m, err) ||
        !rp_codec_vec3(m[0], rp_codec_path_key(p, base, "normal"), &normal, err))
        return false;
    if (normal.x == 0 && normal.y == 0 && normal.z == 0)
        return rp_codec_fail(err, p, R_NORMAL_ZERO);
    if (!rp_codec_number(m[1], rp_codec_path_key(p, base, "offset"), &offset, err))
        return false;
    out->kind = RP_SHAPE_HALFSPACE;
    rp_status st = rp_halfspace_new(normal, offset, &out->halfspace);
    /* Both are finite here: a failure is the offset divided by a short
     * normal's length passing the double range. */
    if (st == RP_ERR_NONFINITE)
        return rp_codec_fail(err, p, R_OFFSET_RANGE);
    if (st)
        return status_fail(st, base, err);
    return true;
}

typedef bool (*shape_decoder)(const cJSON *j, const char *base, rp_shape *out, rp_codec_err *err);
/* In the order of shape_keys. */
static const shape_decoder decoders[] = {decode_sphere, decode_capsule, decode_box,
                                         decode_halfspace};

bool rp_codec_shape(const cJSON *j, const char *path, rp_shape *out, rp_codec_err *err)
{
    const cJSON *kind[4];
    if (!collect(j, path, shape_keys, kind, err))
        return false;
    int which = -1, given = 0;
    for (int i = 0; i < 4; i++)
        if (kind[i]) {
            which = i;
            given++;
        }
    if (given != 1)
        return rp_codec_fail(err, path, R_SHAPE_ONE);
    char base[RP_CODEC_PATH_MAX];
    rp_codec_path_key(base, path, shape_keys[which]);
    /* Zero first: the union's bytes past a smaller kind and the padding
     * after `kind` are then defined, and decoded shapes can be copied and
     * compared whole (the snapshot loader does the same). */
    rp_shape s;
    memset(&s, 0, sizeof s);
    if (!decoders[which](kind[which], base, &s, err))
        return false;
    *out = s;
    return true;
}

bool rp_codec_sphere_or_capsule(const cJSON *j, const char *path, const char *role, rp_shape *out,
                                rp_codec_err *err)
{
    if (!rp_codec_shape(j, path, out, err))
        return false;
    if (out->kind != RP_SHAPE_SPHERE && out->kind != RP_SHAPE_CAPSULE)
        return rp_codec_fail(err, path, R_ROUND_ONLY, role);
    return true;
}

bool rp_codec_link_shape(const cJSON *j, const char *path, const char *role, rp_shape *out,
                         rp_codec_err *err)
{
    if (!rp_codec_shape(j, path, out, err))
        return false;
    if (out->kind == RP_SHAPE_HALFSPACE)
        return rp_codec_fail(err, path, R_NOT_HALFSPACE, role);
    return true;
}

static const char *const pose_keys[] = {"translation", "rotation", "matrix", NULL};

/* [[r00,r01,r02,tx],[r10,r11,r12,ty],[r20,r21,r22,tz]] with an optional
 * exact [0,0,0,1] row; the rotation is checked by rp_transform_validate
 * (orthonormal with det +1 within 1e-6) and kept as given. */
static bool decode_matrix(const cJSON *j, const char *path, rp_transform *out, rp_codec_err *err)
{
    const cJSON *rows[4];
    int n = 0;
    const cJSON *c = cJSON_IsArray(j) ? j->child : NULL;
    for (; c && n < 5; c = c->next, n++)
        if (n < 4)
            rows[n] = c;
    if (!cJSON_IsArray(j) || n < 3 || n > 4)
        return rp_codec_fail(err, path, R_MATRIX);

    char rp[RP_CODEC_PATH_MAX], p[RP_CODEC_PATH_MAX];
    double v[4][4];
    for (int i = 0; i < n; i++) {
        rp_codec_path_index(rp, path, (size_t)i);
        int k = 0;
        const cJSON *e = cJSON_IsArray(rows[i]) ? rows[i]->child : NULL;
        for (; e && k < 5; e = e->next, k++)
            if (k < 4 && !rp_codec_number(e, rp_codec_path_index(p, rp, (size_t)k), &v[i][k], err))
                return false;
        if (!cJSON_IsArray(rows[i]) || k != 4)
            return rp_codec_fail(err, rp, R_MATRIX_ROW);
    }
    if (n == 4 && !(v[3][0] == 0 && v[3][1] == 0 && v[3][2] == 0 && v[3][3] == 1))
        return rp_codec_fail(err, rp_codec_path_index(p, path, 3), R_MATRIX_LAST);

    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            out->r[i][k] = v[i][k];
    out->t.x = v[0][3];
    out->t.y = v[1][3];
    out->t.z = v[2][3];
    if (rp_transform_validate(out) != RP_OK)
        return rp_codec_fail(err, path, R_ROTATION);
    return true;
}

bool rp_codec_pose(const cJSON *j, const char *path, rp_transform *out, rp_codec_err *err)
{
    const cJSON *m[3];
    if (!collect(j, path, pose_keys, m, err))
        return false;
    char p[RP_CODEC_PATH_MAX];
    if (m[2]) {
        if (m[0] || m[1])
            return rp_codec_fail(err, path, R_POSE_MIX);
        return decode_matrix(m[2], rp_codec_path_key(p, path, "matrix"), out, err);
    }
    rp_vec3 t = {0, 0, 0};
    double q[4] = {1, 0, 0, 0};
    if (m[0] && !rp_codec_vec3(m[0], rp_codec_path_key(p, path, "translation"), &t, err))
        return false;
    if (m[1] && !decode_quaternion(m[1], rp_codec_path_key(p, path, "rotation"), q, err))
        return false;
    rp_status st = rp_transform_from_quaternion(t, q[0], q[1], q[2], q[3], out);
    if (st)
        return status_fail(st, path, err);
    return true;
}
