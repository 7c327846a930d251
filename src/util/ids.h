/* SPDX-License-Identifier: MIT */
/*
 * Names and ids (proto/PROTOCOL.md, "Names"): 1..RP_NAME_MAX characters.
 * Scene and model names use [A-Za-z0-9_.-] and may not start with '.';
 * shape and link ids use [A-Za-z0-9_.:/#-].  Library-internal (the codec
 * and the URDF reader use it); nothing here is public.
 */
#ifndef REPOSE_UTIL_IDS_H
#define REPOSE_UTIL_IDS_H

#include <stdbool.h>

#define RP_NAME_MAX 128

bool rp_codec_valid_name(const char *s);
bool rp_codec_valid_id(const char *s);

#endif /* REPOSE_UTIL_IDS_H */
