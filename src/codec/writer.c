/* SPDX-License-Identifier: MIT */
/*
 * The reply writer: a growable buffer with JSON helpers that insert commas
 * by themselves, and the shortest round-trip formatting of doubles.
 *
 * The server builds every reply with these calls, so they sit on the request
 * hot path: no allocation except geometric buffer growth, no printf, and
 * doubles are converted with Schubfach (R. Giulietti, "The Schubfach way to
 * render doubles", 2020): three 64x128-bit products find the shortest
 * decimal that reads back as the same double, closest to it when several are
 * that short.  About ten times faster than snprintf("%.17g"), and shorter.
 * The table of powers of ten is in pow10_table.h.
 */
#include "codec/codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/pow10_table.h"
#include "util/grow.h"

/* First allocation; later ones double.  Most replies fit in one. */
#define JW_INITIAL_CAP 256

/* ---- shortest double to decimal (Schubfach) ----------------------------- */

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* floor(log10(2^q)), and floor(log10(3/4 * 2^q)) when `closer` (the lower
 * neighbour of a power of two is only half as far away), for |q| <= 1500.
 * The constants are the ones from the paper; gcc's >> on negative ints is an
 * arithmetic shift, i.e. a floor division. */
static inline int floor_log10_pow2(int q, bool closer)
{
    return (q * 1262611 - (closer ? 524031 : 0)) >> 22;
}

/* floor(log2(10^e)) for |e| <= 1233. */
static inline int floor_log2_pow10(int e)
{
    return (e * 1741647) >> 19;
}

/* The top 64 bits of the 192-bit product cp * g, with the lowest bit set
 * when anything below them is non-zero ("round to odd"): enough information
 * to compare the scaled value exactly against the decimal candidates. */
static inline uint64_t round_to_odd(const uint64_t g[2], uint64_t cp)
{
#if defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 u128;
    u128 x = (u128)cp * g[1];
    u128 y = (u128)cp * g[0] + (uint64_t)(x >> 64);
    return (uint64_t)(y >> 64) | ((uint64_t)y != 0);
#else
    /* Portable 64x64 -> 128 multiplications. */
    uint64_t a = cp, r[2][2];
    for (int k = 0; k < 2; k++) {
        uint64_t b = g[k];
        uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32, bl = b & 0xFFFFFFFFu, bh = b >> 32;
        uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
        uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
        r[k][0] = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
        r[k][1] = (mid << 32) | (ll & 0xFFFFFFFFu);
    }
    uint64_t y0 = r[0][1] + r[1][0];
    uint64_t y1 = r[0][0] + (y0 < r[1][0]);
    return y1 | (y0 != 0);
#endif
}

/* Converts a positive finite double, given by its bits without the sign, to
 * the shortest decimal digits * 10^exp10 that reads back as the same double
 * (closest to it when several are that short, ties to even).  The digits may
 * carry trailing zeros; the caller strips them. */
static void to_decimal(uint64_t bits, uint64_t *digits, int *exp10)
{
    const uint64_t hidden = (uint64_t)1 << 52;
    uint64_t frac = bits & (hidden - 1);
    int biased = (int)(bits >> 52);
    uint64_t c;
    int q;
    if (biased != 0) {
        c = hidden | frac;
        q = biased - 1075;
        /* Integers below 2^53 are their own shortest representation. */
        if (q <= 0 && q > -53) {
            uint64_t f = c >> -q;
            if (f << -q == c) {
                *digits = f;
                *exp10 = 0;
                return;
            }
        }
    } else {
        c = frac;
        q = 1 - 1075;
    }

    bool even = (c & 1) == 0;
    bool closer = frac == 0 && biased > 1;
    /* The rounding interval of c * 2^q is (cbl, cbr) * 2^(q-2). */
    uint64_t cbl = 4 * c - 2 + closer, cb = 4 * c, cbr = 4 * c + 2;

    int k = floor_log10_pow2(q, closer);
    int h = q + floor_log2_pow10(-k) + 1; /* 1..4 */
    const uint64_t *g = rp_pow10_table[-k - RP_POW10_MIN];
    uint64_t vbl = round_to_odd(g, cbl << h);
    uint64_t vb = round_to_odd(g, cb << h);
    uint64_t vbr = round_to_odd(g, cbr << h);
    uint64_t lower = vbl + !even, upper = vbr - !even;

    /* One digit shorter first (Figure 6 of the paper); at most one of the
     * two neighbours at that length lies inside the interval. */
    uint64_t s = vb / 4;
    if (s >= 10) {
        uint64_t sp = s / 10;
        bool up_in = lower <= 40 * sp, wp_in = 40 * sp + 40 <= upper;
        if (up_in != wp_in) {
            *digits = sp + wp_in;
            *exp10 = k + 1;
            return;
        }
    }
    bool u_in = lower <= 4 * s, w_in = 4 * s + 4 <= upper;
    if (u_in != w_in) {
        *digits = s + w_in;
        *exp10 = k;
        return;
    }
    /* Both neighbours inside: take the closer one, ties to even. */
    uint64_t mid = 4 * s + 2;
    *digits = s + (vb > mid || (vb == mid && (s & 1) != 0));
    *exp10 = k;
}

