/* SPDX-License-Identifier: MIT */
/* The limits table (limits.h): defaults, flags, help, hello. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"

typedef struct limit_row {
    const char *name, *flag, *help;
    size_t dflt, lo, hi;
    size_t offset; /* of the field in rpd_limits */
} limit_row;

static const limit_row rows[] = {
#define RPD_LIMIT_ROW(name, d, l, h, flag, help)                                                   \
    {#name, flag, help, (size_t)(d), (size_t)(l), (size_t)(h), offsetof(rpd_limits, name)},
    RPD_LIMIT_TABLE(RPD_LIMIT_ROW)
#undef RPD_LIMIT_ROW
};

_Static_assert(sizeof rows / sizeof rows[0] == RPD_LIMIT_COUNT, "one row per limit id");
_Static_assert(sizeof(rpd_limits) == RPD_LIMIT_COUNT * sizeof(size_t),
               "rpd_limits holds exactly the table's fields");

static size_t *field(rpd_limits *l, const limit_row *r)
{
    return (size_t *)((char *)l + r->offset);
}

static size_t value(const rpd_limits *l, const limit_row *r)
{
    return *(const size_t *)((const char *)l + r->offset);
}

rpd_limits rpd_default_limits(void)
{
    rpd_limits l;
    for (size_t i = 0; i < RPD_LIMIT_COUNT; i++)
        *field(&l, &rows[i]) = rows[i].dflt;
    return l;
}

const char *rpd_limit_name(rpd_limit_id id)
{
    return (size_t)id < RPD_LIMIT_COUNT ? rows[id].name : "?";
}

/* A decimal integer in [lo, hi]: no sign, no junk, no overflow. */
static bool parse_size(const char *s, size_t lo, size_t hi, size_t *out)
{
    if (!s || s[0] < '0' || s[0] > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = (size_t)v;
    return true;
}

bool rpd_limits_is_flag(const char *flag)
{
    if (strcmp(flag, "--max-connections") == 0)
        return true;
    for (size_t i = 0; i < RPD_LIMIT_COUNT; i++)
        if (strcmp(flag, rows[i].flag) == 0)
            return true;
    return false;
}

int rpd_limits_parse_flag(rpd_limits *l, const char *flag, const char *value_text)
{
    bool both = strcmp(flag, "--max-connections") == 0;
    for (size_t i = 0; i < RPD_LIMIT_COUNT; i++) {
        const limit_row *r = &rows[i];
        if (both ? i != RPD_LIMIT_max_tcp_connections : strcmp(flag, r->flag) != 0)
            continue;
        size_t v;
        if (!parse_size(value_text, r->lo, r->hi, &v)) {
            fprintf(stderr, "reposed: %s needs an integer from %zu to %zu, got '%s'\n", flag, r->lo,
                    r->hi, value_text ? value_text : "");
            return -1;
        }
        *field(l, r) = v;
        if (both)
            l->max_unix_connections = v;
        return 1;
    }
    return 0;
}

bool rpd_limits_check(rpd_limits *l, FILE *err)
{
    /* The cap on output held for all clients together disconnects the
     * largest holders; a client that reads must never be one of them for
     * what one client may hold on its own (write_kill_bytes bounds that:
     * it covers write_pause_bytes of queued replies plus one reply of
     * max_reply_bytes).  So a lower cap lowers the kill limit with it, and
     * the reply limit follows below. */
    if (l->max_output_bytes < l->write_pause_bytes + 4096) {
        fprintf(err, "reposed: --max-output-bytes must exceed --write-pause-bytes by at least "
                     "4096\n");
        return false;
    }
    if (l->write_kill_bytes > l->max_output_bytes)
        l->write_kill_bytes = l->max_output_bytes;
    /* A reply of max_reply_bytes on top of write_pause_bytes already queued
     * must not disconnect a client that reads: lower the reply limit when
     * the kill limit was set low. */
    if (l->write_kill_bytes < l->write_pause_bytes + 4096) {
        fprintf(err, "reposed: --write-kill-bytes must exceed --write-pause-bytes by at least "
                     "4096\n");
        return false;
    }
    if (l->max_reply_bytes > l->write_kill_bytes - l->write_pause_bytes)
        l->max_reply_bytes = l->write_kill_bytes - l->write_pause_bytes;
    if (l->max_request_bytes_before_auth > l->max_request_bytes)
        l->max_request_bytes_before_auth = l->max_request_bytes;
    /* Notifications stop at watch_buffer_bytes of unsent output, and the
     * kill limit is checked while a connection's requests run: with the
     * watch buffer near it, a watcher that also sends requests would be
     * disconnected instead of resynced.  Lower it, like the reply limit. */
    if (l->watch_buffer_bytes > l->write_kill_bytes / 2)
        l->watch_buffer_bytes = l->write_kill_bytes / 2;
    return true;
}

void rpd_limits_usage(FILE *to)
{
    for (size_t i = 0; i < RPD_LIMIT_COUNT; i++) {
        const limit_row *r = &rows[i];
        char left[48];
        snprintf(left, sizeof left, "%s N", r->flag);
        fprintf(to, "  %-31s %s (default %zu)\n", left, r->help, r->dflt);
    }
    fprintf(to, "  %-31s sets both connection limits\n", "--max-connections N");
}

void rpd_limits_write(rp_jw *w, const rpd_limits *l)
{
    rp_jw_object_begin(w);
    for (size_t i = 0; i < RPD_LIMIT_COUNT; i++) {
        rp_jw_key(w, rows[i].name);
        rp_jw_uint(w, value(l, &rows[i]));
    }
    rp_jw_object_end(w);
}
