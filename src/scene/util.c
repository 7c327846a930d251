/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the store, queries and checks: binary search over the
 * store's name-sorted arrays, and a stable sort that carries a context
 * (C11's qsort has none, and pair orders depend on the scene's ids).
 */
#include <stdlib.h>
#include <string.h>

#include "scene_int.h"

size_t rp_name_lower_bound_(void *const *items, size_t count,
                            const char *(*name_of)(const void *item), const char *name, bool *found)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(name_of(items[mid]), name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < count && strcmp(name_of(items[lo]), name) == 0;
    return lo;
}

/* Merges sorted runs a[0..h) and a[h..n) through tmp. */
static void merge_runs(char *a, char *tmp, size_t h, size_t n, size_t size, rp_ctx_cmp cmp,
                       const void *ctx)
{
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        /* Take from the right run only when strictly smaller: stable. */
        if (cmp(a + j * size, a + i * size, ctx) < 0)
            memcpy(tmp + (k++) * size, a + (j++) * size, size);
        else
            memcpy(tmp + (k++) * size, a + (i++) * size, size);
    }
    memcpy(tmp + k * size, a + i * size, (h - i) * size);
    k += h - i;
    memcpy(tmp + k * size, a + j * size, (n - j) * size);
    memcpy(a, tmp, n * size);
}

static void sort_rec(char *a, char *tmp, size_t n, size_t size, rp_ctx_cmp cmp, const void *ctx)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_rec(a, tmp, h, size, cmp, ctx);
    sort_rec(a + h * size, tmp, n - h, size, cmp, ctx);
    merge_runs(a, tmp, h, n, size, cmp, ctx);
}

bool rp_sort_ctx_(void *base, size_t n, size_t size, rp_ctx_cmp cmp, const void *ctx)
{
    if (n < 2)
        return true;
    char *tmp = malloc(n * size);
    if (!tmp)
        return false;
    sort_rec(base, tmp, n, size, cmp, ctx);
    free(tmp);
    return true;
}
