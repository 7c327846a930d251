/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the newline framer (src/server/transport/framer.c).
 *
 * Input: byte 0 picks max_line, byte 1 seeds the chunking, the rest is the
 * byte stream.  The stream is fed in pseudo-random chunks (empty ones
 * included), alternating rpd_framer_feed with rpd_framer_space + commit the
 * way libuv fills the buffer, and every line taken out is compared with a
 * model computed from the whole stream at once: the same lines in the same
 * order, none containing '\n', none longer than max_line, one '\r' before
 * the '\n' dropped, RPD_FRAME_TOO_LONG exactly when the current line is
 * over the limit, the bytes returned plus those pending adding up to the
 * bytes fed, and the unterminated tail available through rpd_framer_rest
 * at the end.
 */
#include "fuzz_util.h"

#include "server/transport/framer.h"

/* One line of the model: where it starts in the stream, its length without
 * "\n" / "\r\n", and the stream bytes it consumes (with the terminator). */
typedef struct model_line {
    size_t start, len, consumed;
} model_line;

static uint32_t next_rand(uint32_t *s)
{
    /* xorshift32; the state must not be 0. */
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static size_t pick_max_line(uint8_t b)
{
    if (b == 255)
        return SIZE_MAX; /* "no limit": max_line + 1 must not wrap */
    if (b == 254)
        return (size_t)1 << 20;
    return b; /* 0..253: short limits meet the edges often */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const size_t max_line = pick_max_line(data[0]);
    uint32_t rng = 0x9E3779B9u ^ ((uint32_t)data[1] * 0x01000193u);
    const char *stream = (const char *)data + 2;
    const size_t n = size - 2;

    /* The model: complete lines, then the unterminated tail. */
    model_line *lines = malloc((n + 1) * sizeof *lines);
    FUZZ_CHECK(lines, "out of memory");
    size_t n_lines = 0, pos = 0;
    for (const char *nl; (nl = memchr(stream + pos, '\n', n - pos)) != NULL;) {
        size_t end = (size_t)(nl - stream), len = end - pos;
        if (len > 0 && stream[end - 1] == '\r')
            len--;
        lines[n_lines++] = (model_line){pos, len, end + 1 - pos};
        pos = end + 1;
    }
    const size_t tail_start = pos, tail_raw = n - pos;
    size_t tail_len = tail_raw;
    if (tail_len > 0 && stream[n - 1] == '\r')
        tail_len--;

    rpd_framer f;
    rpd_framer_init(&f, max_line);
    size_t fed = 0, taken = 0, consumed = 0;
    bool too_long = false;
    while (!too_long) {
        /* Feed one chunk (possibly empty). */
        uint32_t r = next_rand(&rng);
        size_t chunk = (r & 0x300) ? r % 17 : r % 1500;
        if (chunk > n - fed)
            chunk = n - fed;
        if (r & 0x10000) {
            FUZZ_CHECK(rpd_framer_feed(&f, stream + fed, chunk), "feed of %zu bytes failed", chunk);
            fed += chunk;
        } else {
            size_t left = chunk;
            do {
                size_t want = next_rand(&rng) % 64, avail = 0;
                char *dst = rpd_framer_space(&f, want, &avail);
                FUZZ_CHECK(dst != NULL, "space(%zu) failed", want);
                FUZZ_CHECK(avail >= want, "space(%zu) gave %zu bytes", want, avail);
                size_t k = left < avail ? left : avail;
                memcpy(dst, stream + fed, k);
                rpd_framer_commit(&f, k);
                fed += k;
                left -= k;
            } while (left > 0);
        }

        /* Take every line it now holds. */
        for (;;) {
            const char *line = NULL;
            size_t len = 0;
            rpd_frame_status st = rpd_framer_next(&f, &line, &len);
            if (st == RPD_FRAME_NEED_MORE)
                break;
            if (st == RPD_FRAME_TOO_LONG) {
                /* The current line is over the limit: a complete one, or the
                 * tail, which can only grow. */
                bool over = taken < n_lines ? lines[taken].len > max_line : tail_len > max_line;
                FUZZ_CHECK(over, "TOO_LONG for line %zu, which is within %zu bytes", taken,
                           max_line);
                too_long = true;
                break;
            }
            FUZZ_CHECK(st == RPD_FRAME_LINE, "unknown status %d", (int)st);
            FUZZ_CHECK(taken < n_lines, "a line %zu that the stream does not have", taken);
            const model_line *m = &lines[taken];
            FUZZ_CHECK(m->start + m->consumed <= fed, "line %zu returned before its newline",
                       taken);
            FUZZ_CHECK(m->len <= max_line, "line %zu of %zu bytes over max_line %zu returned",
                       taken, m->len, max_line);
            FUZZ_CHECK(len == m->len, "line %zu: %zu bytes, want %zu", taken, len, m->len);
            FUZZ_CHECK(len == 0 || memcmp(line, stream + m->start, len) == 0,
                       "line %zu: bytes differ", taken);
            FUZZ_CHECK(len == 0 || !memchr(line, '\n', len), "line %zu contains a newline", taken);
            consumed += m->consumed;
            taken++;
        }
        if (too_long)
            break;
        /* Lines out in full before more input: any complete line buffered
         * has been returned, and the rest is pending. */
        FUZZ_CHECK(taken == n_lines || lines[taken].start + lines[taken].consumed > fed,
                   "line %zu is complete but was not returned", taken);
        FUZZ_CHECK(consumed + rpd_framer_pending(&f) == fed,
                   "%zu bytes consumed + %zu pending != %zu fed", consumed, rpd_framer_pending(&f),
                   fed);
        if (fed == n)
            break;
    }

    if (!too_long) {
        /* End of stream: every line was taken, and the tail is the rest. */
        FUZZ_CHECK(taken == n_lines, "%zu of %zu lines returned", taken, n_lines);
        FUZZ_CHECK(consumed == tail_start, "consumed %zu, tail starts at %zu", consumed,
                   tail_start);
        const char *line = NULL;
        size_t len = 0;
        bool got = rpd_framer_rest(&f, &line, &len);
        FUZZ_CHECK(got == (tail_raw > 0), "rest %d with a tail of %zu bytes", (int)got, tail_raw);
        if (got) {
            FUZZ_CHECK(len == tail_len, "rest: %zu bytes, want %zu", len, tail_len);
            FUZZ_CHECK(len <= max_line, "rest: %zu bytes over max_line %zu", len, max_line);
            FUZZ_CHECK(len == 0 || memcmp(line, stream + tail_start, len) == 0,
                       "rest: bytes differ");
        }
        FUZZ_CHECK(rpd_framer_pending(&f) == 0, "%zu bytes pending after rest",
                   rpd_framer_pending(&f));
        FUZZ_CHECK(!rpd_framer_rest(&f, &line, &len), "rest twice");
    }
    rpd_framer_free(&f);
    free(lines);
    return 0;
}
