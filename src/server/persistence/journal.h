/* SPDX-License-Identifier: MIT */
/*
 * The journal's file format (proto/PROTOCOL.md, Durability): CRC-32C, the
 * file header and the records, and a scanner that tells a torn tail from
 * corruption.  No I/O policy here: the daemon's durability layer writes
 * what these functions encode and reads files through rpj_scan.
 *
 * A journal file (format 2) starts with a 64-byte header:
 *
 *     offset  size  field
 *          0     8  magic "REPOSEJ\n"
 *          8     4  format version (RPJ_FORMAT), little-endian
 *         12     4  reserved, zero
 *         16     8  base revision: the store revision of the snapshot the
 *                   journal continues (0: none)
 *         24     8  journal id: random, new for every journal file
 *         32     8  snapshot id: the id of the snapshot it continues (0:
 *                   none; snapshot.h), so that a journal put next to
 *                   another directory's snapshot is recognised
 *         40     8  synced length: bytes of the file known to be on the
 *                   disk, so that the file is never shorter.  Set when the
 *                   file is renamed into place (this header and the records
 *                   copied into it, synced), then rewritten in place just
 *                   before each later fsync with what the fsync before it
 *                   covered (proto/PROTOCOL.md, Durability, says why one
 *                   behind)
 *         48    12  reserved, zero
 *         60     4  CRC-32C of bytes 0..60
 *
 * Format 1 (the previous version) had a 32-byte header: magic, version,
 * reserved, base revision at 16, reserved, CRC-32C of 0..28 at 28, and no
 * ids; the scanner still reads it (ids 0, synced length 32) so that the
 * daemon can upgrade a directory.
 *
 * Then records, each a 20-byte header and a payload:
 *
 *          0     4  payload length n (at most RPJ_MAX_PAYLOAD)
 *          4     8  store revision the mutation committed
 *         12     4  CRC-32C of the payload
 *         16     4  CRC-32C of bytes 0..16 of this header
 *         20     n  payload (the mutation, opaque here)
 *
 * The header's own CRC means a damaged length is caught as corruption where
 * it lies, instead of making every later record look like a torn tail.
 * A file that ends inside a record (a header, or the payload a valid
 * header announces) has a torn tail: the write of the last record did not
 * complete.  Anything else that does not check out is corruption.  (Whether
 * a torn tail can be a torn write at all is the caller's judgement: a
 * file that ends inside its own header, or before its synced length, was
 * cut after it was written.)
 */
#ifndef REPOSED_JOURNAL_H
#define REPOSED_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RPJ_FORMAT 2u
#define RPJ_FILE_HEADER 64u
/* The previous version's files, still read (see above). */
#define RPJ_FORMAT_V1 1u
#define RPJ_FILE_HEADER_V1 32u
#define RPJ_RECORD_HEADER 20u
/* Larger than any request the daemon accepts (limits.h), so a length above
 * it is damage, not data. */
#define RPJ_MAX_PAYLOAD (1u << 30)

/* Little-endian fields of the journal and snapshot files. */
static inline void rpj_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void rpj_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t rpj_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static inline uint64_t rpj_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* CRC-32C (Castagnoli, reflected 0x82F63B78) of n bytes, continuing from
 * crc (0 to start).  SSE 4.2's crc32 instruction where the CPU has it. */
uint32_t rpj_crc32c(uint32_t crc, const void *data, size_t n);
/* The same without the instruction (for tests). */
uint32_t rpj_crc32c_portable_(uint32_t crc, const void *data, size_t n);

/* The fields of a file header (format 2). */
typedef struct rpj_header {
    uint64_t base_revision;
    uint64_t journal_id;
    uint64_t snapshot_id;
    uint64_t synced_len;
} rpj_header;

/* Writes the 64-byte file header. */
void rpj_file_header(uint8_t out[RPJ_FILE_HEADER], const rpj_header *h);

/* Writes a record's 20-byte header for payload (n bytes). */
void rpj_record_header(uint8_t out[RPJ_RECORD_HEADER], uint64_t revision, const void *payload,
                       uint32_t n);
/* The same from the payload's CRC-32C (a payload written in pieces). */
void rpj_record_header_crc(uint8_t out[RPJ_RECORD_HEADER], uint64_t revision, uint32_t crc,
                           uint32_t n);

typedef enum rpj_end {
    RPJ_CLEAN,     /* every byte belongs to a checked record */
    RPJ_TORN,      /* the file ends inside its last record */
    RPJ_CORRUPT,   /* a header or payload fails its check, or revisions go back */
    RPJ_BAD_FORMAT /* not a journal, or another format version */
} rpj_end;

typedef struct rpj_scan_result {
    rpj_end end;
    uint32_t format;        /* the file header's version (0 when it ends before it) */
    size_t header_len;      /* the file header's size for that version */
    uint64_t base_revision; /* from the file header (unless BAD_FORMAT) */
    uint64_t journal_id, snapshot_id, synced_len; /* format 2's (format 1: 0, 0, 32) */
    size_t good;            /* bytes of the valid prefix: header and whole records */
    size_t records;         /* records in the valid prefix */
    uint64_t last_revision; /* the last valid record's (base_revision if none) */
    size_t bad_offset;      /* TORN/CORRUPT/BAD_FORMAT: where the trouble starts */
    const char *reason;     /* a short phrase for the log */
} rpj_scan_result;

/* Called for each valid record in order; false stops the scan (the result
 * then covers the records before). */
typedef bool (*rpj_visit)(void *ctx, uint64_t revision, const uint8_t *payload, uint32_t n,
                          size_t offset);

/* Checks a whole journal file's bytes, visiting each valid record (fn may
 * be NULL).  Revisions must rise strictly, above the base revision.
 * Returns false only when fn stopped the scan. */
bool rpj_scan(const uint8_t *buf, size_t n, rpj_visit fn, void *ctx, rpj_scan_result *out);

#endif /* REPOSED_JOURNAL_H */