static int decimal_length(uint64_t v)
{
    int n = 1;
    while (v >= 10000) {
        v /= 10000;
        n += 4;
    }
    return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

/* Writes the n decimal digits of v (< 10^9) to p[0..n) in 32-bit steps. */
static void put_digits32(char *p, uint32_t v, int n)
{
    while (n >= 2) {
        uint32_t r = v % 100;
        v /= 100;
        n -= 2;
        memcpy(p + n, digit_pairs + 2 * r, 2);
    }
    if (n == 1)
        p[0] = (char)('0' + v);
}

/* Writes the n decimal digits of v to p[0..n).  Splits off eight digits at
 * a time so that the loops run on 32-bit values. */
static void put_digits(char *p, uint64_t v, int n)
{
    while (v > UINT32_MAX) {
        n -= 8;
        put_digits32(p + n, (uint32_t)(v % 100000000), 8);
        v /= 100000000;
    }
    put_digits32(p, (uint32_t)v, n);
}

/* Formats x like "%.17g" would, except with the shortest round-trip digits
 * and an exponent without zero padding: fixed notation for decimal exponents
 * -4..16, scientific otherwise.  That choice keeps the output no longer
 * than "%.17g" of the same number.  Non-finite values give "null". */
size_t rp_format_double(char *buf, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    char *p = buf;
    if (((bits >> 52) & 0x7FF) == 0x7FF) {
        memcpy(buf, "null", 5);
        return 4;
    }
    if (bits >> 63)
        *p++ = '-';
    bits &= ~((uint64_t)1 << 63);
    if (bits == 0) {
        *p++ = '0';
        *p = '\0';
        return (size_t)(p - buf);
    }

    uint64_t digits;
    int e10;
    to_decimal(bits, &digits, &e10);
    /* Strip trailing zeros, eight at a time first (at most 16). */
    while (digits % 100000000 == 0) {
        digits /= 100000000;
        e10 += 8;
    }
    if (digits % 10000 == 0) {
        digits /= 10000;
        e10 += 4;
    }
    if (digits % 100 == 0) {
        digits /= 100;
        e10 += 2;
    }
    if (digits % 10 == 0) {
        digits /= 10;
        e10 += 1;
    }
    int n = decimal_length(digits);
    int sci = n + e10 - 1; /* x = d.ddd * 10^sci */

    if (sci >= -4 && sci < 17) {
        if (sci >= n - 1) { /* integer: digits then zeros */
            put_digits(p, digits, n);
            memset(p + n, '0', (size_t)(sci + 1 - n));
            p += sci + 1;
        } else if (sci >= 0) { /* ddd.ddd */
            put_digits(p + 1, digits, n);
            memmove(p, p + 1, (size_t)sci + 1);
            p[sci + 1] = '.';
            p += n + 1;
        } else { /* 0.000ddd */
            int zeros = -sci - 1;
            p[0] = '0';
            p[1] = '.';
            memset(p + 2, '0', (size_t)zeros);
            put_digits(p + 2 + zeros, digits, n);
            p += 2 + zeros + n;
        }
    } else {
        put_digits(p + 1, digits, n);
        p[0] = p[1];
        if (n > 1) {
            p[1] = '.';
            p += n + 1;
        } else {
            p += 1;
        }
        *p++ = 'e';
        *p++ = sci < 0 ? '-' : '+';
        unsigned u = (unsigned)(sci < 0 ? -sci : sci);
        if (u >= 100) {
            *p++ = (char)('0' + u / 100);
            u %= 100;
            memcpy(p, digit_pairs + 2 * u, 2);
            p += 2;
        } else if (u >= 10) {
            memcpy(p, digit_pairs + 2 * u, 2);
            p += 2;
        } else {
            *p++ = (char)('0' + u);
        }
    }
    *p = '\0';
    return (size_t)(p - buf);
}

/* ---- buffer ---------------------------------------------------------- */

void rp_jw_init(rp_jw *w)
{
    memset(w, 0, sizeof *w);
    w->limit = SIZE_MAX;
}

void rp_jw_free(rp_jw *w)
{
    if (!w)
        return;
    free(w->buf);
    rp_jw_init(w);
}

void rp_jw_reset(rp_jw *w)
{
    w->len = 0;
    w->oom = false;
    w->over = false;
    w->depth = 0;
    w->need_comma[0] = false;
    w->after_key = false;
    if (w->buf)
        w->buf[0] = '\0';
}

/* Grows the buffer so that n more bytes and a NUL fit; doubles the capacity
 * so that appending is amortised O(1).  Called only when it does not fit. */
static bool grow(rp_jw *w, size_t n)
{
    if (w->oom || w->over)
        return false;
    if (w->len >= w->limit || n >= w->limit - w->len) {
        w->over = true;
        return false;
    }
    if (n > SIZE_MAX / 2 - w->len) {
        w->oom = true;
        return false;
    }
    char *nb = rp_grow_(w->buf, &w->cap, w->len + n + 1, 1, JW_INITIAL_CAP);
    if (!nb) {
        w->oom = true;
        return false;
    }
    w->buf = nb;
    return true;
}

/* True when n more bytes (plus the NUL) fit, growing if needed; false once
 * the writer has failed, so every write after a failure is dropped. */
static inline bool room(rp_jw *w, size_t n)
{
    /* len may already be past limit (an error reply is written with the
     * limit lifted), so it is compared before limit - len is taken. */
    if (w->cap - w->len > n && w->len < w->limit && n < w->limit - w->len && !w->oom && !w->over)
        return true;
    return grow(w, n);
}

void rp_jw_rewind(rp_jw *w, const rp_jw *mark)
{
    char *buf = w->buf;
    size_t cap = w->cap;
    bool oom = w->oom, over = w->over;
    size_t limit = w->limit;
    *w = *mark;
    w->buf = buf;
    w->cap = cap;
    w->oom = oom;
    w->over = over;
    w->limit = limit;
    if (buf && w->len < cap)
        buf[w->len] = '\0';
}

void rp_jw_set_limit(rp_jw *w, size_t limit)
{
    w->limit = limit;
}

void rp_jw_clear_failure(rp_jw *w)
{
    w->oom = false;
    w->over = false;
}

void rp_jw_end_line(rp_jw *w)
{
    rp_jw_raw(w, "\n", 1);
    w->depth = 0;
    w->need_comma[0] = false;
    w->after_key = false;
}

char *rp_jw_detach(rp_jw *w, size_t *len)
{
    char *buf = w->buf;
    size_t limit = w->limit;
    *len = w->len;
    rp_jw_init(w);
    w->limit = limit;
    return buf;
}

void rp_jw_release(rp_jw *w, size_t keep)
{
    if (w->cap > keep) {
        size_t limit = w->limit;
        rp_jw_free(w);
        w->limit = limit;
    } else {
        rp_jw_reset(w);
    }
}

bool rp_jw_reserve(rp_jw *w, size_t n)
{
    return room(w, n);
}

/* The separator before a value: none after a key or at the top level, ','
 * before every element of a container but the first.  Needs 1 byte of room,
 * which every caller has reserved. */
static inline void value_prefix(rp_jw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth > 0) {
        if (w->need_comma[w->depth])
            w->buf[w->len++] = ',';
        w->need_comma[w->depth] = true;
    }
}

