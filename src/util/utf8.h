/* SPDX-License-Identifier: MIT */
/*
 * Well-formed UTF-8 (Unicode table 3-7: no overlong forms, no surrogates,
 * nothing past U+10FFFF), for everyone who checks it: the request pre-scan,
 * the URDF reader's quoting, repose-cli's file parameters and the client's
 * string parameters.  Header-only, so that the client library and the CLI
 * share it without linking anything.
 *
 * Library-internal; nothing here is public.
 */
#ifndef REPOSE_UTIL_UTF8_H
#define REPOSE_UTIL_UTF8_H

#include <stddef.h>
#include <string.h>

/* Length of the well-formed sequence starting at p[0], or 0 when it is
 * invalid or cut off by the end of the buffer (n >= 1 bytes left).  Stops
 * reading at the first byte that fails, so a NUL-terminated string may be
 * passed with n = 4. */
static inline size_t rp_utf8_seq_(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    if (c < 0xC2) /* continuation byte, or the overlong C0/C1 leads */
        return 0;
    if (c < 0xE0)
        return n >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        if (n < 3)
            return 0;
        /* E0 needs A0..BF (no overlongs), ED needs 80..9F (no surrogates). */
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c < 0xF5) {
        if (n < 4)
            return 0;
        /* F0 needs 90..BF (no overlongs), F4 needs 80..8F (<= U+10FFFF). */
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* Offset of the first byte of s[0..n) that does not start a well-formed
 * sequence, or n when all of it is UTF-8. */
static inline size_t rp_utf8_invalid_at_(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t len = rp_utf8_seq_(s + i, n - i);
        if (len == 0)
            return i;
        i += len;
    }
    return n;
}

/* Length of s[0..n) without a UTF-8 sequence that a cut at n split: cutting
 * a valid UTF-8 string there then leaves valid UTF-8 (a truncated path or
 * reason ends up in a JSON reply). */
static inline size_t rp_utf8_trim(const char *s, size_t n)
{
    size_t i = n, back = 0;
    while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return back ? 0 : n;
    unsigned char lead = (unsigned char)s[i - 1];
    if (lead < 0x80)
        return n;
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return back + 1 == want ? n : i - 1;
}

/* Copies src into dst (cap bytes, cap >= 1) and NUL-terminates, cut at a
 * character boundary when it does not fit.  dst and src may overlap. */
static inline void rp_utf8_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = rp_utf8_trim(src, cap - 1);
    memmove(dst, src, n);
    dst[n] = '\0';
}

#endif /* REPOSE_UTIL_UTF8_H */
