/* SPDX-License-Identifier: MIT */
/*
 * Tables of numbers straight from the request text: the fast path for
 * check.batch's params.joints (rpc.c), which would otherwise cost cJSON an
 * allocated node and a strtod call per number.
 *
 * Numbers.  Only the strict JSON grammar is accepted here
 * (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?); anything else makes
 * the caller fall back to cJSON, which then decides.  The value is the
 * correctly rounded double (round to nearest, ties to even), as strtod
 * gives, which is what cJSON returns for these texts:
 *   - up to 19 significant digits go into a 64-bit integer M, and the value
 *     is M * 10^p;
 *   - when M < 2^53 and |p| <= 22, both factors are exact doubles and one
 *     IEEE multiplication or division rounds correctly (Clinger);
 *   - otherwise 10^p comes from the 128-bit table of writer.c (rounded up:
 *     10^p lies in (g - 1, g] * 2^(e - 127)), so the value lies in an
 *     interval of two 192-bit products; when both ends round to the same
 *     double, so does the value (rounding is monotonic);
 *   - anything left (more than 19 digits, an interval that straddles a
 *     rounding boundary, results out of the normal range) goes to strtod.
 * Results that would overflow to infinity fail (cJSON would return inf,
 * which every decoder refuses anyway; the general path says so).
 */
#include "codec/codec.h"
#include "codec/pow10_table.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define IS_DIGIT(c) ((unsigned)((c) - '0') < 10u)

/* floor(log2(10^e)) for |e| <= 1233 (as in writer.c). */
static inline int floor_log2_pow10(int e)
{
    return (e * 1741647) >> 19;
}

static const double exact_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 u128;

/* A 192-bit unsigned integer, most significant word first. */
typedef struct u192 {
    uint64_t w[3];
} u192;

/* m * g, g the 128-bit table entry {high, low}. */
static u192 mul_64_128(uint64_t m, const uint64_t g[2])
{
    u128 lo = (u128)m * g[1], hi = (u128)m * g[0];
    u128 mid = (hi & UINT64_MAX) + (uint64_t)(lo >> 64);
    u192 r = {{(uint64_t)(hi >> 64) + (uint64_t)(mid >> 64), (uint64_t)mid, (uint64_t)lo}};
    return r;
}

static u192 sub_64(u192 a, uint64_t b)
{
    uint64_t borrow = a.w[2] < b;
    a.w[2] -= b;
    uint64_t borrow2 = a.w[1] < borrow;
    a.w[1] -= borrow;
    a.w[0] -= borrow2;
    return a;
}

/* Rounds v (>= 2^189) to 53 significant bits, ties to even: *mant in
 * [2^52, 2^53), and returns the power of two of its lowest bit relative to
 * v's bit 0. */
static int round_53(u192 v, uint64_t *mant)
{
    /* Position of the leading bit: 189 .. 191 (w[0] >= 2^61). */
    int lead = 128 + (63 - __builtin_clzll(v.w[0]));
    int shift = lead - 52; /* bits below the mantissa: 137 .. 139 */
    /* v >> shift, and the bits shifted out, split into half and sticky. */
    int s = shift - 128; /* 9 .. 11: inside w[0] */
    uint64_t m = v.w[0] >> s;
    uint64_t rest_top = v.w[0] & (((uint64_t)1 << s) - 1);
    uint64_t half = (uint64_t)1 << (s - 1);
    bool sticky_low = v.w[1] != 0 || v.w[2] != 0;
    bool up;
    if (rest_top > half || (rest_top == half && sticky_low))
        up = true;
    else if (rest_top == half && !sticky_low)
        up = (m & 1) != 0;
    else
        up = false;
    m += up;
    if (m >> 53) {
        m >>= 1;
        shift++;
    }
    *mant = m;
    return shift;
}
#endif

/* M * 10^p for M != 0: true with *out set when the result is certain and a
 * normal double; false sends the caller to strtod. */
static bool scale(uint64_t M, int p, double *out)
{
    if (M < ((uint64_t)1 << 53) && p >= -22 && p <= 22) {
        *out = p >= 0 ? (double)M * exact_pow10[p] : (double)M / exact_pow10[-p];
        return true;
    }
#if defined(__SIZEOF_INT128__)
    if (p < RP_POW10_MIN || p > RP_POW10_MAX)
        return false;
    int lz = __builtin_clzll(M);
    uint64_t Mn = M << lz; /* in [2^63, 2^64) */
    const uint64_t *g = rp_pow10_table[p - RP_POW10_MIN];
    u192 hi = mul_64_128(Mn, g); /* >= 2^190 */
    u192 lo = sub_64(hi, Mn);    /* >= 2^190 - 2^64 > 2^189 */
    uint64_t m_hi, m_lo;
    int s_hi = round_53(hi, &m_hi), s_lo = round_53(lo, &m_lo);
    if (m_hi != m_lo || s_hi != s_lo)
        return false;
    /* value = m * 2^(s + e - 127 - lz), e = floor(log2(10^p)). */
    int e2 = s_hi + floor_log2_pow10(p) - 127 - lz;
    int biased = e2 + 52 + 1023;
    if (biased < 1 || biased > 2046)
        return false;
    uint64_t bits = ((uint64_t)biased << 52) | (m_hi & (((uint64_t)1 << 52) - 1));
    memcpy(out, &bits, sizeof *out);
    return true;
#else
    return false;
#endif
}

