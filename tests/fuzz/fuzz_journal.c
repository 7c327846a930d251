/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the journal scanner (src/server/persistence/journal.c).
 *
 * Byte 0 even: the rest is scanned as a journal file as it is (random bytes
 * rarely pass a checksum, so this mostly exercises the refusals).  Byte 0
 * odd: the rest describes a journal that is then damaged: byte 1 the record
 * count, byte 2 the base revision, then per record a length byte and that
 * many payload bytes; the last 4 input bytes choose the damage (a cut
 * and/or a flipped byte).  Either way the result must be consistent with
 * the bytes:
 *  - the valid prefix re-encodes to the same bytes: a file header from the
 *    fields the scan reports (format 2's, or format 1's 32 bytes), then
 *    each visited record's header from its revision and payload, back to
 *    back, ending at `good`;
 *  - CLEAN exactly when good is the whole file; TORN and CORRUPT start at
 *    `good` (or 0 for a damaged file header); TORN only when the file ends
 *    inside the record there;
 *  - an undamaged built journal scans CLEAN with every record, a cut one
 *    keeps every whole record before the cut, and a flipped byte is found
 *    at the record holding it.
 */
#include "fuzz_util.h"

#include "server/persistence/journal.h"

typedef struct rebuild {
    const uint8_t *buf;
    size_t at;
    size_t records;
    uint64_t last;
} rebuild;

static bool visit(void *ctx, uint64_t revision, const uint8_t *payload, uint32_t n, size_t offset)
{
    rebuild *r = ctx;
    FUZZ_CHECK(offset == r->at, "record at %zu, expected %zu", offset, r->at);
    FUZZ_CHECK(revision > r->last, "revision %llu after %llu", (unsigned long long)revision,
               (unsigned long long)r->last);
    FUZZ_CHECK(payload == r->buf + offset + RPJ_RECORD_HEADER, "payload pointer");
    uint8_t h[RPJ_RECORD_HEADER];
    rpj_record_header(h, revision, payload, n);
    FUZZ_CHECK(memcmp(h, r->buf + offset, sizeof h) == 0, "record header at %zu re-encodes",
               offset);
    r->at = offset + RPJ_RECORD_HEADER + n;
    r->records++;
    r->last = revision;
    return true;
}

/* Reads a little-endian u64. */
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Whether buf starts with a file header as the writer makes it (from the
 * fields found in it), of format 2 or of format 1; *len gets its size. */
static bool header_reencodes(const uint8_t *buf, size_t n, size_t *len)
{
    uint8_t h[RPJ_FILE_HEADER];
    if (n >= RPJ_FILE_HEADER) {
        rpj_file_header(
            h, &(rpj_header){get64(buf + 16), get64(buf + 24), get64(buf + 32), get64(buf + 40)});
        *len = RPJ_FILE_HEADER;
        if (memcmp(h, buf, RPJ_FILE_HEADER) == 0)
            return true;
    }
    if (n >= RPJ_FILE_HEADER_V1) {
        /* Format 1: magic, version, zero, base revision, zero, CRC. */
        memset(h, 0, RPJ_FILE_HEADER_V1);
        memcpy(h, "REPOSEJ\n", 8);
        h[8] = RPJ_FORMAT_V1;
        memcpy(h + 16, buf + 16, 8);
        rpj_put32(h + 28, rpj_crc32c(0, h, 28));
        *len = RPJ_FILE_HEADER_V1;
        if (memcmp(h, buf, RPJ_FILE_HEADER_V1) == 0)
            return true;
    }
    return false;
}

