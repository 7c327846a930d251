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
static uint64_t bucket_upper(int b)
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
}

uint64_t rpd_stats_quantile(const rpd_stats *s, double q)
{
    if (s->latency_count == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)(s->latency_count - 1)) + 1, seen = 0;
    for (int b = 0; b < RPD_LAT_BUCKETS; b++) {
        seen += s->latency[b];
        if (seen >= rank)
            return bucket_upper(b);
    }
    return bucket_upper(RPD_LAT_BUCKETS - 1);
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
