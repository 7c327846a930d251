/* SPDX-License-Identifier: MIT */
/* Geometric growth of heap arrays; see grow.h. */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

void *rp_grow_(void *arr, size_t *cap, size_t need, size_t size, size_t min_cap)
{
    size_t c = *cap ? *cap : min_cap;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return NULL;
        c *= 2;
    }
    if (size && c > SIZE_MAX / size)
        return NULL;
    void *p = realloc(arr, c * size);
    if (!p)
        return NULL;
    *cap = c;
    return p;
}