static inline void put_raw(rp_jw *w, const char *s, size_t n)
{
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

void rp_jw_raw(rp_jw *w, const char *s, size_t n)
{
    if (room(w, n))
        put_raw(w, s, n);
}

void rp_jw_value_raw(rp_jw *w, const char *json, size_t n)
{
    if (!room(w, n + 1))
        return;
    value_prefix(w);
    put_raw(w, json, n);
}

/* Opens a container.  Nesting beyond RP_JW_MAX_DEPTH is a caller bug; it
 * fails the writer like an allocation failure would, so the caller's single
 * oom check catches it. */
static void open_container(rp_jw *w, char c)
{
    if (!room(w, 2))
        return;
    if (w->depth >= RP_JW_MAX_DEPTH) {
        w->oom = true;
        return;
    }
    value_prefix(w);
    w->buf[w->len++] = c;
    w->buf[w->len] = '\0';
    w->depth++;
    w->need_comma[w->depth] = false;
}

static void close_container(rp_jw *w, char c)
{
    if (!room(w, 1))
        return;
    w->buf[w->len++] = c;
    w->buf[w->len] = '\0';
    if (w->depth > 0)
        w->depth--;
    w->after_key = false;
}

void rp_jw_object_begin(rp_jw *w)
{
    open_container(w, '{');
}
void rp_jw_object_end(rp_jw *w)
{
    close_container(w, '}');
}
void rp_jw_array_begin(rp_jw *w)
{
    open_container(w, '[');
}
void rp_jw_array_end(rp_jw *w)
{
    close_container(w, ']');
}

/* ---- strings --------------------------------------------------------- */

/* 1 for the bytes a JSON string must escape: controls, '"' and '\'. */
static const unsigned char needs_escape[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* '\\' */
};

/* Appends s[0..n) as a quoted JSON string.  Needs the comma byte already
 * reserved by the caller's room() call for n + 3 bytes; reserves more only
 * when escapes make the string longer. */
static void put_string(rp_jw *w, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    char *p = w->buf + w->len;
    *p++ = '"';
    size_t i = 0;
    for (;;) {
        size_t start = i;
        while (i < n && !needs_escape[(unsigned char)s[i]])
            i++;
        memcpy(p, s + start, i - start);
        p += i - start;
        if (i == n)
            break;
        /* An escape takes up to 6 bytes where 1 was reserved. */
        w->len = (size_t)(p - w->buf);
        if (!room(w, 6 + (n - i - 1) + 1))
            return;
        p = w->buf + w->len;
        unsigned char c = (unsigned char)s[i++];
        char e = 0;
        switch (c) {
        case '"':
            e = '"';
            break;
        case '\\':
            e = '\\';
            break;
        case '\n':
            e = 'n';
            break;
        case '\r':
            e = 'r';
            break;
        case '\t':
            e = 't';
            break;
        case '\b':
            e = 'b';
            break;
        case '\f':
            e = 'f';
            break;
        default:
            break;
        }
        *p++ = '\\';
        if (e) {
            *p++ = e;
        } else {
            memcpy(p, "u00", 3);
            p[3] = hex[c >> 4];
            p[4] = hex[c & 15];
            p += 5;
        }
    }
    *p++ = '"';
    *p = '\0';
    w->len = (size_t)(p - w->buf);
}

void rp_jw_string_n(rp_jw *w, const char *s, size_t n)
{
    if (n > SIZE_MAX / 2 || !room(w, n + 3))
        return;
    value_prefix(w);
    put_string(w, s, n);
}

void rp_jw_string(rp_jw *w, const char *s)
{
    rp_jw_string_n(w, s, strlen(s));
}

void rp_jw_key(rp_jw *w, const char *key)
{
    size_t n = strlen(key);
    if (n > SIZE_MAX / 2 || !room(w, n + 4))
        return;
    if (w->depth > 0) {
        if (w->need_comma[w->depth])
            w->buf[w->len++] = ',';
        w->need_comma[w->depth] = true;
    }
    put_string(w, key, n);
    if (!room(w, 1))
        return;
    w->buf[w->len++] = ':';
    w->buf[w->len] = '\0';
    w->after_key = true;
}

void rp_jw_key_lit(rp_jw *w, const char *quoted, size_t n)
{
    if (!room(w, n + 1))
        return;
    if (w->depth > 0) {
        if (w->need_comma[w->depth])
            w->buf[w->len++] = ',';
        w->need_comma[w->depth] = true;
    }
    put_raw(w, quoted, n);
    w->after_key = true;
}

/* ---- scalars --------------------------------------------------------- */

/* Longest rp_format_double output is 24 bytes ("-1.2345678901234567e-308"). */
#define JW_DOUBLE_MAX 32

void rp_jw_double(rp_jw *w, double x)
{
    if (!room(w, JW_DOUBLE_MAX + 1))
        return;
    value_prefix(w);
    w->len += rp_format_double(w->buf + w->len, x);
}

/* Appends the decimal digits of u; room already reserved. */
static void put_u64(rp_jw *w, uint64_t u)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[sizeof tmp - ++n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    put_raw(w, tmp + sizeof tmp - n, n);
}

void rp_jw_uint(rp_jw *w, uint64_t x)
{
    if (!room(w, 21))
        return;
    value_prefix(w);
    put_u64(w, x);
}

void rp_jw_int(rp_jw *w, int64_t x)
{
    if (!room(w, 22))
        return;
    value_prefix(w);
    uint64_t u = (uint64_t)x;
    if (x < 0) {
        w->buf[w->len++] = '-';
        u = 0 - u;
    }
    put_u64(w, u);
}

void rp_jw_bool(rp_jw *w, bool b)
{
    rp_jw_value_raw(w, b ? "true" : "false", b ? 4 : 5);
}

void rp_jw_null(rp_jw *w)
{
    rp_jw_value_raw(w, "null", 4);
}

/* ---- geometry -------------------------------------------------------- */

/* Appends "[x,y,z]" without separators; room already reserved. */
static void put_vec3(rp_jw *w, rp_vec3 v)
{
    char *p = w->buf + w->len;
    *p++ = '[';
    p += rp_format_double(p, v.x);
    *p++ = ',';
    p += rp_format_double(p, v.y);
    *p++ = ',';
    p += rp_format_double(p, v.z);
    *p++ = ']';
    *p = '\0';
    w->len = (size_t)(p - w->buf);
}

void rp_jw_vec3(rp_jw *w, rp_vec3 v)
{
    if (!room(w, 1 + 3 * JW_DOUBLE_MAX + 4))
        return;
    value_prefix(w);
    put_vec3(w, v);
}

/* Appends a double; room already reserved. */
static void put_double(rp_jw *w, double x)
{
    w->len += rp_format_double(w->buf + w->len, x);
}

void rp_jw_pose(rp_jw *w, const rp_transform *tf)
{
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "matrix");
    rp_jw_array_begin(w);
    const double t[3] = {tf->t.x, tf->t.y, tf->t.z};
    for (int i = 0; i < 3; i++) {
        rp_jw_array_begin(w);
        for (int k = 0; k < 3; k++)
            rp_jw_double(w, tf->r[i][k]);
        rp_jw_double(w, t[i]);
        rp_jw_array_end(w);
    }
    rp_jw_array_end(w);
    rp_jw_object_end(w);
}

