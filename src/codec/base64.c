/* SPDX-License-Identifier: MIT */
/*
 * Base64 (RFC 4648, the standard alphabet, '=' padding) for binary arrays
 * on the wire: a cloud's `points_f32` (proto/PROTOCOL.md, Point clouds).
 * Decoding is strict: no whitespace, no line breaks, padding to a multiple
 * of four characters, and the unused bits of the last group zero, so one
 * byte string has exactly one text and a reply's text put back decodes to
 * the same bytes.
 */
#include <stdint.h>
#include <string.h>

#include "codec.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* 0..63 for a character of the alphabet, 64 for anything else (a decode
 * of a camera frame reads 5 MB of text: one lookup a character). */
static const unsigned char table[256] = {
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 62, 64, 64, 64, 63,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 64, 64, 64, 64, 64, 64, 64, 0,  1,  2,  3,  4,  5,  6,
    7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 64, 64, 64, 64, 64,
    64, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48,
    49, 50, 51, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
};

static unsigned char value_of(unsigned char c)
{
    return table[c];
}

size_t rp_base64_decoded_max(size_t len)
{
    return len / 4 * 3;
}

bool rp_base64_decode(const char *s, size_t len, unsigned char *out, size_t *n_out,
                      const char **why)
{
    *n_out = 0;
    if (len % 4) {
        *why = "must be base64 whose length is a multiple of 4";
        return false;
    }
    size_t n = 0, i = 0;
    /* Whole groups but the last (which may hold padding): four table
     * lookups, one test of their union for a bad character. */
    const unsigned char *u = (const unsigned char *)s;
    for (; i + 4 < len; i += 4) {
        uint32_t a = table[u[i]], b = table[u[i + 1]], c = table[u[i + 2]], d = table[u[i + 3]];
        if ((a | b | c | d) & 64) {
            *why = "must be base64 (A-Z a-z 0-9 + /, '=' padding only at the end)";
            return false;
        }
        uint32_t g = a << 18 | b << 12 | c << 6 | d;
        out[n] = (unsigned char)(g >> 16);
        out[n + 1] = (unsigned char)(g >> 8);
        out[n + 2] = (unsigned char)g;
        n += 3;
    }
    for (; i < len; i += 4) {
        unsigned char v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == len && k >= 2) {
                pad++;
                v[k] = 0;
                continue;
            }
            if (pad || (v[k] = value_of(c)) == 64) {
                *why = "must be base64 (A-Z a-z 0-9 + /, '=' padding only at the end)";
                return false;
            }
        }
        uint32_t g = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | v[3];
        if ((pad == 1 && (g & 0xff)) || (pad == 2 && (g & 0xffff))) {
            *why = "must be base64 with the unused bits of its last group zero";
            return false;
        }
        out[n++] = (unsigned char)(g >> 16);
        if (pad < 2)
            out[n++] = (unsigned char)(g >> 8);
        if (pad < 1)
            out[n++] = (unsigned char)g;
    }
    *n_out = n;
    return true;
}

size_t rp_base64_encoded_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

void rp_base64_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t g = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[g >> 18];
        out[o++] = alphabet[(g >> 12) & 63];
        out[o++] = alphabet[(g >> 6) & 63];
        out[o++] = alphabet[g & 63];
    }
    if (i < n) {
        uint32_t g = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = alphabet[g >> 18];
        out[o++] = alphabet[(g >> 12) & 63];
        out[o++] = i + 1 < n ? alphabet[(g >> 6) & 63] : '=';
        out[o++] = '=';
    }
}
