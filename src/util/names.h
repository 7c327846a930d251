/* SPDX-License-Identifier: MIT */
/*
 * How near a mistyped method name is to a real one, for "did you mean":
 * the daemon's -32601 reply (data.suggestion, proto/PROTOCOL.md "Errors")
 * and repose-cli's hint after one.  Header-only, like utf8.h, so that the
 * daemon and the CLI share it without linking anything.
 *
 * Library-internal; nothing here is public.
 */
#ifndef REPOSE_UTIL_NAMES_H
#define REPOSE_UTIL_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The longest name compared; longer ones are near nothing. */
#define RP_NAME_MAX_COMPARED 64

static inline unsigned char rp_name_lower_(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Levenshtein distance between a and b, ignoring ASCII case; SIZE_MAX when
 * either is longer than RP_NAME_MAX_COMPARED. */
static inline size_t rp_name_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > RP_NAME_MAX_COMPARED || lb > RP_NAME_MAX_COMPARED)
        return SIZE_MAX;
    size_t row[RP_NAME_MAX_COMPARED + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (rp_name_lower_((unsigned char)a[i - 1]) !=
                                  rp_name_lower_((unsigned char)b[j - 1]));
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* How far name is from the method `known`: the edit distance, or 1 when
 * name is the part after the dot, in any case (`list` for scene.list). */
static inline size_t rp_name_distance(const char *name, const char *known)
{
    const char *dot = strrchr(known, '.');
    if (dot && rp_name_edit_distance(name, dot + 1) == 0)
        return 1;
    return rp_name_edit_distance(name, known);
}

/* Whether a best distance d is near enough to suggest for a name of len
 * bytes: only the case differs (0), at most 2 edits, or a third of it. */
static inline bool rp_name_is_near(size_t d, size_t len)
{
    return d != SIZE_MAX && (d <= 2 || d * 3 <= len);
}

#endif
