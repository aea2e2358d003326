#include "json_writer.h"

#include <math.h>
#include <string.h>

/* ---- the sink: bytes gathered in a buffer, a full one written with one fwrite ---- */

static void sink_flush(struct json_sink *o)
{
    if (o->len) {
        fwrite(o->buf, 1, o->len, o->out);
        o->len = 0;
    }
}

/* Room for n more bytes (n at most cap), at the returned place; the caller adds what it wrote to len. */
static inline char *sink_reserve(struct json_sink *o, size_t n)
{
    if (o->cap - o->len < n)
        sink_flush(o);
    return o->buf + o->len;
}

static inline void put_char(struct json_sink *o, char c)
{
    if (o->len == o->cap)
        sink_flush(o);
    o->buf[o->len++] = c;
}

static void put_bytes(struct json_sink *o, const void *p, size_t n)
{
    if (n <= o->cap - o->len) {
        memcpy(o->buf + o->len, p, n);
        o->len += n;
        return;
    }
    sink_flush(o);
    if (n >= o->cap) {     /* longer than the buffer: straight to the FILE */
        fwrite(p, 1, n, o->out);
        return;
    }
    memcpy(o->buf, p, n);
    o->len = n;
}

/* Short literal text (a constant's length is folded at compile time). */
#define put_text(o, text) put_bytes((o), (text), sizeof(text) - 1)

/* "00" .. "99": two digits a division by 100 */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

/* The decimal digits of v (as %PRIu64 gives them) ending at end; returns where they start. */
static char *u64_digits(char *end, uint64_t v)
{
    char *p = end;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        memcpy(p, digit_pairs + 2 * r, 2);
    }
    if (v >= 10) {
        p -= 2;
        memcpy(p, digit_pairs + 2 * v, 2);
    } else {
        *--p = (char)('0' + v);
    }
    return p;
}

static void put_u64(struct json_sink *o, uint64_t v)
{
    char digits[20];   /* UINT64_MAX has 20 */
    char *end = digits + sizeof digits, *p = u64_digits(end, v);
    put_bytes(o, p, (size_t)(end - p));
}

static void put_i64(struct json_sink *o, int64_t v)
{
    char digits[20];   /* '-' and INT64_MIN's 19 */
    char *end = digits + sizeof digits;
    char *p = u64_digits(end, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    if (v < 0)
        *--p = '-';
    put_bytes(o, p, (size_t)(end - p));
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

/* Printable ASCII that JSON takes as it is: 0x20-0x7e but the quote and the backslash (a table: one
 * load a byte, where a key's or a name's plain characters are most of what is written). */
static const unsigned char plain_ascii_table[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  /* 0x10 */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  /* 0x20 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  /* 0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,  /* 0x50 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,  /* 0x70 */
    /* 0x80-0xff: UTF-8, checked apart */
};

static inline bool plain_ascii(unsigned char c) { return plain_ascii_table[c]; }

/* s quoted: runs of plain ASCII and valid UTF-8 copied whole, the rest escaped, invalid UTF-8 as U+FFFD. */
static void put_escaped(struct json_sink *o, const unsigned char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    put_char(o, '"');
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        for (;;) {
            while (i < n && plain_ascii(s[i]))
                i++;
            if (i == n || s[i] < 0x80)
                break;
            size_t len = utf8_sequence(s + i, n - i);
            if (len == 0)
                break;
            i += len;
        }
        put_bytes(o, s + run, i - run);
        if (i == n)
            break;
        unsigned char c = s[i++];
        char *p = sink_reserve(o, 6);
        if (c == '"' || c == '\\') {
            p[0] = '\\';
            p[1] = (char)c;
            o->len += 2;
        } else if (c >= 0x80) {   /* not valid UTF-8 */
            memcpy(p, "\\ufffd", 6);
            o->len += 6;
        } else {                  /* a control character or 0x7f */
            char e = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : c == '\b' ? 'b' : c == '\f' ? 'f' : 0;
            if (e) {
                p[0] = '\\';
                p[1] = e;
                o->len += 2;
            } else {
                memcpy(p, "\\u00", 4);
                p[4] = hex[c >> 4];
                p[5] = hex[c & 15];
                o->len += 6;
            }
        }
    }
    put_char(o, '"');
}

void json_write_escaped(FILE *out, const char *s, size_t n)
{
    char buf[512];
    struct json_sink o = {.out = out, .buf = buf, .len = 0, .cap = sizeof buf};
    put_escaped(&o, (const unsigned char *)s, n);
    sink_flush(&o);
}

/* ---- the writer: layout ---- */

void json_init(struct json_writer *w, FILE *out)
{
    w->sink = (struct json_sink){.out = out, .buf = w->space, .len = 0, .cap = sizeof w->space};
    w->depth = 0;
    memset(w->has_items, 0, sizeof w->has_items);
    w->after_key = false;
}

static void newline_indent(struct json_writer *w)
{
    size_t n = 1 + 2 * (size_t)w->depth;   /* at most 63: depth stays below JSON_MAX_DEPTH */
    char *p = sink_reserve(&w->sink, n);
    p[0] = '\n';
    memset(p + 1, ' ', n - 1);
    w->sink.len += n;
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
        put_char(&w->sink, ',');
    w->has_items[w->depth] = true;
    newline_indent(w);
}

static void begin(struct json_writer *w, char c)
{
    before_item(w);
    put_char(&w->sink, c);
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
    put_char(&w->sink, c);
}

void json_begin_object(struct json_writer *w) { begin(w, '{'); }
void json_end_object(struct json_writer *w) { end(w, '}'); }
void json_begin_array(struct json_writer *w) { begin(w, '['); }
void json_end_array(struct json_writer *w) { end(w, ']'); }

void json_key(struct json_writer *w, const char *key)
{
    before_item(w);
    put_escaped(&w->sink, (const unsigned char *)key, strlen(key));
    put_text(&w->sink, ": ");
    w->after_key = true;
}

void json_string_n(struct json_writer *w, const char *s, size_t n)
{
    before_item(w);
    put_escaped(&w->sink, (const unsigned char *)s, n);
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
    put_u64(&w->sink, v);
}

void json_i64(struct json_writer *w, int64_t v)
{
    before_item(w);
    put_i64(&w->sink, v);
}

void json_double(struct json_writer *w, double v)
{
    before_item(w);
    if (!isfinite(v)) {
        put_text(&w->sink, "null");
        return;
    }
    /* %.15g is at most 22 characters ("-1.23456789012345e-308"); snprintf wants room for its NUL */
    enum { DOUBLE_ROOM = 32 };
    char *p = sink_reserve(&w->sink, DOUBLE_ROOM);
    int len = snprintf(p, DOUBLE_ROOM, "%.15g", v);
    if (len > 0 && len < DOUBLE_ROOM)
        w->sink.len += (size_t)len;
}

void json_bool(struct json_writer *w, bool v)
{
    before_item(w);
    if (v)
        put_text(&w->sink, "true");
    else
        put_text(&w->sink, "false");
}

void json_null(struct json_writer *w)
{
    before_item(w);
    put_text(&w->sink, "null");
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

void json_flush(struct json_writer *w)
{
    sink_flush(&w->sink);
}

void json_finish(struct json_writer *w)
{
    put_char(&w->sink, '\n');
    sink_flush(&w->sink);
}