void rp_jw_object(rp_jw *w, const rp_scene *sc, const rp_object *o)
{
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "pose");
    rp_transform pose = rp_object_pose(o);
    rp_jw_pose(w, &pose);
    RP_JW_KEY(w, "shapes");
    rp_jw_object_begin(w);
    for (size_t k = 0; k < rp_object_shape_count(o); k++) {
        const rp_shape_put *p = rp_object_shape_at(o, k);
        rp_jw_key(w, p->id);
        rp_jw_shape(w, &p->shape);
    }
    rp_jw_object_end(w);
    if (rp_object_attached_robot(o)) {
        RP_JW_KEY(w, "attached");
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "robot");
        rp_jw_string(w, rp_object_attached_robot(o));
        RP_JW_KEY(w, "link");
        rp_jw_string(w, rp_object_attached_link(sc, o));
        RP_JW_KEY(w, "rel");
        rp_transform rel = rp_object_attached_rel(o);
        rp_jw_pose(w, &rel);
        rp_jw_object_end(w);
    }
    rp_jw_object_end(w);
}

void rp_jw_robot_state(rp_jw *w, const char *model, const rp_model *m, const double *q,
                       const rp_transform *base)
{
    rp_jw_object_begin(w);
    if (model) {
        RP_JW_KEY(w, "model");
        rp_jw_string(w, model);
    }
    if (m && q) {
        RP_JW_KEY(w, "joints");
        rp_jw_array_begin(w);
        for (size_t k = 0; k < rp_model_dof(m); k++)
            rp_jw_double(w, q[k]);
        rp_jw_array_end(w);
    }
    if (base) {
        RP_JW_KEY(w, "base");
        rp_jw_pose(w, base);
    }
    rp_jw_object_end(w);
}