size_t rp_json_number(const char *s, size_t n, double *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && s[i] == '-') {
        neg = true;
        i++;
    }
    if (i == n || !IS_DIGIT(s[i]))
        return 0;
    uint64_t M = 0;
    int digits = 0;  /* significant digits in M */
    int dropped = 0; /* significant digits beyond 19 (strtod then) */
    int p = 0;       /* decimal exponent of M's last digit */
    if (s[i] == '0') {
        i++;
    } else {
        for (; i < n && IS_DIGIT(s[i]); i++) {
            if (digits < 19) {
                M = M * 10 + (uint64_t)(s[i] - '0');
                digits++;
            } else {
                dropped++;
                p++;
            }
        }
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i == n || !IS_DIGIT(s[i]))
            return 0;
        for (; i < n && IS_DIGIT(s[i]); i++) {
            if (M == 0 && s[i] == '0') {
                p--; /* a leading zero: not significant */
            } else if (digits < 19) {
                M = M * 10 + (uint64_t)(s[i] - '0');
                digits++;
                p--;
            } else {
                dropped++;
            }
        }
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        if (i == n || !IS_DIGIT(s[i]))
            return 0;
        int e = 0;
        for (; i < n && IS_DIGIT(s[i]); i++)
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        p += eneg ? -e : e;
    }
    double v; /* the magnitude */
    if (M == 0) {
        v = 0.0;
    } else if (dropped || !scale(M, p, &v)) {
        /* strtod needs a terminated copy (without the sign); numbers are
         * short. */
        char buf[64];
        char *heap = NULL, *text = buf;
        size_t len = i - neg;
        if (len >= sizeof buf && !(text = heap = malloc(len + 1)))
            return 0;
        memcpy(text, s + neg, len);
        text[len] = '\0';
        v = strtod(text, NULL);
        free(heap);
        if (!(v - v == 0.0)) /* overflowed to infinity */
            return 0;
    }
    *out = neg ? -v : v;
    return i;
}

/* The digits from s[i]: the index after the last one. */
static size_t skip_digits(const char *s, size_t n, size_t i)
{
    while (i < n && IS_DIGIT(s[i]))
        i++;
    return i;
}

size_t rp_json_number_span(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i == n || !IS_DIGIT(s[i]))
        return 0;
    /* One zero, or digits that do not start with one. */
    i = s[i] == '0' ? i + 1 : skip_digits(s, n, i);
    if (i < n && s[i] == '.') {
        if (i + 1 == n || !IS_DIGIT(s[i + 1]))
            return 0;
        i = skip_digits(s, n, i + 1);
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i == n || !IS_DIGIT(s[i]))
            return 0;
        i = skip_digits(s, n, i);
    }
    return i;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

size_t rp_json_rows(const char *s, size_t n, rp_num_rows *out)
{
    memset(out, 0, sizeof *out);
    size_t i = 0, cap = 0;
    bool width_known = false;
    if (i == n || s[i] != '[')
        return 0;
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == ']')
        return i + 1;
    for (;;) {
        if (i == n || s[i] != '[')
            goto fail;
        i = skip_ws(s, n, i + 1);
        size_t count = 0;
        if (i < n && s[i] == ']') {
            i++;
        } else {
            for (;;) {
                if (out->n == cap) {
                    size_t want = cap ? cap * 2 : 256;
                    double *v = realloc(out->v, want * sizeof *v);
                    if (!v)
                        goto fail;
                    out->v = v;
                    cap = want;
                }
                size_t used = rp_json_number(s + i, n - i, &out->v[out->n]);
                if (!used)
                    goto fail;
                out->n++;
                count++;
                i = skip_ws(s, n, i + used);
                if (i < n && s[i] == ',') {
                    i = skip_ws(s, n, i + 1);
                    continue;
                }
                if (i < n && s[i] == ']') {
                    i++;
                    break;
                }
                goto fail;
            }
        }
        if (!width_known) {
            out->width = count;
            width_known = true;
        } else if (count != out->width) {
            goto fail;
        }
        out->rows++;
        i = skip_ws(s, n, i);
        if (i < n && s[i] == ',') {
            i = skip_ws(s, n, i + 1);
            continue;
        }
        if (i < n && s[i] == ']')
            return i + 1;
        goto fail;
    }
