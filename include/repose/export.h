/* SPDX-License-Identifier: MIT */
/*
 * repose — the export macro of the public API.
 *
 * The libraries are built with -fvisibility=hidden, so only what a public
 * header declares with RP_API is exported from librepose.so and
 * librepose_client.so; helpers shared between the library's own files
 * (rp_scene_nearest_, rp_client_fail_, …) stay internal.  For users of the
 * headers the attribute changes nothing: it matches how the symbol was
 * built, whether they link the shared or the static library.
 */
#ifndef REPOSE_EXPORT_H
#define REPOSE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define RP_API __attribute__((visibility("default")))
#else
#define RP_API
#endif

#endif /* REPOSE_EXPORT_H */
