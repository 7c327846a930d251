/* SPDX-License-Identifier: MIT */
/*
 * The URDF scan of urdf_scan.h: a tokenizer over the document's bytes that
 * keeps a stack of open elements, classified as the daemon's reader
 * classifies them, and records links, collisions and mesh filenames.
 */
#define _POSIX_C_SOURCE 200809L
#include "urdf_scan.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper documents are refused: the stack is a fixed array, and no URDF
 * nests more than a few levels (the daemon's reader stops at 64 too). */
#define MAX_DEPTH 256

typedef enum kind { K_SKIP, K_ROBOT, K_LINK, K_COLLISION, K_GEOMETRY, K_MESH } kind;

typedef struct open_elem {
    kind k;
    const char *name; /* into the document */
    size_t name_len;
} open_elem;

typedef struct scanner {
    const char *doc;
    size_t len, pos;
    size_t line_pos;    /* lines are counted up to here */
    unsigned long line; /* the line of line_pos */
    size_t line_start;  /* offset of the first byte of that line */
    open_elem stack[MAX_DEPTH];
    size_t depth;
    rp_urdf_scan *out;
    size_t coll; /* the open <collision>'s index in out->colls */
    bool geometry_has_shape;
    char *why;
    size_t cap;
    bool oom;
} scanner;

/* The line (and its first byte) of offset `at`, which never goes back. */
static unsigned long line_at(scanner *s, size_t at)
{
    for (; s->line_pos < at; s->line_pos++)
        if (s->doc[s->line_pos] == '\n') {
            s->line++;
            s->line_start = s->line_pos + 1;
        }
    return s->line;
}

__attribute__((format(printf, 3, 4))) static bool fail(scanner *s, size_t at, const char *fmt, ...)
{
    int n = snprintf(s->why, s->cap, "line %lu: ", line_at(s, at));
    if (n < 0 || (size_t)n >= s->cap)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why + n, s->cap - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

static bool nomem(scanner *s)
{
    s->oom = true;
    snprintf(s->why, s->cap, "out of memory");
    return false;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Offset of the first `pat` at or after `from`, or len. */
static size_t find(const scanner *s, size_t from, const char *pat)
{
    size_t n = strlen(pat);
    for (size_t i = from; i + n <= s->len; i++)
        if (memcmp(s->doc + i, pat, n) == 0)
            return i;
    return s->len;
}

/* Skips a <!DOCTYPE ...> (or another "<!" declaration) from s->pos at
 * its '<': quoted strings, comments and an internal subset in [...]
 * may hold '>'. */
static bool skip_declaration(scanner *s)
{
    size_t start = s->pos, i = s->pos + 2;
    int brackets = 0;
    while (i < s->len) {
        char c = s->doc[i];
        if (c == '"' || c == '\'') {
            const char *q = memchr(s->doc + i + 1, c, s->len - i - 1);
            if (!q)
                break;
            i = (size_t)(q - s->doc) + 1;
        } else if (c == '<' && i + 4 <= s->len && memcmp(s->doc + i, "<!--", 4) == 0) {
            size_t e = find(s, i + 4, "-->");
            if (e == s->len)
                break;
            i = e + 3;
        } else if (c == '[') {
            brackets++, i++;
        } else if (c == ']') {
            brackets--, i++;
        } else if (c == '>' && brackets <= 0) {
            s->pos = i + 1;
            return true;
        } else {
            i++;
        }
    }
    return fail(s, start, "unterminated <! declaration");
}

/* Appends the UTF-8 of code point cp to buf at *o (room for 4). */
static bool put_utf8(char *buf, size_t *o, unsigned long cp)
{
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return false;
    if (cp < 0x80) {
        buf[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        buf[(*o)++] = (char)(0xC0 | (cp >> 6));
        buf[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        buf[(*o)++] = (char)(0xE0 | (cp >> 12));
        buf[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        buf[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        buf[(*o)++] = (char)(0xF0 | (cp >> 18));
        buf[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        buf[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        buf[(*o)++] = (char)(0x80 | (cp & 0x3F));
    }
    return true;
}

/* The attribute value v[0..n) as an XML reader reports it, malloc'ed:
 * references to the five predefined entities and character references
 * decoded, each literal tab, newline or carriage return (a "\r\n" pair
 * once) a space.  NULL after fail() for another entity or a raw '<'. */
static char *decode_value(scanner *s, size_t at, const char *v, size_t n)
{
    char *out = malloc(n + 1); /* decoding never lengthens: "&#x10FFFF;" is 4 bytes */
    if (!out) {
        nomem(s);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '<') {
            free(out);
            fail(s, at, "'<' inside an attribute value");
            return NULL;
        }
        if (c == '\r') {
            out[o++] = ' ';
            if (i + 1 < n && v[i + 1] == '\n')
                i++;
            continue;
        }
        if (c == '\n' || c == '\t') {
            out[o++] = ' ';
            continue;
        }
        if (c != '&') {
            out[o++] = c;
            continue;
        }
        const char *semi = memchr(v + i, ';', n - i);
        size_t elen = semi ? (size_t)(semi - (v + i)) + 1 : 0; /* "&...;" */
        static const struct {
            const char *ref;
            char ch;
        } named[] = {
            {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
        bool done = false;
        for (size_t k = 0; semi && k < sizeof named / sizeof named[0] && !done; k++)
            if (strlen(named[k].ref) == elen && memcmp(v + i, named[k].ref, elen) == 0) {
                out[o++] = named[k].ch;
                done = true;
            }
        if (!done && semi && elen > 3 && v[i + 1] == '#') {
            bool hex = v[i + 2] == 'x';
            unsigned long cp = 0;
            bool ok = elen > (size_t)(3 + hex);
            for (size_t k = i + 2 + hex; ok && k < i + elen - 1; k++) {
                char d = v[k];
                int dv = d >= '0' && d <= '9'          ? d - '0'
                         : hex && d >= 'a' && d <= 'f' ? d - 'a' + 10
                         : hex && d >= 'A' && d <= 'F' ? d - 'A' + 10
                                                       : -1;
                ok = dv >= 0 && cp <= 0x10FFFF;
                cp = cp * (hex ? 16 : 10) + (unsigned long)(dv < 0 ? 0 : dv);
            }
            done = ok && put_utf8(out, &o, cp);
        }
        if (!done) {
            free(out);
            fail(s, at, "the reference '%.*s' in an attribute value is not one XML defines",
                 (int)(elen && elen < 32 ? elen : 8), v + i);
            return NULL;
        }
        i += elen - 1;
    }
    out[o] = '\0';
    return out;
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && memcmp(name, want, len) == 0;
}

/* What an element `name` opened here is, as the daemon reads it. */
static kind classify(const scanner *s, const char *name, size_t len)
{
    if (s->depth == 0)
        return name_is(name, len, "robot") ? K_ROBOT : K_SKIP;
    kind parent = s->stack[s->depth - 1].k;
    if (parent == K_ROBOT && name_is(name, len, "link"))
        return K_LINK;
    if (parent == K_LINK && name_is(name, len, "collision"))
        return K_COLLISION;
    if (parent == K_COLLISION && name_is(name, len, "geometry"))
        return K_GEOMETRY;
    if (parent == K_GEOMETRY && name_is(name, len, "mesh"))
        return K_MESH;
    return K_SKIP;
}

static bool grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 16;
    void *np = realloc(*p, c * size);
    if (!np)
        return false;
    *p = np;
    *cap = c;
    return true;
}

/* An element opened at `start`: records links, collisions and meshes. */
static bool open_element(scanner *s, kind k, size_t start, const char *link_name,
                         const char *filename, size_t *links_cap, size_t *colls_cap)
{
    rp_urdf_scan *out = s->out;
    if (k == K_LINK) {
        if (!grow((void **)&out->links, links_cap, out->n_links, sizeof *out->links))
            return nomem(s);
        char *copy = strdup(link_name ? link_name : "");
        if (!copy)
            return nomem(s);
        out->links[out->n_links++] = copy;
    } else if (k == K_COLLISION) {
        if (!grow((void **)&out->colls, colls_cap, out->n_colls, sizeof *out->colls))
            return nomem(s);
        size_t link = out->n_links - 1, index = 0;
        for (size_t i = 0; i < out->n_colls; i++)
            index += out->colls[i].link == link;
        unsigned long line = line_at(s, start);
        out->colls[out->n_colls] =
            (rp_urdf_scan_collision){start, start, s->line_start, line, link, index, NULL, 0};
        s->coll = out->n_colls++;
        s->geometry_has_shape = false;
    } else if (k == K_MESH && !s->geometry_has_shape && filename) {
        rp_urdf_scan_collision *c = &out->colls[s->coll];
        c->mesh_uri = strdup(filename);
        if (!c->mesh_uri)
            return nomem(s);
        c->mesh_line = line_at(s, start);
    }
    return true;
}

/* A start tag at s->pos ('<' followed by a name): its attributes, then
 * the element opened (and closed again for "/>"). */
static bool start_tag(scanner *s, size_t *links_cap, size_t *colls_cap)
{
    size_t start = s->pos, i = s->pos + 1;
    const char *name = s->doc + i;
    while (i < s->len && !is_space(s->doc[i]) && s->doc[i] != '/' && s->doc[i] != '>')
        i++;
    size_t name_len = (size_t)(s->doc + i - name);
    if (name_len == 0)
        return fail(s, start, "'<' not followed by an element name");
    kind k = classify(s, name, name_len);
    char *link_name = NULL, *filename = NULL;
    bool empty = false, ok = true;
    for (;;) {
        while (i < s->len && is_space(s->doc[i]))
            i++;
        if (i >= s->len) {
            ok = fail(s, start, "the tag <%.*s is not closed", (int)(name_len < 64 ? name_len : 64),
                      name);
            break;
        }
        if (s->doc[i] == '>') {
            i++;
            break;
        }
        if (s->doc[i] == '/' && i + 1 < s->len && s->doc[i + 1] == '>') {
            empty = true;
            i += 2;
            break;
        }
        const char *an = s->doc + i;
        while (i < s->len && !is_space(s->doc[i]) && s->doc[i] != '=' && s->doc[i] != '>' &&
               s->doc[i] != '/')
            i++;
        size_t an_len = (size_t)(s->doc + i - an);
        while (i < s->len && is_space(s->doc[i]))
            i++;
        if (an_len == 0 || i >= s->len || s->doc[i] != '=') {
            ok = fail(s, start, "in <%.*s>: an attribute without '=\"value\"'",
                      (int)(name_len < 64 ? name_len : 64), name);
            break;
        }
        i++;
        while (i < s->len && is_space(s->doc[i]))
            i++;
        char q = i < s->len ? s->doc[i] : '\0';
        const char *end = q == '"' || q == '\'' ? memchr(s->doc + i + 1, q, s->len - i - 1) : NULL;
        if (!end) {
            ok = fail(s, start, "in <%.*s>: the value of %.*s is not quoted, or not closed",
                      (int)(name_len < 64 ? name_len : 64), name, (int)(an_len < 64 ? an_len : 64),
                      an);
            break;
        }
        const char *v = s->doc + i + 1;
        size_t vlen = (size_t)(end - v);
        i = (size_t)(end - s->doc) + 1;
        /* Every value is decoded, to refuse what an XML reader refuses; only
         * two are kept. */
        char *val = decode_value(s, start, v, vlen);
        if (!val) {
            ok = false;
            break;
        }
        if (k == K_LINK && name_is(an, an_len, "name") && !link_name)
            link_name = val;
        else if (k == K_MESH && name_is(an, an_len, "filename") && !filename)
            filename = val;
        else
            free(val);
    }
    if (ok && s->depth == MAX_DEPTH)
        ok = fail(s, start, "elements nest more than %d deep", MAX_DEPTH);
    if (ok)
        ok = open_element(s, k, start, link_name, filename, links_cap, colls_cap);
    free(link_name);
    free(filename);
    if (!ok)
        return false;
    if (k == K_MESH)
        s->geometry_has_shape = true;
    else if (s->depth > 0 && s->stack[s->depth - 1].k == K_GEOMETRY)
        s->geometry_has_shape = true; /* a sphere, box...: the first shape counts */
    s->pos = i;
    if (empty) {
        if (k == K_COLLISION)
            s->out->colls[s->coll].end = i;
        return true;
    }
    s->stack[s->depth++] = (open_elem){k, name, name_len};
    return true;
}

static bool end_tag(scanner *s)
{
    size_t start = s->pos, i = s->pos + 2;
    const char *name = s->doc + i;
    while (i < s->len && !is_space(s->doc[i]) && s->doc[i] != '>')
        i++;
    size_t name_len = (size_t)(s->doc + i - name);
    while (i < s->len && is_space(s->doc[i]))
        i++;
    if (i >= s->len || s->doc[i] != '>')
        return fail(s, start, "the end tag </%.*s is not closed",
                    (int)(name_len < 64 ? name_len : 64), name);
    if (s->depth == 0)
        return fail(s, start, "</%.*s> closes no element", (int)(name_len < 64 ? name_len : 64),
                    name);
    open_elem *top = &s->stack[s->depth - 1];
    if (top->name_len != name_len || memcmp(top->name, name, name_len) != 0)
        return fail(s, start, "</%.*s> closes <%.*s>", (int)(name_len < 64 ? name_len : 64), name,
                    (int)(top->name_len < 64 ? top->name_len : 64), top->name);
    if (top->k == K_COLLISION)
        s->out->colls[s->coll].end = i + 1;
    s->depth--;
    s->pos = i + 1;
    return true;
}

bool rp_urdf_scan_(const char *doc, size_t len, rp_urdf_scan *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    scanner s = {.doc = doc, .len = len, .line = 1, .out = out, .why = why, .cap = cap};
    size_t links_cap = 0, colls_cap = 0;
    bool ok = true, root_seen = false;
    while (ok && s.pos < len) {
        const char *lt = memchr(doc + s.pos, '<', len - s.pos);
        if (!lt)
            break;
        s.pos = (size_t)(lt - doc);
        const char *p = lt + 1;
        size_t left = len - s.pos - 1;
        if (left >= 3 && memcmp(p, "!--", 3) == 0) {
            size_t e = find(&s, s.pos + 4, "-->");
            ok = e < len || fail(&s, s.pos, "unterminated comment");
            s.pos = e + 3;
        } else if (left >= 8 && memcmp(p, "![CDATA[", 8) == 0) {
            size_t e = find(&s, s.pos + 9, "]]>");
            ok = e < len || fail(&s, s.pos, "unterminated CDATA section");
            s.pos = e + 3;
        } else if (left >= 1 && *p == '!') {
            ok = skip_declaration(&s);
        } else if (left >= 1 && *p == '?') {
            size_t e = find(&s, s.pos + 2, "?>");
            ok = e < len || fail(&s, s.pos, "unterminated processing instruction");
            s.pos = e + 2;
        } else if (left >= 1 && *p == '/') {
            ok = end_tag(&s);
        } else {
            if (s.depth == 0 && root_seen)
                ok = fail(&s, s.pos, "a second root element");
            root_seen = true;
            ok = ok && start_tag(&s, &links_cap, &colls_cap);
        }
    }
    if (ok && s.depth > 0)
        ok = fail(&s, len, "<%.*s> is not closed at the end of the document",
                  (int)(s.stack[s.depth - 1].name_len < 64 ? s.stack[s.depth - 1].name_len : 64),
                  s.stack[s.depth - 1].name);
    if (ok && !root_seen)
        ok = fail(&s, len, "no root element");
    if (!ok)
        rp_urdf_scan_free_(out);
    return ok;
}

void rp_urdf_scan_free_(rp_urdf_scan *s)
{
    for (size_t i = 0; i < s->n_links; i++)
        free(s->links[i]);
    free(s->links);
    for (size_t i = 0; i < s->n_colls; i++)
        free(s->colls[i].mesh_uri);
    free(s->colls);
    memset(s, 0, sizeof *s);
}
