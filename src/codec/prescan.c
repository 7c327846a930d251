/* SPDX-License-Identifier: MIT */
/*
 * The pre-scan: one pass over a request line before cJSON sees it.
 *
 * cJSON recurses once per nesting level and accepts any bytes inside
 * strings, so the server runs this first: it bounds the nesting depth (a
 * line of 10 MB of '[' must not reach the parser) and rejects invalid UTF-8
 * (overlong forms, surrogates, code points above U+10FFFF, truncated or
 * stray bytes), so everything echoed back in a reply is valid UTF-8.
 * Brackets inside strings do not count; string state follows '"' and
 * backslash escapes.  It also holds every number outside strings to the
 * strict grammar of RFC 8259 (proto/PROTOCOL.md: numbers are strict JSON),
 * since cJSON reads numbers with strtod and so takes 01, 1. and -01.50.
 * Anything else about JSON syntax is cJSON's job.
 */
#include "codec/codec.h"
#include "util/utf8.h"

#include <stdint.h>
#include <string.h>

/* Bytes below 0x80 the scanner must look at; the rest (letters, most
 * punctuation, spaces, and digits inside strings) are skipped in tight
 * loops.  Bytes >= 0x80 always go to UTF-8 validation. */
enum { PLAIN = 0, QUOTE, OPEN, CLOSE, BACKSLASH, CONTROL, NUMBER };
/* Control bytes: RFC 8259 allows only space, tab, CR and LF between tokens
 * (cJSON would skip any byte <= 0x20) and none unescaped inside strings. */
#define CONTROLS_EXCEPT_WS                                                                         \
    [0x00] = CONTROL, [0x01] = CONTROL, [0x02] = CONTROL, [0x03] = CONTROL, [0x04] = CONTROL,      \
    [0x05] = CONTROL, [0x06] = CONTROL, [0x07] = CONTROL, [0x08] = CONTROL, [0x0B] = CONTROL,      \
    [0x0C] = CONTROL, [0x0E] = CONTROL, [0x0F] = CONTROL, [0x10] = CONTROL, [0x11] = CONTROL,      \
    [0x12] = CONTROL, [0x13] = CONTROL, [0x14] = CONTROL, [0x15] = CONTROL, [0x16] = CONTROL,      \
    [0x17] = CONTROL, [0x18] = CONTROL, [0x19] = CONTROL, [0x1A] = CONTROL, [0x1B] = CONTROL,      \
    [0x1C] = CONTROL, [0x1D] = CONTROL, [0x1E] = CONTROL, [0x1F] = CONTROL, [0x7F] = PLAIN
/* The bytes that can start a number token: every byte a strict number
 * starts with, and the '+' and '.' that lenient writers start one with. */
#define NUMBER_STARTS                                                                              \
    ['0'] = NUMBER, ['1'] = NUMBER, ['2'] = NUMBER, ['3'] = NUMBER, ['4'] = NUMBER,                \
    ['5'] = NUMBER, ['6'] = NUMBER, ['7'] = NUMBER, ['8'] = NUMBER, ['9'] = NUMBER,                \
    ['-'] = NUMBER, ['+'] = NUMBER, ['.'] = NUMBER
static const unsigned char outside_class[128] = {
    CONTROLS_EXCEPT_WS, NUMBER_STARTS, ['"'] = QUOTE, ['['] = OPEN,
    ['{'] = OPEN,       [']'] = CLOSE, ['}'] = CLOSE,
};
static const unsigned char inside_class[128] = {
    CONTROLS_EXCEPT_WS, [0x09] = CONTROL, [0x0A] = CONTROL,
    [0x0D] = CONTROL,   ['"'] = QUOTE,    ['\\'] = BACKSLASH,
};

/* Eight bytes at once: true when none is '"', '\\', a control byte (< 0x20)
 * or >= 0x80, i.e. the whole word is plain string content.
 * (x - n*0x01..) & ~x & 0x80.. is non-zero when some byte of x is below n
 * (for bytes < 0x80), which with n = 1 finds zero bytes after the XORs. */
