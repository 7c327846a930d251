/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the request-line pre-scan (rp_json_prescan, src/codec/prescan.c).
 *
 * The input is one request line.  The pre-scan's word-at-a-time fast path
 * and table-driven full scan are compared with a byte-at-a-time reference
 * written from the specification in prescan.c and codec.h: same result,
 * same offset (numbers outside strings held to the strict grammar, a
 * \u0000 escape reported only when nothing else is wrong).  The copy with
 * \u0000 escapes marked is compared with a reference too.  Then, where cJSON parses the line, the result must agree
 * with the tree cJSON built: OK means the nesting fits max_depth and every
 * string cJSON decoded (escapes included) is valid UTF-8, and TOO_DEEP
 * means it does not fit.  Each line is scanned with the protocol's depth
 * (64) and a small one, so both outcomes are common.
 */
#include "fuzz_util.h"

#include "codec/codec.h"

/* Letters, digits and "+-.": the bytes of a token outside strings. */
static bool word_byte(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '+' ||
           c == '-' || c == '.';
}

static size_t digits(const unsigned char *t, size_t n, size_t i)
{
    while (i < n && t[i] >= '0' && t[i] <= '9')
        i++;
    return i;
}

/* Whether t[0..n) is, all of it, a number by RFC 8259:
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool strict_number(const unsigned char *t, size_t n)
{
    size_t i = t[0] == '-' ? 1 : 0, j;
    if (i < n && t[i] == '0')
        j = i + 1;
    else if ((j = digits(t, n, i)) == i)
        return false;
    i = j;
    if (i < n && t[i] == '.') {
        if ((j = digits(t, n, i + 1)) == i + 1)
            return false;
        i = j;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        if ((j = digits(t, n, i)) == i)
            return false;
        i = j;
    }
    return i == n;
}

/* The reference: one byte at a time, no tables, no fast path. */
static rp_scan_result reference_scan(const unsigned char *p, size_t len, int max_depth,
                                     size_t *offset)
{
    long depth = 0;
    bool in_string = false;
    size_t first_nul = SIZE_MAX;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        if (c >= 0x80) {
            size_t n = fuzz_utf8_seq(p + i, len - i);
            if (n == 0) {
                *offset = i;
                return RP_SCAN_BAD_UTF8;
            }
            i += n - 1; /* the loop adds the last 1 */
            continue;
        }
        if (in_string) {
            if (c < 0x20) {
                *offset = i;
                return RP_SCAN_CONTROL;
            }
            if (c == '"') {
                in_string = false;
            } else if (c == '\\') {
                if (len - i >= 6 && memcmp(p + i + 1, "u0000", 5) == 0 && first_nul == SIZE_MAX)
                    first_nul = i;
                /* The escaped byte is skipped if it is plain ASCII. */
                if (i + 1 < len && p[i + 1] >= 0x20 && p[i + 1] < 0x80)
                    i++;
            }
            continue;
        }
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            *offset = i;
            return RP_SCAN_CONTROL;
        }
        if (word_byte(c)) {
            /* A whole token: one that starts like a number must be one. */
            size_t end = i;
            while (end < len && word_byte(p[end]))
                end++;
            if (strchr("0123456789+-.", c) && !strict_number(p + i, end - i)) {
                *offset = i;
                return RP_SCAN_BAD_NUMBER;
            }
            i = end - 1; /* the loop adds the last 1 */
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                *offset = i;
                return RP_SCAN_TOO_DEEP;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    if (first_nul != SIZE_MAX) {
        *offset = first_nul;
        return RP_SCAN_NUL_ESCAPE;
    }
    return RP_SCAN_OK;
}

/* The reference for rp_json_mark_nul_escapes: the same string and escape
 * tracking as reference_scan, writing one RP_JSON_NUL_MARK per escape. */