void rp_jw_robot(rp_jw *w, const rp_object *o)
{
    const rp_model *m = rp_object_model(o);
    rp_transform base = rp_object_pose(o);
    rp_jw_robot_state(w, rp_model_name(m), m, rp_object_joints(o), &base);
}

void rp_jw_shape(rp_jw *w, const rp_shape *s)
{
    /* Longest: {"box":{"center":V,"half_extents":V,"rotation":{"w":D,"x":D,
     * "y":D,"z":D}}} with V = [D,D,D]: 68 bytes besides its numbers. */
    if (!room(w, 1 + 68 + 2 * (3 * JW_DOUBLE_MAX + 4) + 4 * JW_DOUBLE_MAX))
        return;
    value_prefix(w);
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        put_raw(w, "{\"sphere\":{\"center\":", 20);
        put_vec3(w, s->sphere.center);
        put_raw(w, ",\"radius\":", 10);
        put_double(w, s->sphere.radius);
        break;
    case RP_SHAPE_CAPSULE:
        put_raw(w, "{\"capsule\":{\"a\":", 16);
        put_vec3(w, s->capsule.a);
        put_raw(w, ",\"b\":", 5);
        put_vec3(w, s->capsule.b);
        put_raw(w, ",\"radius\":", 10);
        put_double(w, s->capsule.radius);
        break;
    case RP_SHAPE_BOX:
        /* The rotation is always written, identity or not: readers then
         * need no default. */
        put_raw(w, "{\"box\":{\"center\":", 17);
        put_vec3(w, s->box.center);
        put_raw(w, ",\"half_extents\":", 16);
        put_vec3(w, s->box.half_extents);
        put_raw(w, ",\"rotation\":{\"w\":", 17);
        put_double(w, s->box.rotation.w);
        put_raw(w, ",\"x\":", 5);
        put_double(w, s->box.rotation.x);
        put_raw(w, ",\"y\":", 5);
        put_double(w, s->box.rotation.y);
        put_raw(w, ",\"z\":", 5);
        put_double(w, s->box.rotation.z);
        put_raw(w, "}", 1);
        break;
    case RP_SHAPE_HALFSPACE:
        put_raw(w, "{\"halfspace\":{\"normal\":", 23);
        put_vec3(w, s->halfspace.normal);
        put_raw(w, ",\"offset\":", 10);
        put_double(w, s->halfspace.offset);
        break;
    }
    put_raw(w, "}}", 2);
}

