/* SPDX-License-Identifier: MIT */
/*
 * The journal's file format: see journal.h.
 */
#include "journal.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define RPJ_HAVE_SSE42 1
#endif

/* ---- CRC-32C ----------------------------------------------------------------------- */

/* Byte-at-a-time table for the reflected polynomial, built on first use
 * (the build is idempotent, so racing threads write the same values). */
static uint32_t crc_table[256];
static int crc_table_ready;

static void crc_table_build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
    __atomic_store_n(&crc_table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_portable(uint32_t crc, const uint8_t *p, size_t n)
{
    if (!__atomic_load_n(&crc_table_ready, __ATOMIC_ACQUIRE))
        crc_table_build();
    for (size_t i = 0; i < n; i++)
        crc = crc_table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
    return crc;
}

#ifdef RPJ_HAVE_SSE42
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p,
                                                            size_t n)
{
    uint64_t c = crc;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
    }
    uint32_t c32 = (uint32_t)c;
    for (; n; p++, n--)
        c32 = _mm_crc32_u8(c32, *p);
    return c32;
}
#endif

uint32_t rpj_crc32c(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    crc = ~crc;
#ifdef RPJ_HAVE_SSE42
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_sse42(crc, p, n);
#endif
    return ~crc_portable(crc, p, n);
}

uint32_t rpj_crc32c_portable_(uint32_t crc, const void *data, size_t n)
{
    return ~crc_portable(~crc, data, n);
}

/* ---- headers (little-endian fields: journal.h) --------------------------------------- */

static const char MAGIC[8] = {'R', 'E', 'P', 'O', 'S', 'E', 'J', '\n'};

void rpj_file_header(uint8_t out[RPJ_FILE_HEADER], const rpj_header *h)
{
    memset(out, 0, RPJ_FILE_HEADER);
    memcpy(out, MAGIC, sizeof MAGIC);
    rpj_put32(out + 8, RPJ_FORMAT);
    rpj_put64(out + 16, h->base_revision);
    rpj_put64(out + 24, h->journal_id);
    rpj_put64(out + 32, h->snapshot_id);
    rpj_put64(out + 40, h->synced_len);
    rpj_put32(out + 60, rpj_crc32c(0, out, 60));
}

void rpj_record_header_crc(uint8_t out[RPJ_RECORD_HEADER], uint64_t revision, uint32_t crc,
                           uint32_t n)
{
    rpj_put32(out, n);
    rpj_put64(out + 4, revision);
    rpj_put32(out + 12, crc);
    rpj_put32(out + 16, rpj_crc32c(0, out, 16));
}

void rpj_record_header(uint8_t out[RPJ_RECORD_HEADER], uint64_t revision, const void *payload,
                       uint32_t n)
{
    rpj_record_header_crc(out, revision, rpj_crc32c(0, payload, n), n);
}

/* ---- scanning ------------------------------------------------------------------------ */

static bool stop(rpj_scan_result *r, rpj_end end, size_t offset, const char *reason)
{
    r->end = end;
    r->bad_offset = offset;
    r->reason = reason;
    return true;
}

bool rpj_scan(const uint8_t *buf, size_t n, rpj_visit fn, void *ctx, rpj_scan_result *out)
{
    memset(out, 0, sizeof *out);
    out->end = RPJ_CLEAN;
    /* What there is of the magic must match, or it is not a journal. */
    size_t k = n < sizeof MAGIC ? n : sizeof MAGIC;
    if (memcmp(buf, MAGIC, k) != 0)
        return stop(out, RPJ_BAD_FORMAT, 0, "not a repose journal (bad magic)");
    if (n < 12)
        return stop(out, RPJ_TORN, 0, "file ends inside its header");
    uint32_t format = rpj_get32(buf + 8);
    size_t hlen = format == RPJ_FORMAT      ? RPJ_FILE_HEADER
                  : format == RPJ_FORMAT_V1 ? RPJ_FILE_HEADER_V1
                                            : 0;
    /* The version comes before the checksum, whose place it decides. */
    if (!hlen)
        return stop(out, RPJ_BAD_FORMAT, 8, "journal of another format version");
    out->format = format;
    out->header_len = hlen;
    if (n < hlen)
        return stop(out, RPJ_TORN, 0, "file ends inside its header");
    if (rpj_crc32c(0, buf, hlen - 4) != rpj_get32(buf + hlen - 4))
        return stop(out, RPJ_CORRUPT, 0, "file header checksum mismatch");
    bool reserved_set = format == RPJ_FORMAT
                            ? rpj_get32(buf + 12) || rpj_get64(buf + 48) || rpj_get32(buf + 56)
                            : rpj_get32(buf + 12) || rpj_get32(buf + 24);
    if (reserved_set)
        return stop(out, RPJ_BAD_FORMAT, 12, "file header with unknown fields set");
    out->base_revision = out->last_revision = rpj_get64(buf + 16);
    if (format == RPJ_FORMAT) {
        out->journal_id = rpj_get64(buf + 24);
        out->snapshot_id = rpj_get64(buf + 32);
        out->synced_len = rpj_get64(buf + 40);
    } else {
        out->synced_len = RPJ_FILE_HEADER_V1;
    }
    size_t at = hlen;
    out->good = at;
    while (at < n) {
        if (n - at < RPJ_RECORD_HEADER)
            return stop(out, RPJ_TORN, at, "file ends inside a record header");
        const uint8_t *h = buf + at;
        if (rpj_crc32c(0, h, 16) != rpj_get32(h + 16))
            return stop(out, RPJ_CORRUPT, at, "record header checksum mismatch");
        uint32_t len = rpj_get32(h);
        uint64_t rev = rpj_get64(h + 4);
        if (len > RPJ_MAX_PAYLOAD)
            return stop(out, RPJ_CORRUPT, at, "record longer than any mutation");
        if (rev <= out->last_revision)
            return stop(out, RPJ_CORRUPT, at, "record revision does not rise");
        if (n - at - RPJ_RECORD_HEADER < len)
            return stop(out, RPJ_TORN, at, "file ends inside a record");
        const uint8_t *payload = h + RPJ_RECORD_HEADER;
        if (rpj_crc32c(0, payload, len) != rpj_get32(h + 12))
            return stop(out, RPJ_CORRUPT, at, "record payload checksum mismatch");
        if (fn && !fn(ctx, rev, payload, len, at))
            return false;
        at += RPJ_RECORD_HEADER + len;
        out->good = at;
        out->records++;
        out->last_revision = rev;
    }
    return true;
}
