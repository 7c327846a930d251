/*
 * The pre-scan: one pass over a request line before cJSON sees it.
 *
 * cJSON recurses once per nesting level and accepts any bytes inside
 * strings, so the server runs this first: it bounds the nesting depth (a
 * line of 10 MB of '[' must not reach the parser) and rejects invalid UTF-8
 * (overlong forms, surrogates, code points above U+10FFFF, truncated or
 * stray bytes), so everything echoed back in a reply is valid UTF-8.
 * Brackets inside strings do not count; string state follows '"' and
 * backslash escapes.  Anything else about JSON syntax is cJSON's job.
 */
#include "codec/codec.h"
#include "util/utf8.h"

#include <stdint.h>
#include <string.h>

/* Bytes below 0x80 the scanner must look at; the rest (digits, letters,
 * punctuation, spaces) are skipped in tight loops.  Bytes >= 0x80 always go
 * to UTF-8 validation. */
enum { PLAIN = 0, QUOTE, OPEN, CLOSE, BACKSLASH, CONTROL };
/* Control bytes: RFC 8259 allows only space, tab, CR and LF between tokens
 * (cJSON would skip any byte <= 0x20) and none unescaped inside strings. */
#define CONTROLS_EXCEPT_WS                                                              \
    [0x00] = CONTROL, [0x01] = CONTROL, [0x02] = CONTROL, [0x03] = CONTROL,             \
    [0x04] = CONTROL, [0x05] = CONTROL, [0x06] = CONTROL, [0x07] = CONTROL,             \
    [0x08] = CONTROL, [0x0B] = CONTROL, [0x0C] = CONTROL, [0x0E] = CONTROL,             \
    [0x0F] = CONTROL, [0x10] = CONTROL, [0x11] = CONTROL, [0x12] = CONTROL,             \
    [0x13] = CONTROL, [0x14] = CONTROL, [0x15] = CONTROL, [0x16] = CONTROL,             \
    [0x17] = CONTROL, [0x18] = CONTROL, [0x19] = CONTROL, [0x1A] = CONTROL,             \
    [0x1B] = CONTROL, [0x1C] = CONTROL, [0x1D] = CONTROL, [0x1E] = CONTROL,             \
    [0x1F] = CONTROL, [0x7F] = PLAIN
static const unsigned char outside_class[128] = {
    CONTROLS_EXCEPT_WS,
    ['"'] = QUOTE, ['['] = OPEN, ['{'] = OPEN, [']'] = CLOSE, ['}'] = CLOSE,
};
static const unsigned char inside_class[128] = {
    CONTROLS_EXCEPT_WS, [0x09] = CONTROL, [0x0A] = CONTROL, [0x0D] = CONTROL,
    ['"'] = QUOTE, ['\\'] = BACKSLASH,
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

static rp_scan_result full_scan(const char *buf, size_t len, int max_depth, size_t *offset);

/* Fast path for the common request: printable ASCII only (0x20..0x7E), no
 * backslash, and at most max_depth opening brackets in the whole line (so
 * no nesting can exceed it).  Such a line passes every check of the full
 * scan, so the scan can be skipped.  Eight bytes per step; false sends the
 * line to the full scan, which finds and locates any problem. */
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
        return RP_SCAN_OK;
    return full_scan(buf, len, max_depth, offset);
}

/* The full scan: every check, with the offset of the first problem. */
static rp_scan_result full_scan(const char *buf, size_t len, int max_depth, size_t *offset)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0;
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
            return RP_SCAN_OK;
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
             * silently become "a": refuse it. */
            if (len - i >= 6 && memcmp(p + i + 1, "u0000", 5) == 0)
                return stop(RP_SCAN_NUL_ESCAPE, i, offset);
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
        default:
            break;
        }
        i++;
    }
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
