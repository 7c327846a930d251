/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the base64 decoder of binary arrays on the wire
 * (src/codec/base64.c; a cloud's points_f32, proto/PROTOCOL.md, Point
 * clouds).
 *
 * The input is read twice.  As text: rp_base64_decode must accept exactly
 * what a reference decoder written here (bit by bit, one character at a
 * time) accepts, give the same bytes, and what it accepts must encode back
 * to the same text (one text per byte string).  As bytes: their encoding
 * must decode back to them.
 */
#include "fuzz_util.h"

#include "codec/codec.h"

/* The reference: strict RFC 4648 with padding; false when malformed. */
static bool reference(const uint8_t *s, size_t n, uint8_t *out, size_t *n_out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    *n_out = 0;
    if (n % 4)
        return false;
    size_t pad = 0;
    if (n >= 1 && s[n - 1] == '=')
        pad++;
    if (n >= 2 && s[n - 2] == '=')
        pad++;
    uint32_t bits = 0;
    int have = 0;
    for (size_t i = 0; i < n - pad; i++) {
        const char *p = s[i] ? strchr(a, s[i]) : NULL;
        if (!p)
            return false;
        bits = bits << 6 | (uint32_t)(p - a);
        have += 6;
        if (have >= 8) {
            have -= 8;
            out[(*n_out)++] = (uint8_t)(bits >> have);
            bits &= (1u << have) - 1;
        }
    }
    /* Leftover bits (2 with one '=', 4 with two) must be zero. */
    return bits == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *mine = malloc(size + 1), *ref = malloc(size + 1);
    char *text = malloc(rp_base64_encoded_len(size) + 1);
    FUZZ_CHECK(mine && ref && text, "out of memory");
    size_t n_mine, n_ref;
    const char *why = NULL;
    bool ok = rp_base64_decode((const char *)data, size, mine, &n_mine, &why);
    bool ok_ref = reference(data, size, ref, &n_ref);
    FUZZ_CHECK(ok == ok_ref, "decoder says %d, the reference %d", ok, ok_ref);
    if (ok) {
        FUZZ_CHECK(n_mine == n_ref && !memcmp(mine, ref, n_mine), "different bytes");
        FUZZ_CHECK(n_mine <= rp_base64_decoded_max(size), "wrote past the bound");
        rp_base64_encode(mine, n_mine, text);
        FUZZ_CHECK(rp_base64_encoded_len(n_mine) == size && !memcmp(text, data, size),
                   "accepted text is not the encoding of its bytes");
    } else {
        FUZZ_CHECK(why && why[0], "a refusal without a reason");
    }
    /* The input as bytes: encoded, then decoded back. */
    size_t len = rp_base64_encoded_len(size);
    rp_base64_encode(data, size, text);
    uint8_t *back = malloc(rp_base64_decoded_max(len) + 1);
    FUZZ_CHECK(back, "out of memory");
    size_t n_back;
    FUZZ_CHECK(rp_base64_decode(text, len, back, &n_back, &why), "own encoding refused: %s", why);
    FUZZ_CHECK(n_back == size && !memcmp(back, data, size), "round trip changed the bytes");
    free(back);
    free(mine);
    free(ref);
    free(text);
    return 0;
}