static size_t reference_mark(const unsigned char *p, size_t len, unsigned char *dst)
{
    size_t n = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        if (in_string && c == '\\') {
            if (len - i >= 6 && memcmp(p + i + 1, "u0000", 5) == 0) {
                dst[n++] = RP_JSON_NUL_MARK;
                i += 5;
                continue;
            }
            dst[n++] = c;
            if (i + 1 < len && p[i + 1] >= 0x20 && p[i + 1] < 0x80)
                dst[n++] = p[++i];
            continue;
        }
        if (c == '"')
            in_string = !in_string;
        dst[n++] = c;
    }
    return n;
}

/* Nesting depth of a cJSON tree (a scalar is 0, [] is 1); *utf8_ok is
 * cleared when a string or member name is not valid UTF-8. */
static int tree_depth(const cJSON *j, bool *utf8_ok)
{
    if (j->string && !fuzz_utf8_valid(j->string, strlen(j->string)))
        *utf8_ok = false;
    if (cJSON_IsString(j) && j->valuestring &&
        !fuzz_utf8_valid(j->valuestring, strlen(j->valuestring)))
        *utf8_ok = false;
    if (!cJSON_IsArray(j) && !cJSON_IsObject(j))
        return 0;
    int deepest = 0;
    for (const cJSON *c = j->child; c; c = c->next) {
        int d = tree_depth(c, utf8_ok);
        if (d > deepest)
            deepest = d;
    }
    return deepest + 1;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *line = (const char *)data;
    static const int depths[] = {64, 2};
    rp_scan_result got[2];
    for (int k = 0; k < 2; k++) {
        size_t off = SIZE_MAX, ref_off = SIZE_MAX;
        got[k] = rp_json_prescan(line, size, depths[k], &off);
        rp_scan_result want = reference_scan(data, size, depths[k], &ref_off);
        FUZZ_CHECK(got[k] == want, "depth %d: result %d, reference %d (at %zu)", depths[k],
                   (int)got[k], (int)want, ref_off);
        FUZZ_CHECK(got[k] == RP_SCAN_OK || off == ref_off,
                   "depth %d: result %d at byte %zu, reference at %zu", depths[k], (int)got[k], off,
                   ref_off);
        if (got[k] == RP_SCAN_OK)
            FUZZ_CHECK(fuzz_utf8_valid(line, size), "OK for invalid UTF-8 at byte %zu",
                       fuzz_utf8_invalid_at(data, size));
        if (got[k] == RP_SCAN_BAD_UTF8)
            FUZZ_CHECK(off < size && fuzz_utf8_seq(data + off, size - off) == 0,
                       "BAD_UTF8 at byte %zu, where a valid sequence starts", off);
    }

    /* The marked copy, for any line. */
    unsigned char *mine = malloc(size + 1), *ref = malloc(size + 1);
    FUZZ_CHECK(mine && ref, "out of memory");
    size_t n_mine = rp_json_mark_nul_escapes(line, size, (char *)mine);
    size_t n_ref = reference_mark(data, size, ref);
    FUZZ_CHECK(n_mine == n_ref && memcmp(mine, ref, n_ref) == 0,
               "marked copy differs from the reference (%zu and %zu bytes)", n_mine, n_ref);
    FUZZ_CHECK(got[0] != RP_SCAN_NUL_ESCAPE || n_mine < size, "NUL_ESCAPE, but nothing marked");
    free(mine);
    free(ref);

    /* Cross-check with cJSON where it accepts the whole line. */
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, size, &end, false);
    if (!root)
        return 0;
    if (blank(end, size - (size_t)(end - line))) {
        bool utf8_ok = true;
        int depth = tree_depth(root, &utf8_ok);
        for (int k = 0; k < 2; k++) {
            if (got[k] == RP_SCAN_OK) {
                FUZZ_CHECK(depth <= depths[k], "OK at max_depth %d for a tree %d deep", depths[k],
                           depth);
                FUZZ_CHECK(utf8_ok, "OK, but cJSON decoded a string that is not UTF-8");
            }
            if (got[k] == RP_SCAN_TOO_DEEP)
                FUZZ_CHECK(depth > depths[k], "TOO_DEEP at max_depth %d for a tree %d deep",
                           depths[k], depth);
        }
    }
    cJSON_Delete(root);
    return 0;
}
