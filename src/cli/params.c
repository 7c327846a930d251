/* SPDX-License-Identifier: MIT */
/*
 * repose-cli's params (see params.h): PARAMS-JSON with @FILE and @@FILE
 * substitution, KEY=VALUE words, the words of a line read from stdin, and
 * the points of a cloud file.
 */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "params.h"
#include "util/utf8.h"

/* Writes the reason params are refused into why (CLI_WHY_MAX bytes). */
__attribute__((format(printf, 2, 3))) static void fail(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, CLI_WHY_MAX, fmt, ap);
    va_end(ap);
}

/* Reads a whole file (NUL-terminated, malloc'ed); NULL with errno set. */
static char *read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    errno = 0;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                int e = errno; /* EISDIR for a directory, ... */
                free(buf);
                buf = NULL;
                errno = e ? e : EIO;
            }
            break;
        }
    }
    fclose(f);
    if (buf) {
        buf[len] = '\0';
        if (len_out)
            *len_out = len;
    }
    return buf;
}

/* ---- @file substitution ------------------------------------------------------------ */

typedef struct strbuf {
    char *p;
    size_t len, cap;
} strbuf;

static bool sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            return false;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

/* Appends s[0..n) as a JSON string literal. */
static bool sb_add_json_string(strbuf *b, const char *s, size_t n)
{
    bool ok = sb_add(b, "\"", 1);
    for (size_t i = 0; i < n && ok; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            ok = sb_add(b, esc, 2);
        } else if (ch < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            ok = sb_add(b, esc, 6);
        } else {
            ok = sb_add(b, s + i, 1);
        }
    }
    return ok && sb_add(b, "\"", 1);
}

/* The contents of the file at path for `@path`: one JSON value, then only
 * whitespace.  Returns it malloc'ed (its length in *len), or NULL with the
 * reason in why. */
