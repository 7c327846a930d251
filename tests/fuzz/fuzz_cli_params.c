/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: repose-cli's params (src/cli/params.c), from the words after
 * METHOD on the command line, and from `METHOD [PARAMS]` lines on stdin.
 *
 * An input with a NUL byte is argv words, each terminated by a NUL (an argv
 * word cannot hold one; the last may be unterminated); any other input is
 * stdin lines, one per '\n'.
 * Inputs with an '@' are skipped: @FILE and @@FILE read files (test_cli.sh
 * covers them against real files).  Invariants:
 *
 *  - no words give no params and no error;
 *  - a refusal has a non-empty, NUL-terminated reason;
 *  - PARAMS-JSON (a first word starting with '{' or '['): refused unless it
 *    is the only word, an object by cJSON and valid UTF-8; accepted, the
 *    params are the word exactly;
 *  - KEY=VALUE words are accepted exactly when every word has a non-empty
 *    key before its first '=', no key comes twice and the words are valid
 *    UTF-8; then the params are one object (by cJSON) in valid UTF-8 whose
 *    members are the words' keys, in order, each once, and whose values are
 *    what cJSON parses from VALUE, or VALUE as a string when cJSON rejects
 *    it.  Where a VALUE that parses on its own would not parse inside the
 *    object (a leading UTF-8 byte order mark, nesting at cJSON's limit), it
 *    is sent as a string;
 *  - a stdin line: METHOD is non-empty without blanks, and the words after
 *    it, rejoined at the blanks between them, are the rest of the line.
 *
 * Every input (with or without '@') is also a cloud file for
 * cli_parse_points: accepted, it holds no NUL byte, gives one point per
 * line that is neither blank nor a '#' comment, and every coordinate is
 * finite; refused, it has a non-empty reason.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "fuzz_util.h"

#include <ctype.h>
#include <math.h>

#include <cjson/cJSON.h>

#include "params.h"

/* Containers nested in j, j included. */
static int depth(const cJSON *j)
{
    int most = 0;
    for (const cJSON *c = j->child; c; c = c->next) {
        int d = depth(c);
        most = d > most ? d : most;
    }
    return most + (cJSON_IsArray(j) || cJSON_IsObject(j));
}

/* The KEY=VALUE case: checks out (or the refusal) against the words. */
static void check_kv(char *const *words, int n, const char *out, bool bad)
{
    bool acceptable = true;
    for (int i = 0; i < n && acceptable; i++) {
        const char *eq = strchr(words[i], '=');
        acceptable = eq && eq != words[i] && fuzz_utf8_valid(words[i], strlen(words[i]));
        for (int k = 0; k < i && acceptable; k++) {
            size_t klen = (size_t)(eq - words[i]);
            acceptable = !(strncmp(words[k], words[i], klen) == 0 && words[k][klen] == '=');
        }
    }
    FUZZ_CHECK(acceptable != bad, "KEY=VALUE words %s", bad ? "refused" : "accepted");
    if (bad)
        return;
    FUZZ_CHECK(fuzz_utf8_valid(out, strlen(out)), "params not UTF-8: %s", out);
    cJSON *obj = cJSON_ParseWithOpts(out, NULL, 1);
    FUZZ_CHECK(cJSON_IsObject(obj), "params are not a JSON object: %s", out);
    const cJSON *m = obj->child;
    for (int i = 0; i < n; i++, m = m->next) {
        FUZZ_CHECK(m, "member %d of %d missing: %s", i, n, out);
        const char *eq = strchr(words[i], '=');
        size_t klen = (size_t)(eq - words[i]);
        FUZZ_CHECK(strlen(m->string) == klen && memcmp(m->string, words[i], klen) == 0,
                   "member %d is '%s', the word is '%s'", i, m->string, words[i]);
        const char *v = eq + 1;
        cJSON *ref = cJSON_ParseWithOpts(v, NULL, 1);
        bool literal = cJSON_IsString(m) && strcmp(m->valuestring, v) == 0;
        if (!ref) {
            FUZZ_CHECK(literal, "'%s' is not JSON but not sent as that string", v);
        } else if (!fuzz_same_json(m, ref)) {
            bool out_of_place = strncmp(v, "\xEF\xBB\xBF", 3) == 0 || depth(ref) >= 1000;
            FUZZ_CHECK(literal && out_of_place, "'%s' is JSON but sent as something else", v);
        }
        cJSON_Delete(ref);
    }
    FUZZ_CHECK(!m, "more members than words: %s", out);
    cJSON_Delete(obj);
}

/* cli_words_params on words[0..n), checked. */
static void check_words(char *const *words, int n)
{
    char why[CLI_WHY_MAX];
    bool bad = true;
    char *out = cli_words_params(words, n, &bad, why);
    FUZZ_CHECK(bad == (out == NULL) || (n == 0 && !bad && !out), "bad and params disagree");
    if (bad)
        FUZZ_CHECK(why[0] && memchr(why, '\0', sizeof why), "a refusal without a reason");
    if (n == 0) {
        FUZZ_CHECK(!bad && !out, "no words, but params or an error");
        return;
    }
    const char *w = words[0];
    while (*w == ' ' || *w == '\t' || *w == '\r' || *w == '\n')
        w++;
    if (*w == '{' || *w == '[') {
        cJSON *ref = n == 1 ? cJSON_ParseWithOpts(words[0], NULL, 1) : NULL;
        bool acceptable = cJSON_IsObject(ref) && fuzz_utf8_valid(words[0], strlen(words[0]));
        cJSON_Delete(ref);
        FUZZ_CHECK(acceptable != bad, "PARAMS-JSON %s", bad ? "refused" : "accepted");
        if (!bad)
            FUZZ_CHECK(strcmp(out, words[0]) == 0, "PARAMS-JSON changed: %s", out);
    } else {
        check_kv(words, n, out, bad);
    }
    free(out);
}

/* One stdin line (NUL-terminated, no '\n'). */
static void check_line(char *line)
{
    char *method, *rest;
    if (!cli_split_line(line, &method, &rest))
        return;
    FUZZ_CHECK(*method && !strpbrk(method, " \t"), "method '%s'", method);
    FUZZ_CHECK(*rest != ' ' && *rest != '\t', "rest starts with a blank");
    char *copy = strdup(rest);
    FUZZ_CHECK(copy, "out of memory");
    char *one[1] = {copy};
    char **words = one;
    int n = 1;
    if (*rest != '{' && *rest != '[') {
        n = cli_split_words(copy, &words);
        FUZZ_CHECK(n >= 0, "out of memory");
        /* The words, in order, with only blanks around them, are the rest. */
        const char *p = rest;
        for (int i = 0; i < n; i++) {
            while (*p == ' ' || *p == '\t')
                p++;
            size_t len = strlen(words[i]);
            FUZZ_CHECK(len > 0 && strncmp(p, words[i], len) == 0, "word %d '%s' is not at '%s'", i,
                       words[i], p);
            p += len;
        }
        while (*p == ' ' || *p == '\t')
            p++;
        FUZZ_CHECK(*p == '\0', "'%s' lost after the words", p);
    }
    check_words(words, n);
    if (words != one)
        free(words);
    free(copy);

    /* And as run_lines does it, on the line itself. */
    char why[CLI_WHY_MAX];
    bool bad = true;
    char *out = cli_line_params(rest, &bad, why);
    FUZZ_CHECK(!bad || (!out && why[0]), "a line refused without a reason");
    free(out);
}

/* cli_parse_points on text[0..len) (text[len] == '\0'), checked. */
static void check_points(const char *text, size_t len)
{
    char why[CLI_WHY_MAX];
    size_t n = 99;
    float *xyz = cli_parse_points(text, len, &n, why);
    if (!xyz) {
        FUZZ_CHECK(why[0] && memchr(why, '\0', sizeof why), "points refused without a reason");
        return;
    }
    FUZZ_CHECK(!memchr(text, '\0', len), "points with a NUL byte accepted");
    size_t lines = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && text[i] != '\n' && isspace((unsigned char)text[i]))
            i++;
        lines += i < len && text[i] != '\n' && text[i] != '#';
        while (i < len && text[i] != '\n')
            i++;
        i++;
    }
    FUZZ_CHECK(n == lines, "%zu points from %zu lines of numbers", n, lines);
    for (size_t i = 0; i < 3 * n; i++)
        FUZZ_CHECK(isfinite(xyz[i]), "coordinate %zu is not finite", i);
    free(xyz);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    FUZZ_CHECK(buf, "out of memory");
    memcpy(buf, data, size);
    buf[size] = '\0';
    check_points(buf, size);
    if (memchr(data, '@', size)) {
        free(buf);
        return 0;
    }
    if (memchr(buf, '\0', size)) {
        /* argv words: NUL-terminated strings (empty ones too), the last
         * one possibly unterminated. */
        int n = 1;
        for (size_t i = 0; i < size; i++)
            n += buf[i] == '\0';
        char **words = malloc((size_t)n * sizeof *words);
        FUZZ_CHECK(words, "out of memory");
        words[0] = buf;
        for (size_t i = 0, k = 1; i < size; i++)
            if (buf[i] == '\0')
                words[k++] = buf + i + 1;
        if (buf[size - 1] == '\0')
            n--; /* no word after the last terminator */
        check_words(words, n);
        free(words);
    } else {
        for (char *line = buf, *nl; line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            check_line(line);
        }
    }
    free(buf);
    return 0;
}
