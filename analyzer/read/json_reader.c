/*
 * json_reader.c: a recursive-descent JSON parser with a depth limit. Every
 * read is bounds-checked against the end of the input; allocation failures
 * are reported as errors like any other.
 */
#define _GNU_SOURCE
#include "json_reader.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const unsigned char *p, *start, *end;
    char *err;
    size_t errlen;
    int failed;
};

static void fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return;
    ps->failed = 1;
    if (!ps->err || !ps->errlen)
        return;
    /* Line and column of the failure point (columns count bytes from 1). */
    size_t line = 1, col = 1;
    for (const unsigned char *q = ps->start; q < ps->p && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(ps->err, ps->errlen, "line %zu, column %zu: %s", line, col, msg);
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static const char *describe_here(const struct parser *ps)
{
    if (ps->p >= ps->end)
        return "end of input";
    unsigned char c = *ps->p;
    if (c < 0x20 || c >= 0x7f)
        return "a control or non-ASCII byte";
    return NULL;
}

static void fail_expected(struct parser *ps, const char *what)
{
    const char *d = describe_here(ps);
    if (d)
        fail(ps, "expected %s, found %s", what, d);
    else
        fail(ps, "expected %s, found '%c'", what, *ps->p);
}

/* ---- growable byte buffer for strings ---- */
struct buf {
    char *s;
    size_t n, cap;
};

static int buf_put(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (b->n + n + 1 > cap)
            cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t)
            return -1;
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
    return 0;
}

static int hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

static size_t utf8_encode(unsigned cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at p (n bytes available), 0 if invalid
 * (overlong forms, surrogates and code points past U+10FFFF are invalid). */
static size_t utf8_valid(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    unsigned cp, min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* At the opening quote. Returns a new string or NULL (ps failed). */
static char *parse_string(struct parser *ps)
{
    struct buf b = {0};
    ps->p++; /* the quote */
    if (buf_put(&b, "", 0))
        goto oom;
    for (;;) {
        if (ps->p >= ps->end) {
            fail(ps, "unterminated string");
            goto bad;
        }
        unsigned char c = *ps->p;
        if (c == '"') {
            ps->p++;
            return b.s;
        }
        if (c < 0x20) {
            fail(ps, "control character in a string");
            goto bad;
        }
        if (c == '\\') {
            if (ps->end - ps->p < 2) {
                fail(ps, "unterminated string");
                goto bad;
            }
            char e = (char)ps->p[1], out[4];
            size_t n = 1;
            switch (e) {
            case '"': out[0] = '"'; break;
            case '\\': out[0] = '\\'; break;
            case '/': out[0] = '/'; break;
            case 'b': out[0] = '\b'; break;
            case 'f': out[0] = '\f'; break;
            case 'n': out[0] = '\n'; break;
            case 'r': out[0] = '\r'; break;
            case 't': out[0] = '\t'; break;
            case 'u': {
                unsigned cp;
                if (ps->end - ps->p < 6 || hex4(ps->p + 2, &cp)) {
                    fail(ps, "bad \\u escape");
                    goto bad;
                }
                if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    fail(ps, "lone low surrogate in \\u escape");
                    goto bad;
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (ps->end - ps->p < 12 || ps->p[6] != '\\' || ps->p[7] != 'u' || hex4(ps->p + 8, &lo) ||
                        lo < 0xDC00 || lo > 0xDFFF) {
                        fail(ps, "high surrogate without its low half");
                        goto bad;
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    ps->p += 6;
                }
                if (cp == 0) {
                    fail(ps, "\\u0000 is not accepted in strings");
                    goto bad;
                }
                n = utf8_encode(cp, out);
                ps->p += 4; /* the hex digits; the 2 of "\u" below */
                break;
            }
            default:
                fail(ps, "bad escape in a string");
                goto bad;
            }
            ps->p += 2;
            if (buf_put(&b, out, n))
                goto oom;
            continue;
        }
        size_t n = utf8_valid(ps->p, (size_t)(ps->end - ps->p));
        if (!n) {
            fail(ps, "invalid UTF-8 in a string");
            goto bad;
        }
        /* Copy the run of plain bytes at once. */
        const unsigned char *run = ps->p;
        ps->p += n;
        while (ps->p < ps->end && *ps->p >= 0x20 && *ps->p < 0x80 && *ps->p != '"' && *ps->p != '\\')
            ps->p++;
        if (buf_put(&b, (const char *)run, (size_t)(ps->p - run)))
            goto oom;
    }
oom:
    fail(ps, "out of memory");
bad:
    free(b.s);
    return NULL;
}

static int parse_number(struct parser *ps, double *out)
{
    const unsigned char *s = ps->p, *q = s;
#define DIGIT(x) ((x) >= '0' && (x) <= '9')
    if (q < ps->end && *q == '-')
        q++;
    if (q >= ps->end || !DIGIT(*q)) {
        ps->p = q;
        fail_expected(ps, "a digit");
        return -1;
    }
    if (*q == '0') {
        q++;
        if (q < ps->end && DIGIT(*q)) {
            ps->p = q;
            fail(ps, "leading zero in a number");
            return -1;
        }
    } else {
        while (q < ps->end && DIGIT(*q))
            q++;
    }
    if (q < ps->end && *q == '.') {
        q++;
        if (q >= ps->end || !DIGIT(*q)) {
            ps->p = q;
            fail_expected(ps, "a digit after '.'");
            return -1;
        }
        while (q < ps->end && DIGIT(*q))
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= ps->end || !DIGIT(*q)) {
            ps->p = q;
            fail_expected(ps, "a digit in the exponent");
            return -1;
        }
        while (q < ps->end && DIGIT(*q))
            q++;
    }
#undef DIGIT
    /* strtod needs a terminated copy; the grammar above already accepted it,
     * and JSON's grammar is a subset of strtod's in the C locale. */
    size_t n = (size_t)(q - s);
    char small[64], *copy = n < sizeof small ? small : malloc(n + 1);
    if (!copy) {
        fail(ps, "out of memory");
        return -1;
    }
    memcpy(copy, s, n);
    copy[n] = 0;
    errno = 0;
    double v = strtod(copy, NULL);
    int range = errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL);
    if (copy != small)
        free(copy);
    if (range || !isfinite(v)) {
        fail(ps, "number out of range");
        return -1;
    }
    ps->p = q;
    *out = v;
    return 0;
}