/* Scans buf and checks the result against the bytes; returns it. */
static rpj_scan_result check_scan(const uint8_t *buf, size_t n)
{
    rpj_scan_result res;
    size_t hlen = RPJ_FILE_HEADER;
    bool header_ok = header_reencodes(buf, n, &hlen);
    rebuild r = {buf, hlen, 0, header_ok ? get64(buf + 16) : 0};
    FUZZ_CHECK(rpj_scan(buf, n, visit, &r, &res), "the visitor never stops the scan");
    if (!header_ok) {
        FUZZ_CHECK(res.end != RPJ_CLEAN && res.records == 0 && res.bad_offset < RPJ_FILE_HEADER,
                   "a file whose header does not re-encode: end %d", (int)res.end);
        return res;
    }
    FUZZ_CHECK(res.header_len == hlen, "header of %zu bytes, scanned as %zu", hlen, res.header_len);
    bool v2 = hlen == RPJ_FILE_HEADER;
    FUZZ_CHECK(res.base_revision == get64(buf + 16) &&
                   res.journal_id == (v2 ? get64(buf + 24) : 0) &&
                   res.snapshot_id == (v2 ? get64(buf + 32) : 0) &&
                   res.synced_len == (v2 ? get64(buf + 40) : RPJ_FILE_HEADER_V1),
               "the header's fields as read");
    FUZZ_CHECK(res.records == r.records && res.good == r.at, "valid prefix %zu/%zu vs %zu/%zu",
               res.records, res.good, r.records, r.at);
    FUZZ_CHECK((res.end == RPJ_CLEAN) == (res.good == n), "CLEAN exactly when all is valid");
    if (res.end != RPJ_CLEAN) {
        FUZZ_CHECK(res.end == RPJ_TORN || res.end == RPJ_CORRUPT, "end %d", (int)res.end);
        FUZZ_CHECK(res.bad_offset == res.good, "trouble at %zu, valid to %zu", res.bad_offset,
                   res.good);
    }
    if (res.end == RPJ_TORN) {
        /* The file ends inside a record: a short header, or a payload
         * shorter than its (checked) header says. */
        size_t left = n - res.good;
        uint32_t len = 0;
        if (left >= RPJ_RECORD_HEADER)
            for (int i = 0; i < 4; i++)
                len |= (uint32_t)buf[res.good + i] << (8 * i);
        FUZZ_CHECK(left < RPJ_RECORD_HEADER || left - RPJ_RECORD_HEADER < len,
                   "TORN with a whole record left");
    }
    return res;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!(data[0] & 1)) {
        check_scan(data + 1, size - 1);
        return 0;
    }
    if (size < 3 + 4)
        return 0;
    const uint8_t *damage = data + size - 4;
    const uint8_t *p = data + 3, *end = damage;
    size_t count = data[1] % 32;
    uint64_t base = data[2];
    uint8_t *buf = malloc(RPJ_FILE_HEADER + count * (RPJ_RECORD_HEADER + 255));
    size_t offsets[33];
    if (!buf)
        return 0;
    rpj_file_header(buf,
                    &(rpj_header){base, 0x100 + base, base ? 0x200 + base : 0, RPJ_FILE_HEADER});
    size_t at = RPJ_FILE_HEADER;
    uint64_t rev = base;
    size_t k = 0;
    for (; k < count && p < end; k++) {
        size_t len = *p++;
        if (len > (size_t)(end - p))
            len = (size_t)(end - p);
        memcpy(buf + at + RPJ_RECORD_HEADER, p, len);
        p += len;
        rev += 1 + len % 3;
        rpj_record_header(buf + at, rev, buf + at + RPJ_RECORD_HEADER, (uint32_t)len);
        offsets[k] = at;
        at += RPJ_RECORD_HEADER + len;
    }
    offsets[k] = at;
    size_t n = at;
    rpj_scan_result res = check_scan(buf, n);
    FUZZ_CHECK(res.end == RPJ_CLEAN && res.records == k && res.last_revision == rev,
               "an undamaged journal of %zu records", k);

    /* A cut keeps every whole record before it. */
    size_t cut = ((size_t)damage[0] << 8 | damage[1]) % (n + 1);
    res = check_scan(buf, cut);
    size_t whole = 0;
    while (whole < k && offsets[whole + 1] <= cut)
        whole++;
    FUZZ_CHECK(res.records == whole, "cut at %zu: %zu records, %zu whole", cut, res.records, whole);
    FUZZ_CHECK(cut < RPJ_FILE_HEADER ? res.end == RPJ_TORN
                                     : res.end == (cut == offsets[whole] ? RPJ_CLEAN : RPJ_TORN),
               "cut at %zu: end %d", cut, (int)res.end);

    /* A flipped byte is found at its record (in the whole file). */
    size_t at_flip = ((size_t)damage[2] * 257 + damage[3]) % n;
    buf[at_flip] ^= (uint8_t)(damage[3] | 1);
    res = check_scan(buf, n);
    if (at_flip >= RPJ_FILE_HEADER) {
        size_t r = 0;
        while (offsets[r + 1] <= at_flip)
            r++;
        FUZZ_CHECK(res.end == RPJ_CORRUPT && res.bad_offset == offsets[r] && res.records == r,
                   "byte %zu of record %zu flipped: end %d at %zu", at_flip, r, (int)res.end,
                   res.bad_offset);
    } else {
        FUZZ_CHECK(res.end == RPJ_CORRUPT || res.end == RPJ_BAD_FORMAT,
                   "file header byte %zu flipped: end %d", at_flip, (int)res.end);
    }
    free(buf);
    return 0;
}
