/* SPDX-License-Identifier: MIT */
/*
 * The box tests of the multi-query walks (bvh.c), written once over "lanes"
 * of queries and included twice by bvh.c: with one double per lane (the
 * portable code) and with four per __m256d (the AVX2 code, compiled under
 * target("avx2")).  Both run the same operations in the same order (no
 * fused multiply-add), so they give the same results bit for bit.
 *
 * The includer defines, before each inclusion:
 *   PASS_FN, PASS_BALL_FN  the names of the two functions
 *   PASS_ATTR              their attributes
 *   LANES                  queries per lane vector (1 or 4)
 *   lane_d, lane_m         a vector of doubles, and of comparison results
 *   L_SET1(x)  L_LOAD(p)  L_ADD(a, b)  L_SUB(a, b)  L_MUL(a, b)
 *   L_MAX(a, b)            a > b ? a : b, lane by lane (as maxpd)
 *   L_GT, L_GE, L_LT       comparisons (ordered, false on NaN)
 *   L_OR(a, b)             on comparison results
 *   L_IF(m, a, b)          a where m holds, b elsewhere (comparison results;
 *                          the portable code evaluates only the one taken,
 *                          so the arguments repeat subexpressions rather
 *                          than compute both sides up front)
 *   L_KEEP(m, x)           x where m holds, 0.0 elsewhere
 *   L_BITS(m)              the lanes where m holds, as bits
 * and bvh.c provides rp_multi, rp_balls and test_box.  No include guard:
 * included once per instantiation; the parameters are undefined at the end.
 */

#ifndef PASS_NEXT_GROUP
/* Takes the lowest group of LANES queries with a bit in mask out of it: g,
 * its index, and bits, its queries' bits (one query: the lowest bit). */
#define PASS_NEXT_GROUP(mask, g, bits)                                                             \
    unsigned g, bits;                                                                              \
    if (LANES == 1) {                                                                              \
        g = (unsigned)__builtin_ctzll(mask);                                                       \
        bits = 1;                                                                                  \
        mask &= mask - 1;                                                                          \
    } else {                                                                                       \
        g = (unsigned)__builtin_ctzll(mask) / LANES;                                               \
        bits = (unsigned)(mask >> (LANES * g)) & ((1u << LANES) - 1);                              \
        mask &= ~((uint64_t)((1u << LANES) - 1) << (LANES * g));                                   \
    }
#endif

/* The queries of `mask` that box b does not exclude below `threshold`
 * (rp_key_excludes_ with ties losing unless `ties`): node_key's arithmetic
 * for each query.  A query's sum adds d*d only where d > 0. */
static PASS_ATTR uint64_t PASS_FN(const rp_multi *q, uint64_t mask, const test_box *b,
                                  double threshold, bool ties)
{
    uint64_t keep = 0;
    lane_d zero = L_SET1(0.0);
    lane_d blo[3] = {L_SET1(b->lo[0]), L_SET1(b->lo[1]), L_SET1(b->lo[2])};
    lane_d bhi[3] = {L_SET1(b->hi[0]), L_SET1(b->hi[1]), L_SET1(b->hi[2])};
    lane_d br = L_SET1(b->r), th = L_SET1(threshold);
    /* rp_key_excludes_: apart (sum > 0) is excluded when threshold < 0, or
     * when sum > threshold^2 * SQUARE_SLACK; overlapping (key = -(r + br)
     * <= 0) when key > threshold, or equals it and ties lose. */
    lane_d t2 = L_SET1(threshold < 0.0 ? -1.0 : threshold * threshold * RP_SQUARE_SLACK);
    while (mask) {
        PASS_NEXT_GROUP(mask, g, bits);
        lane_d sum = zero;
        for (int a = 0; a < 3; a++) {
            lane_d d1 = L_SUB(blo[a], L_LOAD(&q->hi[a][LANES * g]));
            lane_d d2 = L_SUB(L_LOAD(&q->lo[a][LANES * g]), bhi[a]);
            lane_d d = L_MAX(d2, d1);
            sum = L_ADD(sum, L_KEEP(L_GT(d, zero), L_MUL(d, d)));
        }
        /* Apart: the sum against t2; overlapping: key = -(r + br). */
        lane_m apart = L_GT(sum, zero);
        lane_m out = L_IF(apart, L_GT(sum, t2),
                          ties ? L_GT(L_SUB(zero, L_ADD(L_LOAD(&q->r[LANES * g]), br)), th)
                               : L_GE(L_SUB(zero, L_ADD(L_LOAD(&q->r[LANES * g]), br)), th));
        keep |= (uint64_t)(bits & ~L_BITS(out)) << (LANES * g);
    }
    return keep;
}

/* PASS_FN for balls: a ball is excluded by the box when the distance from
 * its centre to the box less its radius is at least the threshold (the
 * box's own padding and the ball's keep this below every computed
 * distance), or when they overlap and even the deepest penetration,
 * -(r + the box's radius bound), is.  Coordinates up to 1e300 (the
 * callers' range) keep the squares from overflowing into NaN. */
static PASS_ATTR uint64_t PASS_BALL_FN(const rp_balls *q, uint64_t mask, const test_box *b,
                                       double threshold, bool ties)
{
    uint64_t keep = 0;
    lane_d zero = L_SET1(0.0);
    lane_d blo[3] = {L_SET1(b->lo[0]), L_SET1(b->lo[1]), L_SET1(b->lo[2])};
    lane_d bhi[3] = {L_SET1(b->hi[0]), L_SET1(b->hi[1]), L_SET1(b->hi[2])};
    lane_d br = L_SET1(b->r), th = L_SET1(threshold), slack = L_SET1(RP_SQUARE_SLACK);
    while (mask) {
        PASS_NEXT_GROUP(mask, g, bits);
        lane_d s2 = zero;
        for (int a = 0; a < 3; a++) {
            lane_d c = L_LOAD(&q->c[a][LANES * g]);
            lane_d d = L_MAX(L_SUB(c, bhi[a]), L_SUB(blo[a], c));
            s2 = L_ADD(s2, L_KEEP(L_GT(d, zero), L_MUL(d, d)));
        }
        /* Apart: t = threshold + r against the gap; overlapping: the
         * deepest penetration -(r + br) against the threshold. */
        lane_d r = L_LOAD(&q->r[LANES * g]);
        lane_m apart = L_GT(s2, zero);
        lane_m out =
            L_IF(apart,
                 L_OR(L_LT(L_ADD(th, r), zero),
                      L_GT(s2, L_MUL(L_MUL(L_ADD(th, r), L_ADD(th, r)), slack))),
                 ties ? L_GT(L_SUB(zero, L_ADD(r, br)), th) : L_GE(L_SUB(zero, L_ADD(r, br)), th));
        keep |= (uint64_t)(bits & ~L_BITS(out)) << (LANES * g);
    }
    return keep;
}

#undef PASS_FN
#undef PASS_BALL_FN
#undef PASS_ATTR
#undef LANES
#undef lane_d
#undef lane_m
#undef L_SET1
#undef L_LOAD
#undef L_ADD
#undef L_SUB
#undef L_MUL
#undef L_MAX
#undef L_GT
#undef L_GE
#undef L_LT
#undef L_OR
#undef L_IF
#undef L_KEEP
#undef L_BITS
