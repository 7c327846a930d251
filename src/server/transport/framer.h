/* SPDX-License-Identifier: MIT */
/*
 * Newline-delimited framing, independent of the event loop so that it can be
 * unit-tested: bytes go in (rpd_framer_space + rpd_framer_commit, which lets
 * libuv read straight into the buffer), complete lines come out.
 *
 * A line ends at '\n'; one '\r' before it is dropped.  Lines longer than
 * max_line bytes (without the terminator) are reported as RPD_FRAME_TOO_LONG
 * as soon as that is known, without waiting for the newline.
 */
#ifndef REPOSE_SERVER_FRAMER_H
#define REPOSE_SERVER_FRAMER_H

#include <stdbool.h>
#include <stddef.h>

typedef enum rpd_frame_status {
    RPD_FRAME_LINE,      /* *line, *len set: one complete line */
    RPD_FRAME_NEED_MORE, /* no complete line buffered */
    RPD_FRAME_TOO_LONG   /* the current line exceeds max_line */
} rpd_frame_status;

typedef struct rpd_framer {
    char *buf;      /* owned */
    size_t start;   /* first byte of the current (unconsumed) line */
    size_t scanned; /* bytes before this have been searched for '\n' */
    size_t len, cap;
    size_t max_line;
} rpd_framer;

void rpd_framer_init(rpd_framer *f, size_t max_line);
void rpd_framer_free(rpd_framer *f);

/* Returns a writable region of at least `want` bytes at the end of the
 * buffer (compacting or growing it), or NULL when out of memory.  *avail
 * gets its size.  Lines returned earlier become invalid. */
char *rpd_framer_space(rpd_framer *f, size_t want, size_t *avail);

/* Marks n bytes of the region returned by rpd_framer_space as filled. */
void rpd_framer_commit(rpd_framer *f, size_t n);

/* Copies n bytes in (space + memcpy + commit).  False when out of memory. */
bool rpd_framer_feed(rpd_framer *f, const char *data, size_t n);

/* Takes the next complete line.  The pointer stays valid until the next
 * call to rpd_framer_space/feed. */
rpd_frame_status rpd_framer_next(rpd_framer *f, const char **line, size_t *len);

/* Takes whatever is buffered as a final line (at end of stream, where the
 * last line may lack its '\n').  False when nothing is buffered.  Call it
 * after rpd_framer_next returned RPD_FRAME_NEED_MORE: the rest is then
 * within max_line. */
bool rpd_framer_rest(rpd_framer *f, const char **line, size_t *len);

/* Frees the buffer when it holds nothing unconsumed and is larger than
 * `keep` bytes, so that an idle connection does not pin the memory of its
 * largest request. */
void rpd_framer_trim(rpd_framer *f, size_t keep);

/* Bytes buffered but not yet returned as lines. */
size_t rpd_framer_pending(const rpd_framer *f);

#endif /* REPOSE_SERVER_FRAMER_H */