/* ---- cJSON values ---------------------------------------------------- */

/* Writes a parsed value back out (request ids, echoed parameters).  Depth is
 * bounded by the pre-scan's limit on requests and by RP_JW_MAX_DEPTH here. */
void rp_jw_cjson(rp_jw *w, const cJSON *j)
{
    if (!j) {
        rp_jw_null(w);
        return;
    }
    switch (j->type & 0xFF) {
    case cJSON_False:
        rp_jw_bool(w, false);
        break;
    case cJSON_True:
        rp_jw_bool(w, true);
        break;
    case cJSON_Number:
        rp_jw_double(w, j->valuedouble);
        break;
    case cJSON_String:
        rp_jw_string(w, j->valuestring ? j->valuestring : "");
        break;
    case cJSON_Raw:
        if (j->valuestring)
            rp_jw_value_raw(w, j->valuestring, strlen(j->valuestring));
        else
            rp_jw_null(w);
        break;
    case cJSON_Array:
        rp_jw_array_begin(w);
        for (const cJSON *c = j->child; c && !rp_jw_failed(w); c = c->next)
            rp_jw_cjson(w, c);
        rp_jw_array_end(w);
        break;
    case cJSON_Object:
        rp_jw_object_begin(w);
        for (const cJSON *c = j->child; c && !rp_jw_failed(w); c = c->next) {
            rp_jw_key(w, c->string ? c->string : "");
            rp_jw_cjson(w, c);
        }
        rp_jw_object_end(w);
        break;
    default:
        rp_jw_null(w);
        break;
    }
}

void rp_jw_joint_def(rp_jw *w, const rp_joint_def *j)
{
    static const char *const types[] = {"fixed", "revolute", "continuous", "prismatic"};
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "name");
    rp_jw_string(w, j->name);
    RP_JW_KEY(w, "type");
    rp_jw_string(w, types[j->type]);
    RP_JW_KEY(w, "parent");
    rp_jw_string(w, j->parent);
    RP_JW_KEY(w, "child");
    rp_jw_string(w, j->child);
    RP_JW_KEY(w, "origin");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "xyz");
    rp_jw_vec3(w, j->xyz);
    RP_JW_KEY(w, "rpy");
    rp_jw_vec3(w, j->rpy);
    rp_jw_object_end(w);
    if (j->type != RP_JOINT_FIXED) {
        RP_JW_KEY(w, "axis");
        rp_jw_vec3(w, j->axis);
    }
    if (j->has_limits) {
        RP_JW_KEY(w, "limits");
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "lower");
        rp_jw_double(w, j->lower);
        RP_JW_KEY(w, "upper");
        rp_jw_double(w, j->upper);
        rp_jw_object_end(w);
    }
    if (j->mimic) {
        RP_JW_KEY(w, "mimic");
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "joint");
        rp_jw_string(w, j->mimic);
        RP_JW_KEY(w, "multiplier");
        rp_jw_double(w, j->multiplier);
        RP_JW_KEY(w, "offset");
        rp_jw_double(w, j->offset);
        rp_jw_object_end(w);
    }
    rp_jw_object_end(w);
}