static inline bool plain8(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t zero = ((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x);
    return ((zero | x) & high) == 0;
}

static rp_scan_result stop(rp_scan_result r, size_t at, size_t *offset)
{
    if (offset)
        *offset = at;
    return r;
}

/* Bytes that make up a token outside strings: a literal (true), a number
 * (-1.5e+3) or something that merely looks like one (0x10, NaN). */
static bool token_byte(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '-' ||
           c == '+' || c == '.';
}

/* Checks the number token at p[i], a NUMBER byte outside strings: returns
 * the index after it, or 0 when it is not a strict JSON number.  A NUMBER
 * byte right after another token byte is inside a word that does not start
 * like a number (true1, NaN-1): cJSON refuses such words on its own, so
 * they are skipped here a byte at a time. */
static size_t number_end(const unsigned char *p, size_t i, size_t len)
{
    if (i > 0 && token_byte(p[i - 1]))
        return i + 1;
    size_t n = rp_json_number_span((const char *)p + i, len - i);
    /* A valid number followed by more token bytes (01, 1.e5, 0x10, 1e)
     * is one bad token, not a number and something else. */
    if (n == 0 || (i + n < len && token_byte(p[i + n])))
        return 0;
    return i + n;
}

/* The number check for a line fast_ok passed: printable ASCII without a
 * backslash, so a string ends at the next quote and nothing else can be
 * wrong with the line. */
static rp_scan_result plain_numbers(const unsigned char *p, size_t len, size_t *offset)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = p[i];
        if (c == '"') {
            const unsigned char *close = memchr(p + i + 1, '"', len - i - 1);
            if (!close)
                return RP_SCAN_OK;
            i = (size_t)(close - p) + 1;
        } else if (outside_class[c] == NUMBER) {
            size_t end = number_end(p, i, len);
            if (!end)
                return stop(RP_SCAN_BAD_NUMBER, i, offset);
            i = end;
        } else {
            i++;
        }
    }
    return RP_SCAN_OK;
}

static rp_scan_result full_scan(const char *buf, size_t len, int max_depth, size_t *offset);

/* Fast path for the common request: printable ASCII only (0x20..0x7E), no
 * backslash, and at most max_depth opening brackets in the whole line (so
 * no nesting can exceed it).  Such a line passes every check of the full
 * scan but the number check, which plain_numbers then does alone.  Eight
 * bytes per step; false sends the line to the full scan, which finds and
 * locates any problem. */
static bool fast_ok(const unsigned char *p, size_t len, int max_depth)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    size_t i = 0, opens = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        /* Any byte < 0x20, >= 0x7F (x + 1 carries into the high bit), or a
         * backslash? */
        uint64_t bs = x ^ (ones * '\\');
        uint64_t bad = ((x - ones * 0x20) | (x + ones) | (bs - ones)) & ~x & high;
        bad |= x & high;
        if (bad)
            return false;
        /* Count '[' and '{': they differ only in bit 0x20 (0x5B, 0x7B). */
        uint64_t y = (x | (ones * 0x20)) ^ (ones * '{');
        uint64_t hit = ((y - ones) & ~y) & high;
        /* Sum the 0/1 flags: one per byte after the shift, added up into
         * the top byte by the multiply (at most 8, no overflow). */
        opens += (size_t)(((hit >> 7) * ones) >> 56);
    }
    for (; i < len; i++) {
        unsigned char c = p[i];
        if (c < 0x20 || c >= 0x7F || c == '\\')
            return false;
        opens += (c | 0x20) == '{';
    }
    return opens <= (size_t)max_depth;
}

rp_scan_result rp_json_prescan(const char *buf, size_t len, int max_depth, size_t *offset)
{
    if (fast_ok((const unsigned char *)buf, len, max_depth))
        return plain_numbers((const unsigned char *)buf, len, offset);
    return full_scan(buf, len, max_depth, offset);
}