static int literal(struct parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
        fail_expected(ps, "a value");
        return -1;
    }
    ps->p += n;
    return 0;
}

static void free_value(struct wsl_json *v);

static int push_item(struct parser *ps, struct wsl_json *c, size_t *cap, struct wsl_json *item, char *key)
{
    if (c->count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        struct wsl_json *items = realloc(c->items, ncap * sizeof *items);
        if (!items) {
            fail(ps, "out of memory");
            return -1;
        }
        c->items = items;
        if (c->type == WSL_JSON_OBJECT) {
            char **keys = realloc(c->keys, ncap * sizeof *keys);
            if (!keys) {
                fail(ps, "out of memory");
                return -1;
            }
            c->keys = keys;
        }
        *cap = ncap;
    }
    c->items[c->count] = *item;
    if (c->type == WSL_JSON_OBJECT)
        c->keys[c->count] = key;
    c->count++;
    return 0;
}

static int cmp_key_ptr(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* Duplicate keys: sort pointers to the keys and compare neighbours. */
static const char *find_duplicate_key(struct parser *ps, const struct wsl_json *o)
{
    if (o->count < 2)
        return NULL;
    char **idx[o->count > 64 ? 1 : 64];
    char ***v = o->count > 64 ? malloc(o->count * sizeof *v) : idx;
    if (!v) {
        fail(ps, "out of memory");
        return "";
    }
    for (size_t i = 0; i < o->count; i++)
        v[i] = &o->keys[i];
    qsort(v, o->count, sizeof *v, cmp_key_ptr);
    const char *dup = NULL;
    for (size_t i = 1; i < o->count && !dup; i++)
        if (!strcmp(*v[i - 1], *v[i]))
            dup = *v[i];
    if (v != idx)
        free(v);
    return dup;
}

static int parse_value(struct parser *ps, struct wsl_json *out, int depth)
{
    memset(out, 0, sizeof *out);
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail_expected(ps, "a value");
        return -1;
    }
    switch (*ps->p) {
    case 'n':
        out->type = WSL_JSON_NULL;
        return literal(ps, "null");
    case 't':
        out->type = WSL_JSON_BOOL;
        out->boolean = true;
        return literal(ps, "true");
    case 'f':
        out->type = WSL_JSON_BOOL;
        return literal(ps, "false");
    case '"':
        out->type = WSL_JSON_STRING;
        out->string = parse_string(ps);
        return out->string ? 0 : -1;
    case '[':
    case '{': {
        int is_obj = *ps->p == '{';
        char close = is_obj ? '}' : ']';
        if (depth >= WSL_JSON_MAX_DEPTH) {
            fail(ps, "nested deeper than %d levels", WSL_JSON_MAX_DEPTH);
            return -1;
        }
        out->type = is_obj ? WSL_JSON_OBJECT : WSL_JSON_ARRAY;
        ps->p++;
        size_t cap = 0;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return 0;
        }
        for (;;) {
            char *key = NULL;
            skip_ws(ps);
            if (is_obj) {
                if (ps->p >= ps->end || *ps->p != '"') {
                    fail_expected(ps, "a key string");
                    return -1;
                }
                if (!(key = parse_string(ps)))
                    return -1;
                skip_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':') {
                    free(key);
                    fail_expected(ps, "':'");
                    return -1;
                }
                ps->p++;
            }
            struct wsl_json item;
            if (parse_value(ps, &item, depth + 1)) {
                free(key);
                free_value(&item);
                return -1;
            }
            if (push_item(ps, out, &cap, &item, key)) {
                free(key);
                free_value(&item);
                return -1;
            }
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                continue;
            }
            if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                break;
            }
            fail_expected(ps, is_obj ? "',' or '}'" : "',' or ']'");
            return -1;
        }
        if (is_obj) {
            const char *dup = find_duplicate_key(ps, out);
            if (dup) {
                if (*dup)
                    fail(ps, "duplicate key \"%.60s\" in the object ending here", dup);
                return -1;
            }
        }
        return 0;
    }
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
            out->type = WSL_JSON_NUMBER;
            return parse_number(ps, &out->number);
        }
        fail_expected(ps, "a value");
        return -1;
    }
}

