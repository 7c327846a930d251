/* SPDX-License-Identifier: MIT */
/*
 * The journal's file format (src/server/persistence/journal.c): CRC-32C against a
 * bit-at-a-time reference on both code paths' inputs (all lengths and
 * alignments), records written and scanned back, a cut at every byte
 * offset (a torn tail keeps every whole record before it), every single
 * byte flipped (always corruption, found at the damaged record), revisions
 * that do not rise, lengths beyond the limit, and other format versions.
 */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "server/persistence/journal.h"

/* CRC-32C one bit at a time: the definition. */
static uint32_t crc_reference(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

static void crc32c_matches_the_definition(void **state)
{
    (void)state;
    /* Published check values (RFC 3720 B.4 and the CRC catalogue). */
    assert_int_equal(rpj_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(rpj_crc32c_portable_(0, "123456789", 9), 0xE3069283u);
    uint8_t zeros[32] = {0}, ones[32], inc[32];
    memset(ones, 0xFF, sizeof ones);
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    assert_int_equal(rpj_crc32c(0, zeros, 32), 0x8A9136AAu);
    assert_int_equal(rpj_crc32c(0, ones, 32), 0x62A8AB43u);
    assert_int_equal(rpj_crc32c(0, inc, 32), 0x46DD794Eu);
    assert_int_equal(rpj_crc32c(0, "", 0), 0u);

    test_rng rng = {77};
    uint8_t buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rng_next(&rng);
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; off + n <= sizeof buf; n++) {
            uint32_t want = crc_reference(buf + off, n);
            assert_int_equal(rpj_crc32c(0, buf + off, n), want);
            assert_int_equal(rpj_crc32c_portable_(0, buf + off, n), want);
            /* In two pieces, continuing from the first. */
            size_t cut = n / 3;
            assert_int_equal(rpj_crc32c(rpj_crc32c(0, buf + off, cut), buf + off + cut, n - cut),
                             want);
        }
}

/* A journal of `count` random records (payloads of 0..max bytes, rising
 * revisions from base + 1 with gaps); offsets[k] is record k's start,
 * offsets[count] the end. */
typedef struct journal {
    uint8_t *buf;
    size_t n;
    size_t count;
    size_t offsets[64];
    uint64_t revs[64];
} journal;

static void make_journal(journal *j, test_rng *rng, size_t count, size_t max, uint64_t base)
{
    assert_true(count < 64);
    j->buf = malloc(RPJ_FILE_HEADER + count * (RPJ_RECORD_HEADER + max));
    assert_non_null(j->buf);
    rpj_file_header(j->buf, &(rpj_header){base, 0x1234, base ? 0x5678 : 0, RPJ_FILE_HEADER});
    size_t at = RPJ_FILE_HEADER;
    uint64_t rev = base;
    for (size_t k = 0; k < count; k++) {
        uint32_t len = (uint32_t)(rng_next(rng) % (max + 1));
        uint8_t *payload = j->buf + at + RPJ_RECORD_HEADER;
        for (uint32_t i = 0; i < len; i++)
            payload[i] = (uint8_t)rng_next(rng);
        rev += 1 + rng_next(rng) % 3;
        rpj_record_header(j->buf + at, rev, payload, len);
        j->offsets[k] = at;
        j->revs[k] = rev;
        at += RPJ_RECORD_HEADER + len;
    }
    j->offsets[count] = at;
    j->n = at;
    j->count = count;
}

typedef struct seen {
    const journal *j;
    size_t k;
} seen;

/* Each visited record is the next one written, payload and all. */
static bool check_record(void *ctx, uint64_t revision, const uint8_t *payload, uint32_t n,
                         size_t offset)
{
    seen *s = ctx;
    const journal *j = s->j;
    assert_true(s->k < j->count);
    assert_int_equal(offset, j->offsets[s->k]);
    assert_int_equal(revision, j->revs[s->k]);
    assert_int_equal(n, j->offsets[s->k + 1] - j->offsets[s->k] - RPJ_RECORD_HEADER);
    assert_ptr_equal(payload, j->buf + offset + RPJ_RECORD_HEADER);
    s->k++;
    return true;
}

static void records_scan_back_in_order(void **state)
{
    (void)state;
    test_rng rng = {5};
    for (int round = 0; round < 50; round++) {
        journal j;
        uint64_t base = round % 2 ? 0 : rng_next(&rng) % 1000000;
        make_journal(&j, &rng, (size_t)round % 40, round % 3 ? 60 : 3000, base);
        seen s = {&j, 0};
        rpj_scan_result r;
        assert_true(rpj_scan(j.buf, j.n, check_record, &s, &r));
        assert_int_equal(r.end, RPJ_CLEAN);
        assert_int_equal(s.k, j.count);
        assert_int_equal(r.records, j.count);
        assert_int_equal(r.good, j.n);
        assert_int_equal(r.base_revision, base);
        assert_int_equal(r.format, RPJ_FORMAT);
        assert_int_equal(r.journal_id, 0x1234);
        assert_int_equal(r.snapshot_id, base ? 0x5678 : 0);
        assert_int_equal(r.synced_len, RPJ_FILE_HEADER);
        assert_int_equal(r.last_revision, j.count ? j.revs[j.count - 1] : base);
        free(j.buf);
    }
}

static void a_cut_anywhere_is_a_torn_tail_after_whole_records(void **state)
{
    (void)state;
    test_rng rng = {6};
    journal j;
    make_journal(&j, &rng, 12, 90, 41);
    for (size_t cut = 0; cut <= j.n; cut++) {
        seen s = {&j, 0};
        rpj_scan_result r;
        assert_true(rpj_scan(j.buf, cut, check_record, &s, &r));
        /* Whole records before the cut. */
        size_t whole = 0;
        while (whole < j.count && j.offsets[whole + 1] <= cut)
            whole++;
        assert_int_equal(s.k, whole);
        assert_int_equal(r.records, whole);
        if (cut < RPJ_FILE_HEADER) {
            assert_int_equal(r.end, RPJ_TORN);
            assert_int_equal(r.bad_offset, 0);
            continue;
        }
        size_t boundary = whole ? j.offsets[whole] : RPJ_FILE_HEADER;
        assert_int_equal(r.good, boundary);
        if (cut == boundary) {
            assert_int_equal(r.end, RPJ_CLEAN);
        } else {
            assert_int_equal(r.end, RPJ_TORN);
            assert_int_equal(r.bad_offset, boundary);
        }
    }
    free(j.buf);
}

static void every_flipped_byte_is_corruption_at_its_record(void **state)
{
    (void)state;
    test_rng rng = {7};
    journal j;
    make_journal(&j, &rng, 10, 70, 0);
    for (size_t at = 0; at < j.n; at++) {
        uint8_t keep = j.buf[at];
        j.buf[at] ^= (uint8_t)(1 + rng_next(&rng) % 255);
        rpj_scan_result r;
        rpj_scan(j.buf, j.n, NULL, NULL, &r);
        if (at < 8) {
            assert_int_equal(r.end, RPJ_BAD_FORMAT); /* the magic */
        } else if (at < 12) {
            /* The version: another one, or format 1 whose checksum fails. */
            assert_true(r.end == RPJ_BAD_FORMAT || r.end == RPJ_CORRUPT);
        } else if (at < RPJ_FILE_HEADER) {
            assert_int_equal(r.end, RPJ_CORRUPT);
            assert_int_equal(r.bad_offset, 0);
        } else {
            size_t k = 0;
            while (j.offsets[k + 1] <= at)
                k++;
            if (r.end != RPJ_CORRUPT || r.bad_offset != j.offsets[k])
                fail_msg("byte %zu (record %zu at %zu): end %d at %zu (%s)", at, k, j.offsets[k],
                         (int)r.end, r.bad_offset, r.reason ? r.reason : "");
            assert_int_equal(r.records, k);
            assert_int_equal(r.good, j.offsets[k]);
        }
        j.buf[at] = keep;
    }
    free(j.buf);
}

static void revisions_must_rise_and_lengths_stay_in_bounds(void **state)
{
    (void)state;
    uint8_t buf[RPJ_FILE_HEADER + 3 * (RPJ_RECORD_HEADER + 4)];
    rpj_file_header(buf, &(rpj_header){10, 1, 2, RPJ_FILE_HEADER});
    size_t at = RPJ_FILE_HEADER;
    const uint64_t revs[] = {11, 15, 15};
    for (int k = 0; k < 3; k++, at += RPJ_RECORD_HEADER + 4) {
        memcpy(buf + at + RPJ_RECORD_HEADER, "abcd", 4);
        rpj_record_header(buf + at, revs[k], buf + at + RPJ_RECORD_HEADER, 4);
    }
    rpj_scan_result r;
    rpj_scan(buf, sizeof buf, NULL, NULL, &r);
    assert_int_equal(r.end, RPJ_CORRUPT);
    assert_int_equal(r.records, 2);
    assert_int_equal(r.bad_offset, RPJ_FILE_HEADER + 2 * (RPJ_RECORD_HEADER + 4));
    assert_int_equal(r.last_revision, 15);

    /* At or below the base revision. */
    rpj_record_header(buf + RPJ_FILE_HEADER, 10, buf + RPJ_FILE_HEADER + RPJ_RECORD_HEADER, 4);
    rpj_scan(buf, sizeof buf, NULL, NULL, &r);
    assert_int_equal(r.end, RPJ_CORRUPT);
    assert_int_equal(r.bad_offset, RPJ_FILE_HEADER);

    /* A length beyond the limit, with a header that checks out: damage,
     * not a torn tail. */
    uint8_t big[RPJ_FILE_HEADER + RPJ_RECORD_HEADER];
    rpj_file_header(big, &(rpj_header){0, 1, 0, RPJ_FILE_HEADER});
    rpj_record_header(big + RPJ_FILE_HEADER, 1, "", 0);
    big[RPJ_FILE_HEADER + 3] = 0x7F; /* length 0x7F000000 */
    uint32_t c = rpj_crc32c(0, big + RPJ_FILE_HEADER, 16);
    for (int i = 0; i < 4; i++)
        big[RPJ_FILE_HEADER + 16 + i] = (uint8_t)(c >> (8 * i));
    rpj_scan(big, sizeof big, NULL, NULL, &r);
    assert_int_equal(r.end, RPJ_CORRUPT);
    assert_string_equal(r.reason, "record longer than any mutation");
}

/* Sets the CRC-32C of h's first `len` bytes just after them. */
static void reseal(uint8_t *h, size_t len)
{
    uint32_t c = rpj_crc32c(0, h, len);
    for (int i = 0; i < 4; i++)
        h[len + i] = (uint8_t)(c >> (8 * i));
}

static void other_formats_are_refused(void **state)
{
    (void)state;
    uint8_t h[RPJ_FILE_HEADER];
    rpj_file_header(h, &(rpj_header){3, 1, 2, RPJ_FILE_HEADER});
    h[8] = 3; /* version 3, with a checksum that matches */
    reseal(h, RPJ_FILE_HEADER - 4);
    rpj_scan_result r;
    rpj_scan(h, sizeof h, NULL, NULL, &r);
    assert_int_equal(r.end, RPJ_BAD_FORMAT);
    assert_string_equal(r.reason, "journal of another format version");
    /* Fields this version does not know, set (with a matching checksum). */
    rpj_file_header(h, &(rpj_header){3, 1, 2, RPJ_FILE_HEADER});
    h[50] = 1;
    reseal(h, RPJ_FILE_HEADER - 4);
    rpj_scan(h, sizeof h, NULL, NULL, &r);
    assert_int_equal(r.end, RPJ_BAD_FORMAT);
    rpj_scan((const uint8_t *)"{\"hello\": 1}\n this is not a journal at all", 40, NULL, NULL, &r);
    assert_int_equal(r.end, RPJ_BAD_FORMAT);
    rpj_scan((const uint8_t *)"REPO", 4, NULL, NULL, &r);
    assert_int_equal(r.end, RPJ_TORN);
}

/* A journal of the previous format (a 32-byte header without ids) is
 * still read, records and all, so that the daemon can upgrade it. */
static void format_1_is_read(void **state)
{
    (void)state;
    uint8_t buf[RPJ_FILE_HEADER_V1 + RPJ_RECORD_HEADER + 4];
    memset(buf, 0, sizeof buf);
    memcpy(buf, "REPOSEJ\n", 8);
    buf[8] = RPJ_FORMAT_V1;
    buf[16] = 7; /* base revision */
    reseal(buf, 28);
    memcpy(buf + RPJ_FILE_HEADER_V1 + RPJ_RECORD_HEADER, "abcd", 4);
    rpj_record_header(buf + RPJ_FILE_HEADER_V1, 8, "abcd", 4);
    rpj_scan_result r;
    rpj_scan(buf, sizeof buf, NULL, NULL, &r);
    assert_int_equal(r.end, RPJ_CLEAN);
    assert_int_equal(r.format, RPJ_FORMAT_V1);
    assert_int_equal(r.header_len, RPJ_FILE_HEADER_V1);
    assert_int_equal(r.records, 1);
    assert_int_equal(r.base_revision, 7);
    assert_int_equal(r.journal_id, 0);
    assert_int_equal(r.snapshot_id, 0);
    assert_int_equal(r.synced_len, RPJ_FILE_HEADER_V1);
    /* Cut inside its header: torn there, like format 2's. */
    rpj_scan(buf, 20, NULL, NULL, &r);
    assert_int_equal(r.end, RPJ_TORN);
    assert_int_equal(r.good, 0);
}

static bool stop_after_two(void *ctx, uint64_t revision, const uint8_t *payload, uint32_t n,
                           size_t offset)
{
    (void)revision;
    (void)payload;
    (void)n;
    (void)offset;
    return ++*(int *)ctx < 2;
}

static void a_visitor_can_stop_the_scan(void **state)
{
    (void)state;
    test_rng rng = {8};
    journal j;
    make_journal(&j, &rng, 5, 10, 0);
    int calls = 0;
    rpj_scan_result r;
    assert_false(rpj_scan(j.buf, j.n, stop_after_two, &calls, &r));
    assert_int_equal(calls, 2);
    assert_int_equal(r.records, 1);
    free(j.buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc32c_matches_the_definition),
        cmocka_unit_test(records_scan_back_in_order),
        cmocka_unit_test(a_cut_anywhere_is_a_torn_tail_after_whole_records),
        cmocka_unit_test(every_flipped_byte_is_corruption_at_its_record),
        cmocka_unit_test(revisions_must_rise_and_lengths_stay_in_bounds),
        cmocka_unit_test(other_formats_are_refused),
        cmocka_unit_test(format_1_is_read),
        cmocka_unit_test(a_visitor_can_stop_the_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
