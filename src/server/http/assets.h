/* SPDX-License-Identifier: MIT */
/*
 * The files reposed serves over --http besides /metrics, /healthz and /ws:
 * the viewer page, its script and the vendored three.js, embedded at build
 * time (embed.c; docs/ARCHITECTURE.md, "The viewer").
 */
#ifndef RPD_ASSETS_H
#define RPD_ASSETS_H

#include <stddef.h>

typedef struct rpd_asset {
    const char *path; /* the URL path, "/" for the page */
    const char *type; /* Content-Type */
    const char *data;
    size_t len;
    const char *gz; /* the same gzip-compressed, for Accept-Encoding: gzip */
    size_t gz_len;
} rpd_asset;

extern const rpd_asset rpd_assets[];
extern const size_t rpd_asset_count;

#endif /* RPD_ASSETS_H */
