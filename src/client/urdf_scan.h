/* SPDX-License-Identifier: MIT */
/*
 * A small reader of URDF documents for the clients: where the <collision>
 * elements of each link are (byte ranges, for repose-spherize to rewrite
 * them) and which <mesh filename> each holds (for the mesh resolver,
 * client_meshes.c).
 *
 * The client library links only cJSON, so this is a careful scan of the
 * XML rather than expat: comments, CDATA sections, processing
 * instructions and a DOCTYPE (with an internal subset) are skipped;
 * attribute values take either quote and have the five XML entities and
 * character references decoded and literal white space normalised to
 * spaces, as an XML reader gives them to the daemon.  It reads the same
 * elements as the daemon's reader (src/urdf/urdf.c): <link> and its
 * <collision>s only as children of the root <robot>, a <mesh> only as the
 * child of a collision's <geometry>; everything else (visuals, xacro,
 * unknown elements) is skipped with its subtree.  It checks only what it
 * needs to find those (tags that open and close in pairs, quoted
 * attributes); the daemon and rp_urdf_parse judge the document itself.
 *
 * Library-internal: shared with repose-spherize (src/cli/spherize.c).
 */
#ifndef REPOSE_CLIENT_URDF_SCAN_H
#define REPOSE_CLIENT_URDF_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One <collision> of a link. */
typedef struct rp_urdf_scan_collision {
    size_t start;            /* offset of its '<' */
    size_t end;              /* offset just past the '>' that ends it (of </collision> or "/>") */
    size_t line_start;       /* offset of the first byte of the line `start` is on */
    unsigned long line;      /* 1-based line of `start` */
    size_t link;             /* index into rp_urdf_scan.links */
    size_t index;            /* among the link's <collision>s, from 0 (the daemon's LINK#k) */
    char *mesh_uri;          /* its <geometry><mesh filename>, decoded; NULL for other geometry */
    unsigned long mesh_line; /* the line of that <mesh> */
} rp_urdf_scan_collision;

/* The links and collisions of a document, in document order. */
typedef struct rp_urdf_scan {
    char **links; /* the name attribute of each <link> ("" when it has none) */
    size_t n_links;
    rp_urdf_scan_collision *colls;
    size_t n_colls;
} rp_urdf_scan;

/* Scans doc[0..len) into *out (zeroed first; free with
 * rp_urdf_scan_free_).  A document whose root is not <robot> has no links
 * here.  False (after freeing what it had made) when the XML is too broken
 * to follow, with a sentence naming the line in why[0..cap), e.g. "line 7:
 * </geometry> closes <collision>"; and when out of memory ("out of
 * memory"). */
bool rp_urdf_scan_(const char *doc, size_t len, rp_urdf_scan *out, char *why, size_t cap);

/* Frees what rp_urdf_scan_ made and zeroes *s.  Safe on a zeroed scan. */
void rp_urdf_scan_free_(rp_urdf_scan *s);

/* Reads stream f to its end (malloc'ed, NUL-terminated, its length in
 * *len; f is not closed); NULL with errno set (client_meshes.c, also for
 * repose-spherize). */
unsigned char *rp_client_read_stream_(FILE *f, size_t *len);

#endif /* REPOSE_CLIENT_URDF_SCAN_H */