/* Default positions as an object: a name given twice keeps its last
 * value (an object must not repeat a key). */
static void write_defaults(rp_jw *w, const rp_model_def *d)
{
    rp_jw_object_begin(w);
    for (size_t i = 0; i < d->n_defaults; i++) {
        bool later = false;
        for (size_t k = i + 1; k < d->n_defaults && !later; k++)
            later = strcmp(d->default_names[k], d->default_names[i]) == 0;
        if (later)
            continue;
        rp_jw_key(w, d->default_names[i]);
        rp_jw_double(w, d->default_values[i]);
    }
    rp_jw_object_end(w);
}

static void write_pairs(rp_jw *w, const char *const *names, size_t n)
{
    rp_jw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        rp_jw_array_begin(w);
        rp_jw_string(w, names[2 * i]);
        rp_jw_string(w, names[2 * i + 1]);
        rp_jw_array_end(w);
    }
    rp_jw_array_end(w);
}

void rp_jw_link(rp_jw *w, const rp_link *l, const char *link)
{
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "id");
    rp_jw_string(w, l->id);
    if (link) {
        RP_JW_KEY(w, "link");
        rp_jw_string(w, link);
    } else {
        RP_JW_KEY(w, "frame");
        if (l->frame < 0)
            rp_jw_null(w);
        else
            rp_jw_int(w, l->frame);
    }
    RP_JW_KEY(w, "shape");
    rp_jw_shape(w, &l->shape);
    rp_jw_object_end(w);
}

void rp_jw_mesh_covers(rp_jw *w, const rp_model_def *d)
{
    if (d->n_mesh_covers) {
        RP_JW_KEY(w, "mesh_covers");
        rp_jw_array_begin(w);
        for (size_t i = 0; i < d->n_mesh_covers; i++) {
            const rp_mesh_cover *c = &d->mesh_covers[i];
            rp_jw_object_begin(w);
            RP_JW_KEY(w, "link");
            rp_jw_string(w, c->link);
            RP_JW_KEY(w, "spheres");
            rp_jw_uint(w, c->spheres);
            RP_JW_KEY(w, "triangles");
            rp_jw_uint(w, c->triangles);
            RP_JW_KEY(w, "overshoot");
            rp_jw_double(w, c->overshoot);
            rp_jw_object_end(w);
        }
        rp_jw_array_end(w);
    }
}

void rp_jw_model_srdf(rp_jw *w, const rp_model_def *d)
{
    if (d->n_groups) {
        RP_JW_KEY(w, "groups");
        rp_jw_object_begin(w);
        for (size_t g = 0; g < d->n_groups; g++) {
            rp_jw_key(w, d->groups[g].name);
            rp_jw_array_begin(w);
            for (size_t i = 0; i < d->groups[g].n_joints; i++)
                rp_jw_string(w, d->groups[g].joints[i]);
            rp_jw_array_end(w);
        }
        rp_jw_object_end(w);
    }
    if (d->n_states) {
        RP_JW_KEY(w, "states");
        rp_jw_array_begin(w);
        for (size_t i = 0; i < d->n_states; i++) {
            const rp_state_def *t = &d->states[i];
            rp_jw_object_begin(w);
            RP_JW_KEY(w, "name");
            rp_jw_string(w, t->name);
            RP_JW_KEY(w, "group");
            rp_jw_string(w, t->group);
            RP_JW_KEY(w, "joints");
            rp_jw_object_begin(w);
            for (size_t k = 0; k < t->n_joints; k++) {
                rp_jw_key(w, t->joints[k]);
                rp_jw_double(w, t->values[k]);
            }
            rp_jw_object_end(w);
            rp_jw_object_end(w);
        }
        rp_jw_array_end(w);
    }
    if (d->n_end_effectors) {
        RP_JW_KEY(w, "end_effectors");
        rp_jw_array_begin(w);
        for (size_t i = 0; i < d->n_end_effectors; i++) {
            const rp_end_effector_def *e = &d->end_effectors[i];
            rp_jw_object_begin(w);
            RP_JW_KEY(w, "name");
            rp_jw_string(w, e->name);
            RP_JW_KEY(w, "parent_link");
            rp_jw_string(w, e->parent_link);
            RP_JW_KEY(w, "group");
            rp_jw_string(w, e->group);
            if (e->parent_group) {
                RP_JW_KEY(w, "parent_group");
                rp_jw_string(w, e->parent_group);
            }
            rp_jw_object_end(w);
        }
        rp_jw_array_end(w);
    }
    if (d->n_passive) {
        RP_JW_KEY(w, "passive_joints");
        rp_jw_array_begin(w);
        for (size_t i = 0; i < d->n_passive; i++)
            rp_jw_string(w, d->passive_joints[i]);
        rp_jw_array_end(w);
    }
}

