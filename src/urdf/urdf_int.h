/* SPDX-License-Identifier: MIT */
/*
 * Internals of the URDF import shared by urdf_elems.c (the XML side) and
 * urdf_geom.c (numbers and origins), and used directly by
 * tests/unit/test_urdf.c.
 */
#ifndef REPOSE_CODEC_URDF_INT_H
#define REPOSE_CODEC_URDF_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "repose/geometry.h"

/* Longest number token read, in bytes; longer ones are refused.  Enough for
 * the 17 significant digits a double needs plus sign, point and exponent,
 * with room for the over-long decimals that exporters write. */
#define RP_URDF_NUMBER_MAX 64

/* Parses s[0..n) as one decimal number: only [0-9+-.eE] (no hex, "nan",
 * "inf", or blanks), all of it consumed by strtod, finite ("1e999" is
 * refused; an underflow to a subnormal or zero is accepted).  False
 * otherwise; *out is then unspecified. */
bool rp_urdf_number_(const char *s, size_t n, double *out);

/* Parses "x y z": exactly three numbers as above, separated and optionally
 * surrounded by blanks (space, tab, CR, LF). */
bool rp_urdf_vec3_(const char *s, rp_vec3 *out);

/* The transform of a URDF <origin xyz rpy>: rotation Rz(yaw)*Ry(pitch)*
 * Rx(roll) (fixed axes: roll about x first), then translation xyz. */
rp_transform rp_urdf_origin_(rp_vec3 xyz, rp_vec3 rpy);

#endif /* REPOSE_CODEC_URDF_INT_H */
