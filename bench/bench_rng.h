/* SPDX-License-Identifier: MIT */
/*
 * Deterministic random numbers for the benchmarks (splitmix64): the same
 * seed gives the same inputs on every run and machine.
 */
#ifndef REPOSE_BENCH_RNG_H
#define REPOSE_BENCH_RNG_H

#include <stdint.h>

static inline uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double rng_unit(uint64_t *state)
{
    return (double)(rng_next(state) >> 11) * 0x1.0p-53;
}

#endif /* REPOSE_BENCH_RNG_H */