static char *file_json(const char *path, size_t *len, char *why)
{
    size_t flen = 0;
    char *content = read_file(path, &flen);
    if (!content) {
        fail(why, "@%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    /* One JSON value, then only whitespace (cJSON stops at the value). */
    const char *after = NULL;
    cJSON *check = cJSON_ParseWithOpts(content, &after, 0);
    const char *ep = check ? after : cJSON_GetErrorPtr();
    bool valid = check != NULL && strlen(content) == flen;
    cJSON_Delete(check);
    while (valid && (*ep == ' ' || *ep == '\t' || *ep == '\r' || *ep == '\n'))
        ep++;
    valid = valid && *ep == '\0';
    if (!valid) {
        fail(why, "@%s: not valid JSON (near byte %zu)", path,
             ep && ep >= content ? (size_t)(ep - content) : (size_t)0);
        free(content);
        return NULL;
    }
    *len = flen;
    return content;
}

/* Appends the text of the file at path for `@@path` as a JSON string: any
 * text in UTF-8 without NUL bytes (a JSON string may escape one, but the
 * daemon's strings end at it).  False with the reason in why. */
static bool add_file_text(strbuf *b, const char *path, char *why)
{
    size_t flen = 0;
    char *content = read_file(path, &flen);
    if (!content) {
        fail(why, "@@%s: cannot read: %s", path, strerror(errno));
        return false;
    }
    const char *nul = memchr(content, '\0', flen);
    size_t bad_at = rp_utf8_invalid_at_((const unsigned char *)content, flen);
    bool ok = false;
    if (nul)
        fail(why, "@@%s: the file holds a NUL byte (at byte %zu); @@ takes text", path,
             (size_t)(nul - content));
    else if (bad_at < flen)
        fail(why,
             "@@%s: not valid UTF-8 (byte 0x%02x at byte %zu of the file); JSON strings "
             "are UTF-8",
             path, (unsigned char)content[bad_at], bad_at);
    else if (!(ok = sb_add_json_string(b, content, flen)))
        fail(why, "out of memory");
    free(content);
    return ok;
}

/* Replaces every `@path` outside JSON strings in text by the contents of the
 * file (checked to be JSON) and every `@@path` by the file's text as a JSON
 * string, then checks the whole result is one JSON object in UTF-8 (JSON's
 * encoding; reposed refuses anything else).  Returns a malloc'ed string, or
 * NULL with the reason in why. */
static char *expand_params(const char *text, char *why)
{
    strbuf b = {NULL, 0, 0};
    bool in_str = false, ok = true;
    const char *run = text;
    for (const char *p = text; *p && ok; p++) {
        if (in_str) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_str = false;
            continue;
        }
        if (*p == '"') {
            in_str = true;
            continue;
        }
        if (*p != '@')
            continue;
        ok = sb_add(&b, run, (size_t)(p - run));
        bool as_text = p[1] == '@';
        const char *start = p + 1 + as_text, *end = start;
        while (*end && !strchr(",}] \t\r\n", *end))
            end++;
        if (end == start) {
            fail(why, "'%s' must be followed by a file name", as_text ? "@@" : "@");
            free(b.p);
            return NULL;
        }
        char *path = strndup(start, (size_t)(end - start));
        if (!path) {
            fail(why, "out of memory");
            free(b.p);
            return NULL;
        }
        if (as_text) {
            if (!add_file_text(&b, path, why)) {
                free(path);
                free(b.p);
                return NULL;
            }
        } else {
            size_t flen = 0;
            char *content = file_json(path, &flen, why);
            if (!content) {
                free(path);
                free(b.p);
                return NULL;
            }
            ok = sb_add(&b, content, flen);
            free(content);
        }
        free(path);
        run = end;
        p = end - 1;
    }
    if (ok)
        ok = sb_add(&b, run, strlen(run));
    if (!ok) {
        fail(why, "out of memory");
        free(b.p);
        return NULL;
    }
    const char *ep = NULL;
    cJSON *check = cJSON_ParseWithOpts(b.p, &ep, 1);
    if (!check) {
        ep = cJSON_GetErrorPtr();
        fail(why, "PARAMS-JSON is not valid JSON (near byte %zu)",
             ep && ep >= b.p ? (size_t)(ep - b.p) : (size_t)0);
        free(b.p);
        return NULL;
    }
    bool object = cJSON_IsObject(check);
    cJSON_Delete(check);
    if (!object) {
        fail(why, "PARAMS-JSON must be a JSON object");
        free(b.p);
        return NULL;
    }
    size_t bad_at = rp_utf8_invalid_at_((const unsigned char *)b.p, b.len);
    if (bad_at < b.len) {
        fail(why, "params are not valid UTF-8 (byte 0x%02x at byte %zu of the JSON)",
             (unsigned char)b.p[bad_at], bad_at);
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- KEY=VALUE words ----------------------------------------------------------------- */

/* True when text is exactly one JSON value (blanks around it allowed) that
 * stays one inside the params object.  cJSON skips a UTF-8 byte order mark
 * only at the start of a text, and nests at most CJSON_NESTING_LIMIT deep,
 * so such a value must also parse as the one element of "[" text "]";
 * otherwise it is sent as a string (once, it made the whole object fail as
 * "PARAMS-JSON is not valid JSON"). */
static bool is_json_value(const char *text)
{
    cJSON *j = cJSON_ParseWithOpts(text, NULL, 1);
    cJSON_Delete(j);
    if (!j)
        return false;
    size_t n = strlen(text);
    char *wrapped = malloc(n + 3);
    if (!wrapped)
        return false; /* a string then; the caller runs out of memory soon */
    wrapped[0] = '[';
    memcpy(wrapped + 1, text, n);
    memcpy(wrapped + 1 + n, "]", 2);
    j = cJSON_ParseWithOpts(wrapped, NULL, 1);
    free(wrapped);
    cJSON_Delete(j);
    return j != NULL;
}

/* Builds a params object from KEY=VALUE words: VALUE is copied as JSON when
 * it parses as JSON, replaced by the JSON in FILE for @FILE or by the text
 * of FILE as a string for @@FILE (FILE is the rest of the word, blanks and
 * all), else quoted as a string.  Returns the malloc'ed JSON text, or NULL
 * with the reason in why. */
static char *kv_params(char *const *words, int n, char *why)
{
    strbuf b = {NULL, 0, 0};
    bool ok = sb_add(&b, "{", 1);
    for (int i = 0; i < n && ok; i++) {
        const char *w = words[i], *eq = strchr(w, '=');
        if (!eq || eq == w) {
            if (!eq)
                fail(why, "'%s' is not KEY=VALUE (params are one JSON object or KEY=VALUE words)",
                     w);
            else
                fail(why, "'%s': the key before '=' is empty", w);
            free(b.p);
            return NULL;
        }
        size_t klen = (size_t)(eq - w);
        for (int k = 0; k < i; k++)
            if (strncmp(words[k], w, klen + 1) == 0) {
                fail(why, "key '%.*s' is given twice", (int)klen, w);
                free(b.p);
                return NULL;
            }
        const char *v = eq + 1;
        ok =
            (i == 0 || sb_add(&b, ",", 1)) && sb_add_json_string(&b, w, klen) && sb_add(&b, ":", 1);
        if (ok && v[0] == '@') {
            bool text = v[1] == '@';
            const char *path = v + 1 + text;
            if (!*path) {
                fail(why, "'%s': '%s' must be followed by a file name", w, text ? "@@" : "@");
                free(b.p);
                return NULL;
            }
            if (text) {
                if (!add_file_text(&b, path, why)) {
                    free(b.p);
                    return NULL;
                }
            } else {
                size_t flen = 0;
                char *content = file_json(path, &flen, why);
                if (!content) {
                    free(b.p);
                    return NULL;
                }
                ok = sb_add(&b, content, flen);
                free(content);
            }
        } else if (ok) {
            ok = is_json_value(v) ? sb_add(&b, v, strlen(v)) : sb_add_json_string(&b, v, strlen(v));
        }
    }
    if (!(ok && sb_add(&b, "}", 1))) {
        fail(why, "out of memory");
        free(b.p);
        return NULL;
    }
    char *out = expand_params(b.p, why);
    free(b.p);
    return out;
}

/* ---- the words after METHOD ------------------------------------------------------ */

char *cli_words_params(char *const *words, int n, bool *bad, char *why)
{
    why[0] = '\0';
    *bad = false;
    if (n == 0)
        return NULL;
    const char *w = words[0];
    while (*w == ' ' || *w == '\t' || *w == '\r' || *w == '\n')
        w++;
    char *out;
    if (*w == '{' || *w == '[') {
        if (n > 1) {
            fail(why, "PARAMS-JSON must be the only argument after METHOD (quote it as one "
                      "argument)");
            *bad = true;
            return NULL;
        }
        out = expand_params(words[0], why);
    } else {
        out = kv_params(words, n, why);
    }
    *bad = out == NULL;
    return out;
}

int cli_split_words(char *p, char ***out)
{
    char **v = NULL;
    int n = 0, cap = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            char **nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                free(v);
                return -1;
            }
            v = nv;
        }
        v[n++] = p;
        int depth = 0;
        bool in_str = false;
        for (; *p; p++) {
            if (in_str) {
                if (*p == '\\' && p[1])
                    p++;
                else if (*p == '"')
                    in_str = false;
            } else if (*p == '"') {
                in_str = true;
            } else if (*p == '{' || *p == '[') {
                depth++;
            } else if ((*p == '}' || *p == ']') && depth > 0) {
                depth--;
            } else if ((*p == ' ' || *p == '\t') && depth == 0) {
                break;
            }
        }
        if (*p)
            *p++ = '\0';
    }
    *out = v;
    return n;
}

