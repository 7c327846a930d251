/* SPDX-License-Identifier: MIT */
/*
 * replica.h without the nats.c client (libnats not found at build time):
 * --nats is refused at start with a clear error; nothing else is reached.
 */
#include <stdio.h>

#include "replica.h"

bool rpd_replica_name_ok(const char *name)
{
    return name && *name;
}

rpd_replica *rpd_replica_open(const rpd_replica_opts *opts, char *why, size_t cap)
{
    (void)opts;
    snprintf(why, cap, "this reposed was built without the NATS client (libnats-dev): no --nats");
    return NULL;
}

bool rpd_replica_trimmed_past(const rpd_replica *r, uint64_t applied)
{
    (void)r;
    (void)applied;
    return false;
}

bool rpd_replica_reread(rpd_replica *r)
{
    (void)r;
    return false;
}

bool rpd_replica_start(rpd_replica *r, uint64_t applied, char *why, size_t cap)
{
    (void)r;
    (void)applied;
    snprintf(why, cap, "no NATS client");
    return false;
}

bool rpd_replica_publish_snapshot(rpd_replica *r, uint64_t revision, const uint8_t *img, size_t n,
                                  uint64_t trim_keep, char *why, size_t cap)
{
    (void)r;
    (void)revision;
    (void)img;
    (void)n;
    (void)trim_keep;
    snprintf(why, cap, "no NATS client");
    return false;
}

bool rpd_replica_fetch_snapshot(rpd_replica *r, uint64_t *revision, uint8_t **img, size_t *n,
                                char *why, size_t cap)
{
    (void)r;
    (void)revision;
    (void)img;
    (void)n;
    snprintf(why, cap, "no NATS client");
    return false;
}

void rpd_replica_close(rpd_replica *r)
{
    (void)r;
}

bool rpd_replica_propose(rpd_replica *r, const char *method, const char *params, size_t len,
                         uint64_t *token, char *why, size_t cap)
{
    (void)r;
    (void)method;
    (void)params;
    (void)len;
    (void)token;
    snprintf(why, cap, "no NATS client");
    return false;
}

void rpd_replica_tick(rpd_replica *r)
{
    (void)r;
}

bool rpd_replica_next(rpd_replica *r, rpd_replica_event *e)
{
    (void)r;
    (void)e;
    return false;
}

void rpd_replica_event_free(rpd_replica_event *e)
{
    (void)e;
}

void rpd_replica_info_get(rpd_replica *r, rpd_replica_info *info)
{
    (void)r;
    (void)info;
}

bool rpd_replica_writable(rpd_replica *r, char *why, size_t cap)
{
    (void)r;
    snprintf(why, cap, "no NATS client");
    return false;
}