/* Whether p[i] == '\\' inside a string starts a \u0000 escape. */
static bool nul_escape_at(const unsigned char *p, size_t i, size_t len)
{
    return len - i >= RP_JSON_NUL_ESCAPE_LEN &&
           memcmp(p + i + 1, "u0000", RP_JSON_NUL_ESCAPE_LEN - 1) == 0;
}

/* The full scan: every check, with the offset of the first problem. */
static rp_scan_result full_scan(const char *buf, size_t len, int max_depth, size_t *offset)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0, first_nul = SIZE_MAX;
    long depth = 0;
    bool in_string = false;
    for (;;) {
        unsigned char c = 0;
        if (in_string) {
            while (i + 8 <= len && plain8(p + i))
                i += 8;
            while (i < len && (c = p[i]) < 0x80 && inside_class[c] == PLAIN)
                i++;
        } else {
            while (i < len && (c = p[i]) < 0x80 && outside_class[c] == PLAIN)
                i++;
        }
        if (i >= len)
            return first_nul == SIZE_MAX ? RP_SCAN_OK : stop(RP_SCAN_NUL_ESCAPE, first_nul, offset);
        if (c >= 0x80) {
            size_t n = rp_utf8_seq_(p + i, len - i);
            if (n == 0)
                return stop(RP_SCAN_BAD_UTF8, i, offset);
            i += n;
            continue;
        }
        switch (in_string ? inside_class[c] : outside_class[c]) {
        case QUOTE:
            in_string = !in_string;
            break;
        case BACKSLASH:
            /* cJSON ends strings at a decoded NUL, so "a\u0000b" would
             * silently become "a": noted, and refused once the rest of the
             * line is known to be fine (the server then answers the
             * requests that hold it, with their ids). */
            if (first_nul == SIZE_MAX && nul_escape_at(p, i, len))
                first_nul = i;
            /* Skip the escaped byte unless it starts a UTF-8 sequence or is
             * a control byte, which still have to be checked. */
            if (i + 1 < len && p[i + 1] >= 0x20 && p[i + 1] < 0x80)
                i++;
            break;
        case CONTROL:
            return stop(RP_SCAN_CONTROL, i, offset);
        case OPEN:
            if (++depth > max_depth)
                return stop(RP_SCAN_TOO_DEEP, i, offset);
            break;
        case CLOSE:
            /* Unbalanced closers are cJSON's to report. */
            if (depth > 0)
                depth--;
            break;
        case NUMBER: {
            size_t end = number_end(p, i, len);
            if (!end)
                return stop(RP_SCAN_BAD_NUMBER, i, offset);
            i = end;
            continue;
        }
        default:
            break;
        }
        i++;
    }
}

size_t rp_json_mark_nul_escapes(const char *buf, size_t len, char *dst)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t n = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        if (in_string && p[i] == '\\') {
            if (nul_escape_at(p, i, len)) {
                dst[n++] = (char)RP_JSON_NUL_MARK;
                i += RP_JSON_NUL_ESCAPE_LEN - 1;
                continue;
            }
            /* As in the full scan: an escaped printable ASCII byte is
             * taken with its backslash, so \\u0000 is no NUL and \" ends
             * no string. */
            dst[n++] = buf[i];
            if (i + 1 < len && p[i + 1] >= 0x20 && p[i + 1] < 0x80)
                dst[n++] = buf[++i];
            continue;
        }
        if (p[i] == '"')
            in_string = !in_string;
        dst[n++] = buf[i];
    }
    return n;
}

/* ---- cJSON allocation failures (see codec.h) ------------------------------ */

/* Per thread: the parse it describes ran on this thread (see codec.h). */
static _Thread_local bool json_oom;

void rp_json_note_oom(void)
{
    json_oom = true;
}

bool rp_json_take_oom(void)
{
    bool was = json_oom;
    json_oom = false;
    return was;
}