/* ---- model.put --urdf ------------------------------------------------------------ */

int cli_take_urdf_flags(char **words, int n, cli_urdf_flags *f, char *why)
{
    memset(f, 0, sizeof *f);
    why[0] = '\0';
    int kept = 0;
    bool spheres_set = false, overshoot_set = false;
    for (int i = 0; i < n; i++) {
        const char *w = words[i];
        if (strncmp(w, "--", 2) != 0) {
            words[kept++] = words[i];
            continue;
        }
        bool known = strcmp(w, "--urdf") == 0 || strcmp(w, "--srdf") == 0 ||
                     strcmp(w, "--package-path") == 0 || strcmp(w, "--max-spheres") == 0 ||
                     strcmp(w, "--max-overshoot") == 0;
        if (!known) {
            fail(why,
                 "unknown flag '%s' (model.put takes --urdf FILE, --srdf FILE, --package-path "
                 "DIR, --max-spheres N, --max-overshoot M)",
                 w);
            goto refuse;
        }
        if (i + 1 >= n || !*words[i + 1]) {
            fail(why, "%s needs a value", w);
            goto refuse;
        }
        const char *v = words[++i];
        if (strcmp(w, "--package-path") == 0) {
            const char **more =
                realloc(f->package_path, (f->n_package_path + 1) * sizeof *f->package_path);
            if (!more) {
                fail(why, "out of memory");
                goto refuse;
            }
            f->package_path = more;
            f->package_path[f->n_package_path++] = v;
            continue;
        }
        if (strcmp(w, "--urdf") == 0 || strcmp(w, "--srdf") == 0) {
            const char **slot = w[2] == 'u' ? &f->urdf : &f->srdf;
            if (*slot) {
                fail(why, "%s is given twice", w);
                goto refuse;
            }
            *slot = v;
            continue;
        }
        char *end;
        errno = 0;
        if (strcmp(w, "--max-spheres") == 0) {
            unsigned long s = strtoul(v, &end, 10);
            if (spheres_set) {
                fail(why, "--max-spheres is given twice");
                goto refuse;
            }
            if (errno || end == v || *end || v[0] == '-' || s < 1 || s > 1024) {
                fail(why, "--max-spheres must be 1..1024 (spheres per link), not '%s'", v);
                goto refuse;
            }
            spheres_set = true;
            f->max_spheres = (size_t)s;
        } else {
            double d = strtod(v, &end);
            if (overshoot_set) {
                fail(why, "--max-overshoot is given twice");
                goto refuse;
            }
            if (errno || end == v || *end || !isfinite(d) || !(d >= 0)) {
                fail(why, "--max-overshoot must be a distance >= 0 in metres, not '%s'", v);
                goto refuse;
            }
            overshoot_set = true;
            f->max_overshoot = d;
        }
    }
    if (!f->urdf && (f->srdf || f->n_package_path || spheres_set || overshoot_set)) {
        fail(why, "--srdf, --package-path, --max-spheres and --max-overshoot go with --urdf FILE");
        goto refuse;
    }
    return kept;
refuse:
    free(f->package_path);
    memset(f, 0, sizeof *f);
    return -1;
}