void rp_jw_model_def(rp_jw *w, const char *name, const rp_model_def *d)
{
    bool kin = d->shape_links != NULL || d->n_joints > 0;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "model");
    rp_jw_string(w, name);
    if (kin && d->link_names) {
        RP_JW_KEY(w, "tree_links");
        rp_jw_array_begin(w);
        for (size_t i = 0; i < d->n_link_names; i++)
            rp_jw_string(w, d->link_names[i]);
        rp_jw_array_end(w);
    }
    RP_JW_KEY(w, "links");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < d->n_links; i++)
        rp_jw_link(w, &d->links[i], kin ? d->shape_links[i] : NULL);
    rp_jw_array_end(w);
    if (kin) {
        RP_JW_KEY(w, "joints");
        rp_jw_array_begin(w);
        for (size_t i = 0; i < d->n_joints; i++)
            rp_jw_joint_def(w, &d->joints[i]);
        rp_jw_array_end(w);
        RP_JW_KEY(w, "default_positions");
        write_defaults(w, d);
    }
    RP_JW_KEY(w, "allowed_pairs");
    write_pairs(w, d->allowed_pairs, d->n_allowed);
    RP_JW_KEY(w, "allowed_scene");
    write_pairs(w, d->allowed_scene, d->n_allowed_scene);
    RP_JW_KEY(w, "safety_margin");
    rp_jw_double(w, d->safety_margin);
    RP_JW_KEY(w, "self_collision");
    rp_jw_bool(w, d->self_collision);
    rp_jw_mesh_covers(w, d);
    rp_jw_model_srdf(w, d);
    rp_jw_object_end(w);
}

void rp_jw_base64(rp_jw *w, const unsigned char *bytes, size_t n)
{
    size_t len = rp_base64_encoded_len(n);
    if (!room(w, len + 3))
        return;
    value_prefix(w);
    w->buf[w->len++] = '"';
    rp_base64_encode(bytes, n, w->buf + w->len);
    w->len += len;
    w->buf[w->len++] = '"';
    w->buf[w->len] = '\0';
}

void rp_jw_cloud(rp_jw *w, const rp_cloud *c)
{
    size_t n = rp_cloud_size(c);
    const float *xyz = rp_cloud_centres(c);
    /* Little-endian float32 triples, whatever the host's order. */
    unsigned char *bytes = malloc(n ? 12 * n : 1);
    if (!bytes) {
        w->oom = true;
        return;
    }
    for (size_t i = 0; i < 3 * n; i++) {
        uint32_t u;
        memcpy(&u, &xyz[i], sizeof u);
        for (int b = 0; b < 4; b++)
            bytes[4 * i + (size_t)b] = (unsigned char)(u >> (8 * b));
    }
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "radius");
    rp_jw_double(w, rp_cloud_radius(c));
    RP_JW_KEY(w, "count");
    rp_jw_uint(w, n);
    RP_JW_KEY(w, "points_f32");
    rp_jw_base64(w, bytes, 12 * n);
    rp_jw_object_end(w);
    free(bytes);
}

void rp_jw_scene_id(rp_jw *w, const rp_scene *sc, size_t index)
{
    if (index < rp_scene_shape_count(sc)) {
        rp_jw_string(w, rp_scene_id_at(sc, index));
        return;
    }
    char id[RP_NAME_MAX + 32]; /* (a cloud's name is at most RP_NAME_MAX) */
    size_t len = rp_scene_id_format(sc, index, id, sizeof id);
    rp_jw_string_n(w, id, len < sizeof id ? len : sizeof id - 1);
}
