/* SPDX-License-Identifier: MIT */
/*
 * The numeric side of the URDF import (urdf_int.h): numbers and vectors as
 * URDF attributes write them, <origin> transforms, and the capsules that
 * enclose a <box>.  urdf.c calls these while it reads a document.
 */
#include "codec/urdf_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers ---------------------------------------------------------- */

/* strtod also reads hex floats, "nan", "inf" and "infinity", and skips
 * leading blanks; a document should mean the same number to every URDF
 * reader, so only the plain decimal alphabet is let through to it.  The
 * daemon never calls setlocale, so strtod's decimal point is '.'. */
static bool decimal_alphabet(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == '.' || ch == 'e' ||
              ch == 'E'))
            return false;
    }
    return true;
}

bool rp_urdf_number_(const char *s, size_t n, double *out)
{
    if (n == 0 || n > RP_URDF_NUMBER_MAX || !decimal_alphabet(s, n))
        return false;
    char buf[RP_URDF_NUMBER_MAX + 1];
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + n || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

bool rp_urdf_vec3_(const char *s, rp_vec3 *out)
{
    double v[3];
    size_t count = 0;
    for (;;) {
        while (blank(*s))
            s++;
        if (!*s)
            break;
        const char *start = s;
        while (*s && !blank(*s))
            s++;
        if (count == 3 || !rp_urdf_number_(start, (size_t)(s - start), &v[count]))
            return false;
        count++;
    }
    if (count != 3)
        return false;
    *out = (rp_vec3){v[0], v[1], v[2]};
    return true;
}

/* ---- origins ---------------------------------------------------------- */

rp_transform rp_urdf_origin_(rp_vec3 xyz, rp_vec3 rpy)
{
    double cr = cos(rpy.x), sr = sin(rpy.x);
    double cp = cos(rpy.y), sp = sin(rpy.y);
    double cy = cos(rpy.z), sy = sin(rpy.z);
    /* Rz(y) * Ry(p) * Rx(r), multiplied out. */
    rp_transform t = {
        .r = {{cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr},
              {sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr},
              {-sp, cp * sr, cp * cr}},
        .t = xyz,
    };
    return t;
}

/* ---- boxes -------------------------------------------------------------- */

/*
 * A box becomes capsules.  Name the edge lengths s1 >= s2 >= s3 along the
 * box axes u1, u2, u3 (ties keep x before y before z).  Cut the box across
 * u2 into n = min(ceil(s2 / s3), 16) slabs of width w = s2 / n.  Slab j's
 * capsule runs along u1 from -s1/2 to +s1/2 through the slab's centre line
 * (u2 = c_j = -s2/2 + (j + 1/2) w, u3 = 0), with radius
 * r = sqrt(w^2 + s3^2) / 2, half the diagonal of the slab's cross-section.
 *
 * Enclosure: a point p of the box lies in some slab j, so |p2 - c_j| <= w/2
 * and |p3| <= s3/2, and -s1/2 <= p1 <= s1/2 puts its projection onto the
 * axis line, (p1, c_j, 0), on the capsule's segment.  Its distance to the
 * segment is then sqrt((p2 - c_j)^2 + p3^2) <= sqrt(w^2/4 + s3^2/4) = r.
 *
 * Why this shape: n = ceil(s2 / s3) makes each slab's cross-section about
 * square (w <= s3), so a capsule overshoots its slab by at most a factor
 * sqrt(2) across; the cap of 16 bounds the shapes a thin plate costs, at
 * the price of fatter capsules for it.  The capsules also stick out past
 * the box's ends by r, the price of round ends.
 *
 * In floating point the slab centres carry a rounding error of a few ulps
 * of s2, which could put an exact corner a hair outside.  So r is enlarged
 * by 1e-12 of itself: since r >= w/2 >= s2/32, that is at least 3e-14 s2,
 * far above those ulps (2.2e-16 s2 each), and geometrically nothing (a
 * picometre on a metre box).
 */
#define BOX_RADIUS_SLACK 1e-12

size_t rp_urdf_box_capsules_(const double size[3], rp_capsule *out)
{
    int ax[3] = {0, 1, 2};
    /* Three-element insertion sort, descending, stable. */
    for (int i = 1; i < 3; i++)
        for (int k = i; k > 0 && size[ax[k]] > size[ax[k - 1]]; k--) {
            int tmp = ax[k];
            ax[k] = ax[k - 1];
            ax[k - 1] = tmp;
        }
    double s1 = size[ax[0]], s2 = size[ax[1]], s3 = size[ax[2]];
    double ratio = s2 / s3; /* >= 1; may overflow to +inf for a paper-thin box */
    size_t n = ratio >= RP_URDF_BOX_MAX ? RP_URDF_BOX_MAX : (size_t)ceil(ratio);
    double w = s2 / (double)n;
    double r = hypot(w, s3) / 2 * (1 + BOX_RADIUS_SLACK);
    for (size_t j = 0; j < n; j++) {
        double a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
        a[ax[0]] = -s1 / 2;
        b[ax[0]] = s1 / 2;
        /* The integer 2j + 1 - n is exact; the product and quotient round once each. */
        a[ax[1]] = b[ax[1]] = s2 * ((double)(2 * j + 1) - (double)n) / (double)(2 * n);
        out[j] = (rp_capsule){{a[0], a[1], a[2]}, {b[0], b[1], b[2]}, r};
    }
    return n;
}
