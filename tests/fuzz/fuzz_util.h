/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the libFuzzer targets in this directory: a failed
 * invariant aborts with a message (libFuzzer then saves the input as a
 * crash), and a reference UTF-8 validator written independently of the
 * pre-scan's, so that the targets do not check the code with itself.
 */
#ifndef REPOSE_FUZZ_UTIL_H
#define REPOSE_FUZZ_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* libFuzzer's entry point; declared here for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with the failed condition and a printf-style explanation. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n  ", __FILE__, __LINE__, #cond);         \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Length of the well-formed UTF-8 sequence at s[0..n) (n >= 1), or 0 when
 * it is not one (Unicode table 3-7: no overlongs, no surrogates, nothing
 * above U+10FFFF, no truncated sequences).  Decodes the code point and
 * checks its range, rather than the pre-scan's lead-byte table, so the two
 * implementations can disagree if one of them is wrong. */
static inline size_t fuzz_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        len = 2, cp = c & 0x1Fu, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        len = 3, cp = c & 0x0Fu, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        len = 4, cp = c & 0x07u, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* Offset of the first byte of s[0..n) that does not start a well-formed
 * sequence, or n when all of it is valid UTF-8. */
static inline size_t fuzz_utf8_invalid_at(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t len = fuzz_utf8_seq(s + i, n - i);
        if (len == 0)
            return i;
        i += len;
    }
    return n;
}

static inline bool fuzz_utf8_valid(const char *s, size_t n)
{
    return fuzz_utf8_invalid_at((const unsigned char *)s, n) == n;
}

/* A NUL-terminated string within cap bytes that is valid UTF-8. */
static inline bool fuzz_cstr_ok(const char *s, size_t cap)
{
    const char *nul = memchr(s, '\0', cap);
    return nul && fuzz_utf8_valid(s, (size_t)(nul - s));
}

/* Doubles compared bit for bit (so -0.0 != 0.0 and NaN == NaN). */
static inline bool fuzz_same_bits(double a, double b)
{
    uint64_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    return ua == ub;
}

/* Exact structural equality of two cJSON trees: same types, numbers equal
 * bit for bit, strings equal, members in the same order.  NULL equals only
 * NULL. */
static inline bool fuzz_same_json(const cJSON *a, const cJSON *b)
{
    if (!a || !b)
        return a == b;
    if ((a->type & 0xFF) != (b->type & 0xFF))
        return false;
    if (cJSON_IsNumber(a))
        return fuzz_same_bits(a->valuedouble, b->valuedouble);
    if (cJSON_IsString(a))
        return strcmp(a->valuestring, b->valuestring) == 0;
    const cJSON *x = a->child, *y = b->child;
    for (; x && y; x = x->next, y = y->next) {
        if (cJSON_IsObject(a) && strcmp(x->string, y->string) != 0)
            return false;
        if (!fuzz_same_json(x, y))
            return false;
    }
    return !x && !y;
}

#endif /* REPOSE_FUZZ_UTIL_H */
