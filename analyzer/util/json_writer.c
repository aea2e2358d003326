#include "json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void json_init(struct json_writer *w, FILE *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
}

static void newline_indent(struct json_writer *w)
{
    fputc('\n', w->out);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->out);
}

/* Separator and indentation before a value or key. */
static void before_item(struct json_writer *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth == 0)
        return;
    if (w->has_items[w->depth])
        fputc(',', w->out);
    w->has_items[w->depth] = true;
    newline_indent(w);
}

static void begin(struct json_writer *w, char c)
{
    before_item(w);
    fputc(c, w->out);
    if (w->depth + 1 < JSON_MAX_DEPTH)
        w->depth++;
    w->has_items[w->depth] = false;
}

static void end(struct json_writer *w, char c)
{
    bool had = w->has_items[w->depth];
    if (w->depth > 0)
        w->depth--;
    if (had)
        newline_indent(w);
    fputc(c, w->out);
}

void json_begin_object(struct json_writer *w) { begin(w, '{'); }
void json_end_object(struct json_writer *w) { end(w, '}'); }
void json_begin_array(struct json_writer *w) { begin(w, '['); }
void json_end_array(struct json_writer *w) { end(w, ']'); }

void json_key(struct json_writer *w, const char *key)
{
    before_item(w);
    json_write_escaped(w->out, key, strlen(key));
    fputs(": ", w->out);
    w->after_key = true;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if invalid. */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    else if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    /* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void json_write_escaped(FILE *out, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', out);
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            switch (c) {
            case '\n': fputs("\\n", out); break;
            case '\r': fputs("\\r", out); break;
            case '\t': fputs("\\t", out); break;
            case '\b': fputs("\\b", out); break;
            case '\f': fputs("\\f", out); break;
            default: fprintf(out, "\\u%04x", c); break;
            }
            i++;
        } else {
            size_t len = utf8_sequence(s + i, n - i);
            if (len == 0) {
                fputs("\\ufffd", out);
                i++;
            } else {
                fwrite(s + i, 1, len, out);
                i += len;
            }
        }
    }
    fputc('"', out);
}

void json_string_n(struct json_writer *w, const char *s, size_t n)
{
    before_item(w);
    json_write_escaped(w->out, s, n);
}

void json_string(struct json_writer *w, const char *s)
{
    if (!s) {
        json_null(w);
        return;
    }
    json_string_n(w, s, strlen(s));
}

void json_u64(struct json_writer *w, uint64_t v)
{
    before_item(w);
    fprintf(w->out, "%" PRIu64, v);
}

void json_i64(struct json_writer *w, int64_t v)
{
    before_item(w);
    fprintf(w->out, "%" PRId64, v);
}

void json_double(struct json_writer *w, double v)
{
    before_item(w);
    if (isfinite(v))
        fprintf(w->out, "%.15g", v);
    else
        fputs("null", w->out);
}

void json_bool(struct json_writer *w, bool v)
{
    before_item(w);
    fputs(v ? "true" : "false", w->out);
}

void json_null(struct json_writer *w)
{
    before_item(w);
    fputs("null", w->out);
}

void json_key_u64(struct json_writer *w, const char *key, uint64_t v)
{
    json_key(w, key);
    json_u64(w, v);
}

void json_key_i64(struct json_writer *w, const char *key, int64_t v)
{
    json_key(w, key);
    json_i64(w, v);
}

void json_key_double(struct json_writer *w, const char *key, double v)
{
    json_key(w, key);
    json_double(w, v);
}

void json_key_bool(struct json_writer *w, const char *key, bool v)
{
    json_key(w, key);
    json_bool(w, v);
}

void json_key_string(struct json_writer *w, const char *key, const char *s)
{
    json_key(w, key);
    json_string(w, s);
}

/* The key, and null where the value is not known; true where the caller writes the value. */
static bool key_known(struct json_writer *w, const char *key, bool known)
{
    json_key(w, key);
    if (!known)
        json_null(w);
    return known;
}

void json_key_u64_or_null(struct json_writer *w, const char *key, bool known, uint64_t v)
{
    if (key_known(w, key, known))
        json_u64(w, v);
}

void json_key_i64_or_null(struct json_writer *w, const char *key, bool known, int64_t v)
{
    if (key_known(w, key, known))
        json_i64(w, v);
}

void json_key_double_or_null(struct json_writer *w, const char *key, bool known, double v)
{
    if (key_known(w, key, known))
        json_double(w, v);
}

void json_u64_fields(struct json_writer *w, const void *base, const struct json_u64_field *fields, size_t count)
{
    for (size_t i = 0; i < count; i++)
        json_key_u64(w, fields[i].key, json_u64_field_get(base, &fields[i]));
}

void json_finish(struct json_writer *w)
{
    fputc('\n', w->out);
}
