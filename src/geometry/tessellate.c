/* SPDX-License-Identifier: MIT */
/*
 * The unit templates of include/repose/tessellate.h: the one tessellation
 * that the viewer and the glTF export place per shape.
 */
#include "repose/tessellate.h"

#include <math.h>
#include <stdbool.h>

static bool resolution_ok(int segments, int rings)
{
    return segments >= RP_TESS_SEGMENTS_MIN && segments <= RP_TESS_SEGMENTS_MAX &&
           rings >= RP_TESS_RINGS_MIN && rings <= RP_TESS_RINGS_MAX;
}

size_t rp_tess_round_vertices(int segments, int rings)
{
    return resolution_ok(segments, rings) ? (size_t)segments * 2u * ((size_t)rings + 1u) : 0;
}

size_t rp_tess_round_triangles(int segments, int rings)
{
    return resolution_ok(segments, rings) ? (size_t)segments * 2u * (2u * (size_t)rings + 1u) : 0;
}

size_t rp_tess_round(int segments, int rings, double *dir, uint8_t *end, uint32_t *tri)
{
    if (!resolution_ok(segments, rings))
        return 0;
    const double half_pi = 1.57079632679489661923, two_pi = 6.28318530717958647692;
    size_t rows = 2u * ((size_t)rings + 1u), k = 0;
    for (size_t row = 0; row < rows; row++) {
        /* Rows 0..rings: a's hemisphere, latitude -90..0; then b's, 0..90. */
        bool at_b = row > (size_t)rings;
        size_t i = at_b ? row - (size_t)rings - 1u : row;
        double lat = at_b ? half_pi * (double)i / rings : -half_pi + half_pi * (double)i / rings;
        double cl = cos(lat), sl = sin(lat);
        if (at_b ? i == 0 : i == (size_t)rings)
            cl = 1.0, sl = 0.0; /* the equators and the poles exactly */
        else if (at_b ? i == (size_t)rings : i == 0)
            cl = 0.0, sl = at_b ? 1.0 : -1.0;
        for (int s = 0; s < segments; s++, k++) {
            double t = two_pi * s / segments, ct = cos(t), st = sin(t);
            if ((4 * s) % segments == 0) { /* a quarter turn: exactly */
                static const double q[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
                ct = q[4 * s / segments][0];
                st = q[4 * s / segments][1];
            }
            double x = cl * ct + 0.0, y = cl * st + 0.0, z = sl; /* (+0.0: no -0 at the poles) */
            double n = sqrt(x * x + y * y + z * z);
            dir[3 * k] = x / n;
            dir[3 * k + 1] = y / n;
            dir[3 * k + 2] = z / n;
            end[k] = at_b;
        }
    }
    size_t m = 0, seg = (size_t)segments;
    for (size_t row = 0; row + 1 < rows; row++)
        for (size_t s = 0; s < seg; s++) {
            uint32_t p0 = (uint32_t)(row * seg + s), p1 = (uint32_t)(row * seg + (s + 1) % seg);
            uint32_t q0 = p0 + (uint32_t)seg, q1 = p1 + (uint32_t)seg;
            uint32_t t[6] = {p0, p1, q1, p0, q1, q0};
            for (int j = 0; j < 6; j++)
                tri[m++] = t[j];
        }
    return k;
}

void rp_tess_box(double corner[RP_TESS_BOX_VERTICES * 3], double normal[RP_TESS_BOX_VERTICES * 3],
                 uint32_t tri[RP_TESS_BOX_TRIANGLES * 3])
{
    static const double corners[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
    size_t k = 0, m = 0;
    for (int i = 0; i < 3; i++)
        for (int side = 0; side < 2; side++) {
            double s = side ? -1.0 : 1.0;
            /* In-face axes a, b with e_a x e_b = s e_i: the corners in this
             * order turn counter-clockwise about the outward normal. */
            int a = s > 0 ? (i + 1) % 3 : (i + 2) % 3, b = s > 0 ? (i + 2) % 3 : (i + 1) % 3;
            uint32_t base = (uint32_t)k;
            for (int c = 0; c < 4; c++, k++) {
                double *p = corner + 3 * k, *n = normal + 3 * k;
                p[i] = s;
                p[a] = corners[c][0];
                p[b] = corners[c][1];
                n[0] = n[1] = n[2] = 0.0;
                n[i] = s;
            }
            uint32_t t[6] = {base, base + 1, base + 2, base, base + 2, base + 3};
            for (int j = 0; j < 6; j++)
                tri[m++] = t[j];
        }
}

void rp_tess_square(double corner[RP_TESS_SQUARE_VERTICES * 3],
                    double normal[RP_TESS_SQUARE_VERTICES * 3],
                    uint32_t tri[RP_TESS_SQUARE_TRIANGLES * 3])
{
    static const double corners[4][2] = {{-0.5, -0.5}, {0.5, -0.5}, {0.5, 0.5}, {-0.5, 0.5}};
    static const uint32_t t[12] = {0, 1, 2, 0, 2, 3, 4, 6, 5, 4, 7, 6};
    for (int k = 0; k < 8; k++) {
        corner[3 * k] = corners[k % 4][0];
        corner[3 * k + 1] = corners[k % 4][1];
        corner[3 * k + 2] = 0.0;
        normal[3 * k] = normal[3 * k + 1] = 0.0;
        normal[3 * k + 2] = k < 4 ? 1.0 : -1.0;
    }
    for (int j = 0; j < 12; j++)
        tri[j] = t[j];
}
