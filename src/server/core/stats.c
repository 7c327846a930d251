/* SPDX-License-Identifier: MIT */
/* Counters and latency quantiles for the stats method. */
#define _GNU_SOURCE /* getrandom */
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "stats.h"

void rpd_random_bytes(void *out, size_t n)
{
    if (getrandom(out, n, GRND_NONBLOCK) == (ssize_t)n)
        return;
    static _Thread_local uint64_t counter;
    unsigned char *p = out;
    for (size_t i = 0; i < n; i += sizeof(uint64_t)) {
        uint64_t x = rpd_now_ns() ^ ((uint64_t)getpid() << 40) ^ ++counter;
        memcpy(p + i, &x, n - i < sizeof x ? n - i : sizeof x);
    }
}

uint64_t rpd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rpd_now_coarse_ns(void)
{
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#else
    return rpd_now_ns();
#endif
}

void rpd_stats_add(rpd_stats *dst, const rpd_stats *src)
{
    /* Every member is a uint64_t counter. */
    _Static_assert(sizeof(rpd_stats) % sizeof(uint64_t) == 0, "rpd_stats holds only counters");
    uint64_t *d = (uint64_t *)dst;
    const uint64_t *s = (const uint64_t *)src;
    for (size_t i = 0; i < sizeof(rpd_stats) / sizeof(uint64_t); i++)
        d[i] += s[i];
}

/* Bucket of a duration: exact below 8 ns, then 8 sub-buckets per octave. */
static int bucket_of(uint64_t ns)
{
    if (ns < RPD_LAT_SUB)
        return (int)ns;
    int octave = 63 - __builtin_clzll(ns); /* >= 3 */
    int sub = (int)((ns >> (octave - 3)) & (RPD_LAT_SUB - 1));
    int b = (octave - 2) * RPD_LAT_SUB + sub;
    return b < RPD_LAT_BUCKETS ? b : RPD_LAT_BUCKETS - 1;
}

/* Largest duration that falls in bucket b. */
uint64_t rpd_stats_bucket_upper(int b)
{
    if (b < RPD_LAT_SUB)
        return (uint64_t)b;
    int octave = b / RPD_LAT_SUB + 2, sub = b % RPD_LAT_SUB;
    uint64_t base = (uint64_t)(RPD_LAT_SUB + sub) << (octave - 3);
    return base + ((uint64_t)1 << (octave - 3)) - 1;
}

void rpd_stats_latency(rpd_stats *s, uint64_t ns)
{
    s->latency[bucket_of(ns)]++;
    s->latency_count++;
    s->latency_sum_ns += ns;
}

void rpd_stats_mark_take(const rpd_stats *s, rpd_stats_mark *m)
{
    m->requests = s->requests;
    m->notifications = s->notifications;
    m->errors = s->errors;
    m->batches = s->batches;
    memcpy(m->errors_by_code, s->errors_by_code, sizeof m->errors_by_code);
    memcpy(m->limits_hit, s->limits_hit, sizeof m->limits_hit);
}

void rpd_stats_mark_undo(rpd_stats *s, const rpd_stats_mark *m, const rpd_stats_line *l)
{
    s->requests = m->requests;
    s->notifications = m->notifications;
    s->errors = m->errors;
    s->batches = m->batches;
    memcpy(s->errors_by_code, m->errors_by_code, sizeof m->errors_by_code);
    memcpy(s->limits_hit, m->limits_hit, sizeof m->limits_hit);
    if (l->called)
        s->by_method[l->method]--;
    if (l->erred)
        s->method_errors[l->error_method][l->error_slot]--;
    if (l->timed) {
        s->method_timed[l->method]--;
        s->method_ns[l->method] -= l->method_ns;
    }
    if (l->sampled) {
        s->latency[bucket_of(l->latency_ns)]--;
        s->latency_count--;
        s->latency_sum_ns -= l->latency_ns;
    }
}

uint64_t rpd_stats_quantile(const rpd_stats *s, double q)
{
    if (s->latency_count == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)(s->latency_count - 1)) + 1, seen = 0;
    for (int b = 0; b < RPD_LAT_BUCKETS; b++) {
        seen += s->latency[b];
        if (seen >= rank)
            return rpd_stats_bucket_upper(b);
    }
    return rpd_stats_bucket_upper(RPD_LAT_BUCKETS - 1);
}

static const int codes[RPD_STATS_CODE_SLOTS] = {
#define RPD_ERROR_CODE(name, code, text) code,
    RPD_ERROR_TABLE(RPD_ERROR_CODE)
#undef RPD_ERROR_CODE
        0 /* the other slot */
};

int rpd_stats_code_slot(int code)
{
    for (int i = 0; i < RPD_STATS_OTHER_SLOT; i++)
        if (codes[i] == code)
            return i;
    return RPD_STATS_OTHER_SLOT;
}

int rpd_stats_slot_code(int slot)
{
    return codes[slot];
}