fail:
    rp_num_rows_free(out);
    return 0;
}

void rp_num_rows_free(rp_num_rows *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* ---- finding params.joints of a check.batch line ----------------------- */

/* Skips a JSON string at s[i] == '"'; returns the index after it, or 0.
 * *plain says whether it held no escape. */
static size_t skip_string(const char *s, size_t n, size_t i, bool *plain)
{
    *plain = true;
    for (i++; i < n; i++) {
        if (s[i] == '"')
            return i + 1;
        if (s[i] == '\\') {
            *plain = false;
            i++;
        }
    }
    return 0;
}

/* Skips any JSON value at s[i] (not validated: cJSON parses the line
 * afterwards); returns the index after it, or 0. */
static size_t skip_value(const char *s, size_t n, size_t i)
{
    if (i >= n)
        return 0;
    bool plain;
    if (s[i] == '"')
        return skip_string(s, n, i, &plain);
    if (s[i] == '[' || s[i] == '{') {
        size_t depth = 0;
        for (; i < n; i++) {
            if (s[i] == '"') {
                i = skip_string(s, n, i, &plain);
                if (!i)
                    return 0;
                i--;
            } else if (s[i] == '[' || s[i] == '{') {
                depth++;
            } else if (s[i] == ']' || s[i] == '}') {
                if (--depth == 0)
                    return i + 1;
            }
        }
        return 0;
    }
    size_t start = i;
    while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\t' &&
           s[i] != '\r' && s[i] != '\n')
        i++;
    return i > start ? i : 0;
}

static bool key_is(const char *s, size_t from, size_t to, const char *key)
{
    size_t k = strlen(key);
    return to - from == k + 2 && memcmp(s + from + 1, key, k) == 0;
}

/* Walks the members of the object at s[i] == '{' (s[0..n)).  For each
 * member calls fn with the key's span (quotes included) and where the
 * value starts; fn returns where the value ends, or 0 to stop the walk.
 * Fails on a key with escapes or on malformed text.  Returns the index
 * after the object, or 0. */
typedef size_t (*member_fn)(void *ctx, const char *s, size_t n, size_t k0, size_t k1, size_t v0);

static size_t walk_object(const char *s, size_t n, size_t i, member_fn fn, void *ctx)
{
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == '}')
        return i + 1;
    for (;;) {
        bool plain;
        if (i >= n || s[i] != '"')
            return 0;
        size_t k0 = i, k1 = skip_string(s, n, i, &plain);
        if (!k1 || !plain)
            return 0;
        i = skip_ws(s, n, k1);
        if (i >= n || s[i] != ':')
            return 0;
        size_t v0 = skip_ws(s, n, i + 1), v1 = fn(ctx, s, n, k0, k1, v0);
        if (!v1)
            return 0;
        i = skip_ws(s, n, v1);
        if (i < n && s[i] == ',') {
            i = skip_ws(s, n, i + 1);
            continue;
        }
        if (i < n && s[i] == '}')
            return i + 1;
        return 0;
    }
}

typedef struct find_ctx {
    int methods, params, joints;
    bool is_batch;
    size_t j0, j1;     /* joints' value */
    rp_num_rows *rows; /* filled from it */
} find_ctx;

static size_t params_member(void *ctx, const char *s, size_t n, size_t k0, size_t k1, size_t v0)
{
    find_ctx *f = ctx;
    if (!key_is(s, k0, k1, "joints"))
        return skip_value(s, n, v0);
    if (f->joints++)
        return 0; /* twice */
    size_t used = rp_json_rows(s + v0, n - v0, f->rows);
    f->j0 = v0;
    f->j1 = v0 + used;
    return used ? f->j1 : 0;
}

static size_t top_member(void *ctx, const char *s, size_t n, size_t k0, size_t k1, size_t v0)
{
    find_ctx *f = ctx;
    if (key_is(s, k0, k1, "method")) {
        f->is_batch = n - v0 >= 13 && memcmp(s + v0, "\"check.batch\"", 13) == 0;
        return f->methods++ ? 0 : skip_value(s, n, v0);
    }
    if (key_is(s, k0, k1, "params")) {
        if (f->params++ || v0 >= n || s[v0] != '{')
            return 0;
        return walk_object(s, n, v0, params_member, f);
    }
    return skip_value(s, n, v0);
}

bool rp_json_batch_joints(const char *line, size_t len, size_t *start, size_t *end,
                          rp_num_rows *rows)
{
    find_ctx f = {.rows = rows};
    memset(rows, 0, sizeof *rows);
    size_t i = skip_ws(line, len, 0);
    if (i >= len || line[i] != '{' || !walk_object(line, len, i, top_member, &f) || !f.is_batch ||
        f.joints != 1) {
        rp_num_rows_free(rows);
        return false;
    }
    *start = f.j0;
    *end = f.j1;
    return true;
}