static void free_value(struct wsl_json *v)
{
    if (!v)
        return;
    free(v->string);
    for (size_t i = 0; i < v->count; i++) {
        free_value(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

struct wsl_json *wsl_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    struct parser ps = {(const unsigned char *)text, (const unsigned char *)text,
                        (const unsigned char *)text + len, err, errlen, 0};
    if (!text) {
        ps.end = ps.p;
        fail(&ps, "no input");
        return NULL;
    }
    struct wsl_json *root = calloc(1, sizeof *root);
    if (!root) {
        fail(&ps, "out of memory");
        return NULL;
    }
    if (parse_value(&ps, root, 0) == 0) {
        skip_ws(&ps);
        if (ps.p < ps.end)
            fail(&ps, "unexpected data after the value");
    }
    if (ps.failed) {
        wsl_json_free(root);
        return NULL;
    }
    return root;
}

void wsl_json_free(struct wsl_json *v)
{
    if (!v)
        return;
    free_value(v);
    free(v);
}

const struct wsl_json *wsl_json_get(const struct wsl_json *v, const char *key)
{
    if (!v || v->type != WSL_JSON_OBJECT || !key)
        return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (!strcmp(v->keys[i], key))
            return &v->items[i];
    return NULL;
}

const char *wsl_json_type_name(enum wsl_json_type t)
{
    switch (t) {
    case WSL_JSON_NULL: return "null";
    case WSL_JSON_BOOL: return "boolean";
    case WSL_JSON_NUMBER: return "number";
    case WSL_JSON_STRING: return "string";
    case WSL_JSON_ARRAY: return "array";
    case WSL_JSON_OBJECT: return "object";
    }
    return "?";
}
