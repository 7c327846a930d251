/* SPDX-License-Identifier: MIT */
/*
 * Forward kinematics of four configurations at once, one per AVX2 lane
 * (compiled with -mavx2; called by kin.c's rp_kin_frames_n_ only when
 * rp_simd_level_ says the CPU has it).  Every lane does the operations of
 * kin.c's scalar compose and apply_motion in the same order, products and
 * sums apart (the build never fuses them), so a lane's frames are the
 * scalar frames bit for bit; test_kin compares them at every level.
 */
#include <immintrin.h>
#include <stddef.h>

#include "model_int.h"

/* The stores below write an rp_transform as 12 doubles in a row. */
_Static_assert(sizeof(rp_transform) == 12 * sizeof(double) &&
                   offsetof(rp_transform, t) == 9 * sizeof(double),
               "rp_transform is r[3][3] then t, 12 doubles without padding");

/* 12 lanes-of-4 per frame: r[0][0..2], r[1][0..2], r[2][0..2], t.x, t.y,
 * t.z. */
typedef struct lanes_tf {
    __m256d v[12];
} lanes_tf;

static inline __m256d bc(double x)
{
    return _mm256_set1_pd(x);
}

static inline __m256d add(__m256d a, __m256d b)
{
    return _mm256_add_pd(a, b);
}

static inline __m256d sub(__m256d a, __m256d b)
{
    return _mm256_sub_pd(a, b);
}

static inline __m256d mul(__m256d a, __m256d b)
{
    return _mm256_mul_pd(a, b);
}

/* out = a * b for b the same in every lane (kin.c compose). */
static inline void compose_bc(const lanes_tf *a, const rp_transform *b, lanes_tf *out)
{
    for (int i = 0; i < 3; i++) {
        __m256d a0 = a->v[3 * i], a1 = a->v[3 * i + 1], a2 = a->v[3 * i + 2];
        for (int k = 0; k < 3; k++)
            out->v[3 * i + k] =
                add(add(mul(a0, bc(b->r[0][k])), mul(a1, bc(b->r[1][k]))), mul(a2, bc(b->r[2][k])));
    }
    for (int i = 0; i < 3; i++)
        out->v[9 + i] = add(add(add(mul(a->v[3 * i], bc(b->t.x)), mul(a->v[3 * i + 1], bc(b->t.y))),
                                mul(a->v[3 * i + 2], bc(b->t.z))),
                            a->v[9 + i]);
}

/* kin.c mix_columns. */
static inline void mix(lanes_tf *p, int u, int w, __m256d c, __m256d s)
{
    for (int i = 0; i < 3; i++) {
        __m256d pu = p->v[3 * i + u], pw = p->v[3 * i + w];
        p->v[3 * i + u] = add(mul(c, pu), mul(s, pw));
        p->v[3 * i + w] = sub(mul(c, pw), mul(s, pu));
    }
}

/* kin.c apply_motion, lane by lane. */
static inline void motion(const rp_kin_joint *j, __m256d v, __m256d s, __m256d c, lanes_tf *p)
{
    if (j->type == RP_JOINT_PRISMATIC) {
        __m256d d[3] = {mul(bc(j->axis.x), v), mul(bc(j->axis.y), v), mul(bc(j->axis.z), v)};
        for (int i = 0; i < 3; i++)
            p->v[9 + i] =
                add(p->v[9 + i], add(add(mul(p->v[3 * i], d[0]), mul(p->v[3 * i + 1], d[1])),
                                     mul(p->v[3 * i + 2], d[2])));
        return;
    }
    switch (j->axis_kind) {
    case 0:
        mix(p, 1, 2, c, s);
        return;
    case 1:
        mix(p, 2, 0, c, s);
        return;
    case 2:
        mix(p, 0, 1, c, s);
        return;
    default:
        break;
    }
    __m256d x = bc(j->axis.x), y = bc(j->axis.y), z = bc(j->axis.z), k = sub(bc(1.0), c);
    __m256d kx = mul(k, x), ky = mul(k, y), kz = mul(k, z);
    __m256d m[3][3] = {
        {add(c, mul(kx, x)), sub(mul(kx, y), mul(s, z)), add(mul(kx, z), mul(s, y))},
        {add(mul(kx, y), mul(s, z)), add(c, mul(ky, y)), sub(mul(ky, z), mul(s, x))},
        {sub(mul(kx, z), mul(s, y)), add(mul(ky, z), mul(s, x)), add(c, mul(kz, z))}};
    for (int i = 0; i < 3; i++) {
        __m256d a0 = p->v[3 * i], a1 = p->v[3 * i + 1], a2 = p->v[3 * i + 2];
        for (int q = 0; q < 3; q++)
            p->v[3 * i + q] = add(add(mul(a0, m[0][q]), mul(a1, m[1][q])), mul(a2, m[2][q]));
    }
}

void rp_kin_frames4_avx2_(const rp_model *m, const rp_transform *base, const double *v,
                          const double *sn, const double *cs, rp_transform *const out[4])
{
    const rp_kin_joint *moving = m->kin->moving;
    size_t nf = m->frame_count;
    lanes_tf f[RP_KIN4_MAX_FRAMES], b;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            b.v[3 * i + k] = bc(base->r[i][k]);
    b.v[9] = bc(base->t.x);
    b.v[10] = bc(base->t.y);
    b.v[11] = bc(base->t.z);
    for (size_t k = 0; k < nf; k++) {
        const rp_kin_joint *j = &moving[k];
        compose_bc(j->parent < 0 ? &b : &f[j->parent], &j->pre, &f[k]);
        motion(j, _mm256_loadu_pd(v + 4 * k), _mm256_loadu_pd(sn + 4 * k),
               _mm256_loadu_pd(cs + 4 * k), &f[k]);
        /* An rp_transform is the 12 doubles r[0][0..2], r[1][0..2],
         * r[2][0..2], t in the order of v[]: three 4x4 transposes give
         * each lane's 12 values, four at a time. */
        for (int g = 0; g < 3; g++) {
            __m256d a = f[k].v[4 * g], b2 = f[k].v[4 * g + 1], c = f[k].v[4 * g + 2],
                    d = f[k].v[4 * g + 3];
            __m256d ab_lo = _mm256_unpacklo_pd(a, b2), ab_hi = _mm256_unpackhi_pd(a, b2);
            __m256d cd_lo = _mm256_unpacklo_pd(c, d), cd_hi = _mm256_unpackhi_pd(c, d);
            __m256d l0 = _mm256_permute2f128_pd(ab_lo, cd_lo, 0x20);
            __m256d l1 = _mm256_permute2f128_pd(ab_hi, cd_hi, 0x20);
            __m256d l2 = _mm256_permute2f128_pd(ab_lo, cd_lo, 0x31);
            __m256d l3 = _mm256_permute2f128_pd(ab_hi, cd_hi, 0x31);
            _mm256_storeu_pd((double *)&out[0][k] + 4 * g, l0);
            _mm256_storeu_pd((double *)&out[1][k] + 4 * g, l1);
            _mm256_storeu_pd((double *)&out[2][k] + 4 * g, l2);
            _mm256_storeu_pd((double *)&out[3][k] + 4 * g, l3);
        }
    }
}
