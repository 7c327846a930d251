/* SPDX-License-Identifier: MIT */
/* Counting, failing allocator behind --wrap; see alloc_fail.h. */
#include "alloc_fail.h"

#include <cjson/cJSON.h>

#include "codec/codec.h"

static bool armed;            /* counting since af_arm */
static bool persistent;       /* every call from fail_at on fails */
static unsigned long fail_at; /* 1-based call number to fail; 0 = none */
static unsigned long calls, failures, json_failures;
static long live;

void af_arm(unsigned long n, bool persist)
{
    armed = true;
    persistent = persist;
    fail_at = n;
    calls = 0;
    failures = 0;
    json_failures = 0;
}

void af_disarm(void)
{
    armed = false;
    fail_at = 0;
}

unsigned long af_calls(void)
{
    return calls;
}
unsigned long af_failures(void)
{
    return failures;
}
unsigned long af_json_failures(void)
{
    return json_failures;
}
long af_live(void)
{
    return live;
}

/* Counts one allocation call; true when it must fail. */
static bool next_fails(void)
{
    if (!armed)
        return false;
    calls++;
    if (fail_at != 0 && (calls == fail_at || (persistent && calls > fail_at))) {
        failures++;
        return true;
    }
    return false;
}

void *__wrap_malloc(size_t n)
{
    if (next_fails())
        return NULL;
    void *p = __real_malloc(n);
    if (p)
        live++;
    return p;
}

void *__wrap_calloc(size_t count, size_t size)
{
    if (next_fails())
        return NULL;
    void *p = __real_calloc(count, size);
    if (p)
        live++;
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (next_fails())
        return NULL; /* like a failed realloc: p stays allocated */
    void *q = __real_realloc(p, n);
    if (q && !p)
        live++;
    return q;
}

void __wrap_free(void *p)
{
    if (p)
        live--;
    __real_free(p);
}

/* cJSON's allocator: the same counting, and a failure is noted for the
 * parser's caller the way the daemon's arena notes it. */
static void *json_malloc(size_t n)
{
    void *p = __wrap_malloc(n);
    if (!p) {
        json_failures++;
        rp_json_note_oom();
    }
    return p;
}

static void json_free(void *p)
{
    __wrap_free(p);
}

void af_install_json_hooks(void)
{
    cJSON_Hooks hooks = {json_malloc, json_free};
    cJSON_InitHooks(&hooks);
}
