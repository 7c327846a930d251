/* SPDX-License-Identifier: MIT */
/*
 * repose-cli's params: the words after METHOD on the command line, and the
 * `METHOD [PARAMS]` lines it reads from stdin, turned into the params JSON
 * of a call.  Params are one JSON object (PARAMS-JSON, in which `@FILE` in
 * place of a value is the JSON in FILE and `@@FILE` the text of FILE as a
 * string) or KEY=VALUE words (VALUE is JSON when it parses as JSON, @FILE
 * for the JSON in FILE, @@FILE for the text of FILE as a string, else a
 * string; FILE is the rest of the word).  @@FILE must be UTF-8 without NUL
 * bytes.
 *
 * Also the points of a cloud file, read by main.c, for `cloud put`.
 *
 * No output and no I/O besides reading @FILE and @@FILE: a refusal comes
 * back as text in `why` for main.c to print, so tests/fuzz/fuzz_cli_params.c
 * can call everything here directly.
 */
#ifndef REPOSE_CLI_PARAMS_H
#define REPOSE_CLI_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

/* The size of the buffer that receives why params were refused. */
#define CLI_WHY_MAX 1024

/* The params JSON text for the n words after METHOD: NULL with *bad false
 * for no words; one JSON object (a first word starting with '{', or '[' to
 * be told it must be an object); or KEY=VALUE words, each key once.  The
 * result is one JSON object (by cJSON) in valid UTF-8, malloc'ed (the caller
 * frees it).  NULL with *bad true when the words are refused, with the
 * reason, NUL-terminated, in why (CLI_WHY_MAX bytes; may be cut). */
char *cli_words_params(char *const *words, int n, bool *bad, char *why);

/* Splits a line read from stdin in place: drops a trailing "\r\n", finds
 * METHOD (the first blank-separated word) and the rest after the blanks
 * that follow it.  False for a blank line or a '#' comment (nothing to
 * run); else *method and *rest point into line. */
bool cli_split_line(char *line, char **method, char **rest);

/* The params JSON text for the rest of a line after METHOD (modified in
 * place): one JSON object, which may hold blanks, when it starts with '{'
 * or '[', else KEY=VALUE words split by cli_split_words.  As
 * cli_words_params otherwise. */
char *cli_line_params(char *rest, bool *bad, char *why);

/* Splits p into words in place, at blanks (' ', '\t') outside JSON strings
 * and brackets, so that `a={"x": 1} b="two words"` is two words.  Returns
 * the count and a malloc'ed array in *out (NULL for none; the caller frees
 * it); -1 when out of memory. */
int cli_split_words(char *p, char ***out);

/* The points of a cloud file (`repose-cli cloud put`, proto/PROTOCOL.md,
 * Point clouds): text[0..len), with text[len] == '\0', is lines of three
 * numbers x y z (metres) separated by blanks (any white space but '\n';
 * so "\r\n" ends a line too); blank lines and lines whose first non-blank
 * is '#' are skipped.  Each number is read by strtod (in the C locale) as a
 * double and rounded to float, as the daemon rounds the numbers of JSON
 * `points`.  Returns x, y, z of the *n points in turn (malloc'ed, the
 * caller frees it; not NULL for no points), or NULL with the reason in why,
 * naming the line ("line 3: ..."): a line without exactly three numbers, a
 * word that is not a number, a value that is not finite or is beyond
 * float32's range, a NUL byte, or no memory. */
float *cli_parse_points(const char *text, size_t len, size_t *n, char *why);

/* The flags of `model.put ... --urdf FILE`: a URDF file sent with its
 * SRDF and the bytes of its mesh files (rp_client_urdf_params). */
typedef struct cli_urdf_flags {
    const char *urdf;          /* --urdf FILE; NULL when not given */
    const char *srdf;          /* --srdf FILE */
    const char **package_path; /* --package-path DIR, each in order (malloc'ed; free it) */
    size_t n_package_path;
    size_t max_spheres;   /* --max-spheres N (1..1024); 0 when not given */
    double max_overshoot; /* --max-overshoot M (metres, finite, >= 0); 0 when not given */
} cli_urdf_flags;

/* Takes the flags above (each "--flag VALUE", two words) out of the n
 * words after `model.put`, moving the other words, in order, to the front
 * of words[].  Returns how many words are left (the params: PARAMS-JSON
 * or KEY=VALUE), or -1 with the reason in why (CLI_WHY_MAX bytes) for a
 * flag without a value, a bad number, a flag given twice (but
 * --package-path, which adds a directory each time), another word starting
 * with "--", or a flag other than --urdf without --urdf.  *f is zeroed
 * first; on -1 nothing needs freeing. */
int cli_take_urdf_flags(char **words, int n, cli_urdf_flags *f, char *why);

#endif /* REPOSE_CLI_PARAMS_H */