/* ---- lines from stdin ---------------------------------------------------------------- */

bool cli_split_line(char *line, char **method, char **rest)
{
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0' || *p == '#')
        return false;
    *method = p;
    while (*p && *p != ' ' && *p != '\t')
        p++;
    if (*p)
        *p++ = '\0';
    while (*p == ' ' || *p == '\t')
        p++;
    *rest = p;
    return true;
}

char *cli_line_params(char *rest, bool *bad, char *why)
{
    why[0] = '\0';
    /* One JSON object (which may hold blanks), or KEY=VALUE words. */
    if (*rest == '{' || *rest == '[')
        return cli_words_params(&rest, 1, bad, why);
    char **words = NULL;
    int n = cli_split_words(rest, &words);
    if (n < 0) {
        fail(why, "out of memory");
        *bad = true;
        return NULL;
    }
    char *out = cli_words_params(words, n, bad, why);
    free(words);
    return out;
}

/* ---- the points of a cloud file -------------------------------------------------------- */

/* The least double that rounds to a float's infinity: FLT_MAX plus half
 * its last place, 2^128 - 2^103 (a tie, which goes to the even infinity).
 * Below it the conversion to float is finite and defined. */
#define FLOAT_ROUNDS_TO_INFINITY 0x1.ffffffp127

/* A blank between the numbers of a line: any white space but the '\n'
 * that ends the line. */
static bool is_blank(char c)
{
    return c != '\n' && isspace((unsigned char)c);
}

float *cli_parse_points(const char *text, size_t len, size_t *n, char *why)
{
    why[0] = '\0';
    *n = 0;
    const char *nul = memchr(text, '\0', len);
    size_t cap = 3 * 1024, used = 0;
    float *xyz = malloc(cap * sizeof *xyz);
    if (!xyz) {
        fail(why, "out of memory");
        return NULL;
    }
    long lineno = 0;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        lineno++;
        if (nul && nul < eol) {
            fail(why, "line %ld: a NUL byte (a cloud file is text: x y z a line)", lineno);
            free(xyz);
            return NULL;
        }
        while (p < eol && is_blank(*p))
            p++;
        int count = 0;
        double v[3];
        while (p < eol && *p != '#') {
            const char *word = p;
            while (p < eol && !is_blank(*p))
                p++;
            int wlen = (int)(p - word > 40 ? 40 : p - word); /* shown in errors */
            if (count == 3) {
                fail(why, "line %ld: more than three numbers (x y z): '%.*s'", lineno, wlen, word);
                free(xyz);
                return NULL;
            }
            /* word starts with no white space, so strtod reads it alone. */
            char *stop;
            double d = strtod(word, &stop);
            if (stop != p) {
                fail(why, "line %ld: '%.*s' is not a number", lineno, wlen, word);
                free(xyz);
                return NULL;
            }
            /* The daemon's rule for `points`: finite and within float32's
             * range once rounded (a value that rounds to FLT_MAX is in). */
            if (!isfinite(d) || fabs(d) >= FLOAT_ROUNDS_TO_INFINITY) {
                fail(why, "line %ld: '%.*s' is %s", lineno, wlen, word,
                     isfinite(d) ? "beyond float32's range" : "not a finite number");
                free(xyz);
                return NULL;
            }
            v[count++] = d;
            while (p < eol && is_blank(*p))
                p++;
        }
        /* A '#' after the numbers is taken for a comment too. */
        if (count != 0 && count != 3) {
            fail(why, "line %ld: %d number%s, not three (x y z)", lineno, count,
                 count == 1 ? "" : "s");
            free(xyz);
            return NULL;
        }
        if (count == 3) {
            if (cap - used < 3) {
                float *nx =
                    cap < SIZE_MAX / 2 / sizeof *xyz ? realloc(xyz, 2 * cap * sizeof *xyz) : NULL;
                if (!nx) {
                    fail(why, "out of memory");
                    free(xyz);
                    return NULL;
                }
                xyz = nx;
                cap *= 2;
            }
            for (int k = 0; k < 3; k++)
                xyz[used++] = (float)v[k];
        }
        p = eol + (eol < end);
    }
    *n = used / 3;
    return xyz;
}
