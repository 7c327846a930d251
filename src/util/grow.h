/* SPDX-License-Identifier: MIT */
/*
 * Geometric growth of heap arrays: one rule (double the capacity, starting
 * from a minimum) for the library's growable arrays (query pairs, check
 * violations, the store's scene list, the reply writer's buffer), so that
 * appending is amortised O(1) everywhere and the overflow checks live in one
 * place.
 *
 * Library-internal (hidden in the shared library); nothing here is public.
 */
#ifndef REPOSE_UTIL_GROW_H
#define REPOSE_UTIL_GROW_H

#include <stddef.h>

/* Reallocates arr (NULL for none) to hold at least `need` elements of
 * `size` bytes: the capacity *cap doubles, from min_cap (>= 1) when it is 0,
 * until it suffices, and *cap is updated.  Returns the new array, or NULL
 * when out of memory or the byte count would overflow; arr (still the
 * caller's) and *cap are then unchanged.  Call it when need > *cap. */
void *rp_grow_(void *arr, size_t *cap, size_t need, size_t size, size_t min_cap);

#endif /* REPOSE_UTIL_GROW_H */
