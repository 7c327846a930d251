/* SPDX-License-Identifier: MIT */
/*
 * The characters of names and ids (proto/PROTOCOL.md, "Names"): shared by
 * the JSON codec and the URDF reader, which is part of the library.
 */
#include "util/ids.h"

#include <stddef.h>

/* Bit 1: allowed in names; bit 2: allowed in ids. */
static const unsigned char name_chars[128] = {
    ['-'] = 3, ['.'] = 3, ['_'] = 3, [':'] = 2, ['/'] = 2, ['#'] = 2, ['0'] = 3, ['1'] = 3,
    ['2'] = 3, ['3'] = 3, ['4'] = 3, ['5'] = 3, ['6'] = 3, ['7'] = 3, ['8'] = 3, ['9'] = 3,
    ['A'] = 3, ['B'] = 3, ['C'] = 3, ['D'] = 3, ['E'] = 3, ['F'] = 3, ['G'] = 3, ['H'] = 3,
    ['I'] = 3, ['J'] = 3, ['K'] = 3, ['L'] = 3, ['M'] = 3, ['N'] = 3, ['O'] = 3, ['P'] = 3,
    ['Q'] = 3, ['R'] = 3, ['S'] = 3, ['T'] = 3, ['U'] = 3, ['V'] = 3, ['W'] = 3, ['X'] = 3,
    ['Y'] = 3, ['Z'] = 3, ['a'] = 3, ['b'] = 3, ['c'] = 3, ['d'] = 3, ['e'] = 3, ['f'] = 3,
    ['g'] = 3, ['h'] = 3, ['i'] = 3, ['j'] = 3, ['k'] = 3, ['l'] = 3, ['m'] = 3, ['n'] = 3,
    ['o'] = 3, ['p'] = 3, ['q'] = 3, ['r'] = 3, ['s'] = 3, ['t'] = 3, ['u'] = 3, ['v'] = 3,
    ['w'] = 3, ['x'] = 3, ['y'] = 3, ['z'] = 3,
};

static bool valid_chars(const char *s, unsigned char bit)
{
    if (!s)
        return false;
    size_t i = 0;
    for (; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i >= RP_NAME_MAX || c >= 128 || !(name_chars[c] & bit))
            return false;
    }
    return i > 0;
}

bool rp_codec_valid_name(const char *s)
{
    return valid_chars(s, 1) && s[0] != '.';
}

bool rp_codec_valid_id(const char *s)
{
    return valid_chars(s, 2);
}
