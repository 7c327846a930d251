/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: numbers and joint tables read straight from the text
 * (src/codec/numbers.c), the fast path of check.batch.
 *
 * The input is a line of text.  Three oracles:
 *   - rp_json_number: what it accepts must be a strict JSON number by a
 *     reference matcher written here, and its value strtod's bit for bit;
 *     what it refuses must not start with one (or overflow);
 *   - rp_json_number_span (the grammar the pre-scan holds every number
 *     to): the reference's length, always;
 *   - rp_json_rows: a table it accepts must be what cJSON makes of the same
 *     bytes (an array of arrays of numbers, same shape, same bits);
 *   - rp_json_batch_joints: when it finds a table and cJSON parses the whole
 *     line, the table must equal cJSON's params.joints.
 */
#include "fuzz_util.h"

#include "codec/codec.h"

#define DIGIT(c) ((c) >= '0' && (c) <= '9')

/* Length of the strict JSON number at the start of s[0..n), or 0. */
static size_t reference_number(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i >= n || !DIGIT(s[i]))
        return 0;
    if (s[i] == '0')
        i++;
    else
        while (i < n && DIGIT(s[i]))
            i++;
    if (i < n && s[i] == '.') {
        if (i + 1 >= n || !DIGIT(s[i + 1]))
            return 0;
        i++;
        while (i < n && DIGIT(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (s[j] == '+' || s[j] == '-'))
            j++;
        if (j >= n || !DIGIT(s[j]))
            return 0;
        while (j < n && DIGIT(s[j]))
            j++;
        i = j;
    }
    return i;
}

static void same_table(const rp_num_rows *t, const cJSON *arr)
{
    FUZZ_CHECK(cJSON_IsArray(arr), "the table is no array for cJSON");
    size_t r = 0, k = 0;
    for (const cJSON *row = arr->child; row; row = row->next, r++) {
        FUZZ_CHECK(cJSON_IsArray(row), "row %zu is no array for cJSON", r);
        size_t w = 0;
        for (const cJSON *c = row->child; c; c = c->next, w++, k++) {
            FUZZ_CHECK(cJSON_IsNumber(c), "row %zu value %zu is no number for cJSON", r, w);
            FUZZ_CHECK(k < t->n, "cJSON has more values");
            FUZZ_CHECK(memcmp(&t->v[k], &c->valuedouble, sizeof(double)) == 0,
                       "value %zu: %.17g here, %.17g for cJSON", k, t->v[k], c->valuedouble);
        }
        FUZZ_CHECK(w == t->width, "row %zu: width %zu, cJSON %zu", r, t->width, w);
    }
    FUZZ_CHECK(r == t->rows && k == t->n, "rows %zu/%zu values %zu/%zu", t->rows, r, t->n, k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    char *copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';

    double v;
    size_t used = rp_json_number(s, size, &v), want = reference_number(s, size);
    size_t span = rp_json_number_span(s, size);
    FUZZ_CHECK(span == want, "span %zu bytes, the grammar %zu", span, want);
    if (used) {
        FUZZ_CHECK(used == want, "took %zu bytes, the grammar %zu", used, want);
        char saved = copy[used];
        copy[used] = '\0';
        double ref = strtod(copy, NULL);
        copy[used] = saved;
        FUZZ_CHECK(memcmp(&v, &ref, sizeof v) == 0, "%.*s: %.17g, strtod %.17g", (int)used, s, v,
                   ref);
    } else if (want) {
        char saved = copy[want];
        copy[want] = '\0';
        double ref = strtod(copy, NULL);
        copy[want] = saved;
        FUZZ_CHECK(isinf(ref), "%.*s refused, strtod reads %.17g", (int)want, s, ref);
    }

    rp_num_rows t;
    size_t table = rp_json_rows(s, size, &t);
    if (table) {
        cJSON *j = cJSON_ParseWithLength(s, table);
        FUZZ_CHECK(j, "cJSON does not parse the table's %zu bytes", table);
        same_table(&t, j);
        cJSON_Delete(j);
    } else {
        FUZZ_CHECK(!t.v && !t.rows, "a refused table left data");
    }
    rp_num_rows_free(&t);

    size_t a, b;
    if (rp_json_batch_joints(s, size, &a, &b, &t)) {
        FUZZ_CHECK(a < b && b <= size && s[a] == '[', "bad span %zu..%zu", a, b);
        cJSON *j = cJSON_ParseWithLength(s, size);
        if (j) {
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "method");
            FUZZ_CHECK(cJSON_IsString(m) && !strcmp(m->valuestring, "check.batch"),
                       "method is not check.batch for cJSON");
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "params");
            same_table(&t, cJSON_GetObjectItemCaseSensitive(p, "joints"));
            cJSON_Delete(j);
        }
        rp_num_rows_free(&t);
    }
    free(copy);
    return 0;
}
