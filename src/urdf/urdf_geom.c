/* SPDX-License-Identifier: MIT */
/*
 * The numeric side of the URDF import (urdf_int.h): numbers and vectors as
 * URDF attributes write them, and <origin> transforms.  urdf_elems.c calls
 * these while it reads a document.
 */
#include "urdf/urdf_int.h"

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
