/* SPDX-License-Identifier: MIT */
/* Line framing for the daemon's streams; see framer.h. */
#include <stdlib.h>
#include <string.h>

#include "framer.h"

void rpd_framer_init(rpd_framer *f, size_t max_line)
{
    memset(f, 0, sizeof *f);
    f->max_line = max_line;
}

void rpd_framer_free(rpd_framer *f)
{
    free(f->buf);
    memset(f, 0, sizeof *f);
}

char *rpd_framer_space(rpd_framer *f, size_t want, size_t *avail)
{
    /* Drop consumed bytes first so the buffer does not creep forward. */
    if (f->start > 0) {
        memmove(f->buf, f->buf + f->start, f->len - f->start);
        f->len -= f->start;
        f->scanned -= f->start;
        f->start = 0;
    }
    /* A buffer is allocated even for want == 0: the caller takes NULL to
     * mean out of memory, and NULL + 0 is not a valid pointer either. */
    if (!f->buf || f->cap - f->len < want) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap - f->len < want)
            cap *= 2;
        char *grown = realloc(f->buf, cap);
        if (!grown)
            return NULL;
        f->buf = grown;
        f->cap = cap;
    }
    *avail = f->cap - f->len;
    return f->buf + f->len;
}

void rpd_framer_commit(rpd_framer *f, size_t n)
{
    f->len += n;
}

bool rpd_framer_feed(rpd_framer *f, const char *data, size_t n)
{
    size_t avail;
    char *dst = rpd_framer_space(f, n, &avail);
    if (!dst)
        return false;
    memcpy(dst, data, n);
    rpd_framer_commit(f, n);
    return true;
}

rpd_frame_status rpd_framer_next(rpd_framer *f, const char **line, size_t *len)
{
    /* Nothing new to search (also when nothing was ever buffered and buf is
     * NULL, which memchr must not be given). */
    char *nl = f->len > f->scanned ? memchr(f->buf + f->scanned, '\n', f->len - f->scanned) : NULL;
    if (!nl) {
        f->scanned = f->len;
        /* Too long once the bytes so far, less a last '\r' that may turn out
         * to be the terminator's, exceed max_line.  Counting a '\r' that is
         * followed by more bytes matters: at end of stream the caller takes
         * the rest as the last line, which must be within max_line too.
         * (Written so that max_line = SIZE_MAX cannot overflow.) */
        size_t pending = f->len - f->start;
        if (pending > 0 && f->buf[f->len - 1] == '\r')
            pending--;
        return pending > f->max_line ? RPD_FRAME_TOO_LONG : RPD_FRAME_NEED_MORE;
    }
    size_t end = (size_t)(nl - f->buf);
    size_t n = end - f->start;
    if (n > 0 && f->buf[end - 1] == '\r')
        n--;
    if (n > f->max_line)
        return RPD_FRAME_TOO_LONG;
    *line = f->buf + f->start;
    *len = n;
    f->start = f->scanned = end + 1;
    return RPD_FRAME_LINE;
}

bool rpd_framer_rest(rpd_framer *f, const char **line, size_t *len)
{
    if (f->len == f->start)
        return false;
    size_t n = f->len - f->start;
    if (f->buf[f->start + n - 1] == '\r')
        n--;
    *line = f->buf + f->start;
    *len = n;
    f->start = f->scanned = f->len;
    return true;
}

void rpd_framer_trim(rpd_framer *f, size_t keep)
{
    if (f->start == f->len && f->cap > keep) {
        free(f->buf);
        f->buf = NULL;
        f->start = f->scanned = f->len = f->cap = 0;
    }
}

size_t rpd_framer_pending(const rpd_framer *f)
{
    return f->len - f->start;
}
