/* The JSON writer: layout, and escaping that keeps any bytes valid JSON. */
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "unit_test.h"

static char *escaped(const char *s, size_t n)
{
    char *out = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&out, &size);
    json_write_escaped(f, s, n);
    fclose(f);
    return out;
}

static int check_escape(const char *in, size_t n, const char *want)
{
    char *got = escaped(in, n);
    CHECKF(strcmp(got, want) == 0, "escaping gave %s, expected %s", got, want);
    free(got);
    return 0;
}

/* A document written into memory. */
struct doc {
    char *text;
    size_t size;
    FILE *f;
    struct json_writer w;
};

static struct json_writer *doc_begin(struct doc *d)
{
    d->text = NULL;
    d->size = 0;
    d->f = open_memstream(&d->text, &d->size);
    json_init(&d->w, d->f);
    return &d->w;
}

/* Ends the document; the text is the caller's to free. */
static char *doc_end(struct doc *d)
{
    json_finish(&d->w);
    fclose(d->f);
    return d->text;
}

int test_json_escaping(void)
{
    static const struct {
        const char *in;
        size_t n;
        const char *want;
    } cases[] = {
        {"plain", 5, "\"plain\""},
        {"a\"b\\c", 5, "\"a\\\"b\\\\c\""},
        {"\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\""},
        {"\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\""},
        {"nul\0in", 6, "\"nul\\u0000in\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
        {"\xff", 1, "\"\\ufffd\""},                        /* never valid */
        {"\xc3", 1, "\"\\ufffd\""},                        /* cut short */
        {"\xc0\xaf", 2, "\"\\ufffd\\ufffd\""},             /* overlong '/' */
        {"\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""},  /* a UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* beyond U+10FFFF */
        {"\xe2\x28\xa1", 3, "\"\\ufffd(\\ufffd\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (check_escape(cases[i].in, cases[i].n, cases[i].want))
            return 1;

    struct doc d;
    struct json_writer *w = doc_begin(&d);
    json_begin_object(w);
    json_key(w, "a");
    json_u64(w, UINT64_MAX);
    json_key(w, "b");
    json_begin_array(w);
    json_i64(w, INT64_MIN);
    json_bool(w, true);
    json_null(w);
    json_double(w, 0.5);
    json_double(w, 1.0 / 0.0);
    json_end_array(w);
    json_key(w, "empty");
    json_begin_object(w);
    json_end_object(w);
    json_key(w, "k\"ey");
    json_string(w, NULL);
    json_end_object(w);
    char *out = doc_end(&d);
    const char *want = "{\n  \"a\": 18446744073709551615,\n  \"b\": [\n    -9223372036854775808,\n    true,\n"
                       "    null,\n    0.5,\n    null\n  ],\n  \"empty\": {},\n  \"k\\\"ey\": null\n}\n";
    CHECKF(strcmp(out, want) == 0, "got:\n%s", out);
    free(out);
    return 0;
}

/* The one-line fields and a table of counters write what json_key and the value calls would. */
struct counters {
    uint64_t a;
    uint32_t skipped;       /* not in the table */
    uint64_t b, c;
};

static const struct json_u64_field counter_fields[] = {
    JSON_U64_FIELD(struct counters, "c_first", c),
    JSON_U64_FIELD(struct counters, "a", a),
    JSON_U64_FIELD(struct counters, "b", b),
};

int test_json_fields(void)
{
    struct doc d;
    struct json_writer *w = doc_begin(&d);
    json_begin_object(w);
    json_key_u64(w, "u", 7);
    json_key_i64(w, "i", -3);
    json_key_double(w, "d", 0.25);
    json_key_bool(w, "b", false);
    json_key_string(w, "s", "x");
    json_key_string(w, "s_null", NULL);
    json_key_u64_or_null(w, "u_known", true, 1);
    json_key_u64_or_null(w, "u_not", false, 1);
    json_key_i64_or_null(w, "i_known", true, -1);
    json_key_i64_or_null(w, "i_not", false, -1);
    json_key_double_or_null(w, "d_known", true, 1.5);
    json_key_double_or_null(w, "d_not", false, 1.5);
    json_key(w, "counters");
    json_begin_object(w);
    struct counters c = {.a = 1, .skipped = 99, .b = UINT64_MAX, .c = 3};
    JSON_U64_FIELDS(w, &c, counter_fields);
    json_end_object(w);
    json_end_object(w);
    char *out = doc_end(&d);
    const char *want = "{\n  \"u\": 7,\n  \"i\": -3,\n  \"d\": 0.25,\n  \"b\": false,\n  \"s\": \"x\",\n"
                       "  \"s_null\": null,\n  \"u_known\": 1,\n  \"u_not\": null,\n  \"i_known\": -1,\n"
                       "  \"i_not\": null,\n  \"d_known\": 1.5,\n  \"d_not\": null,\n  \"counters\": {\n"
                       "    \"c_first\": 3,\n    \"a\": 1,\n    \"b\": 18446744073709551615\n  }\n}\n";
    CHECKF(strcmp(out, want) == 0, "got:\n%s", out);
    CHECKF(json_u64_field_get(&c, &counter_fields[2]) == UINT64_MAX, "the table's row b read %llu",
           (unsigned long long)json_u64_field_get(&c, &counter_fields[2]));
    free(out);
    return 0;
}

/* Appends text to a growing string (the expected text, built from literal pieces). */
struct text {
    char *s;
    size_t len, cap;
};

static void text_add(struct text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = 0;
}
#define TEXT_ADD(t, lit) text_add((t), (lit), sizeof(lit) - 1)

/* Numbers as %PRIu64, %PRId64 and %.15g give them, and strings longer than the writer's buffer
 * with escapes falling on each side of its boundary; the expected text is written out here. */
int test_json_buffered(void)
{
    struct doc d;
    struct json_writer *w = doc_begin(&d);
    json_begin_array(w);
    static const uint64_t u[] = {0, 9, 10, 99, 100, 101, 1000000000000000000u, 10000000000000000000u,
                                 12345678901234567890u, UINT64_MAX};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        json_u64(w, u[i]);
    static const int64_t s[] = {0, -1, -10, -99, -100, -1234567, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        json_i64(w, s[i]);
    static const double f[] = {0.0, -0.0, 0.1, 1.0 / 3, -2.5, 1e300, 5e-324, 123456789012345678.0, 1e15, 1e16};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        json_double(w, f[i]);
    json_double(w, 0.0 / 0.0);
    json_double(w, -1.0 / 0.0);
    json_string_n(w, "q\"b\\s/\x7f\x1b\xe2\x82\xac\xe2\x82", 13);
    json_key_string(w, "not a key in an array", "x"); /* the layout does not judge */
    json_end_array(w);
    json_flush(w);
    fflush(d.f);
    const char *want_numbers =
        "[\n  0,\n  9,\n  10,\n  99,\n  100,\n  101,\n  1000000000000000000,\n  10000000000000000000,\n"
        "  12345678901234567890,\n  18446744073709551615,\n"
        "  0,\n  -1,\n  -10,\n  -99,\n  -100,\n  -1234567,\n  9223372036854775807,\n  -9223372036854775808,\n"
        "  -9223372036854775807,\n"
        "  0,\n  -0,\n  0.1,\n  0.333333333333333,\n  -2.5,\n  1e+300,\n  4.94065645841247e-324,\n  1.23456789012346e+17,\n"
        "  1e+15,\n  1e+16,\n  null,\n  null,\n"
        "  \"q\\\"b\\\\s/\\u007f\\u001b\xe2\x82\xac\\ufffd\\ufffd\",\n  \"not a key in an array\": \"x\"\n]";
    /* json_flush put it all on the FILE (nothing is left in the writer) */
    CHECKF(d.size == strlen(want_numbers) && memcmp(d.text, want_numbers, d.size) == 0, "got:\n%.*s", (int)d.size,
           d.text);
    char *out = doc_end(&d);
    free(out);

    /* A unit of 8 bytes that escapes to 24: plain, quote, control, 2-byte UTF-8, 0x7f, invalid. */
    static const char unit[] = "ab\"\x01\xc3\xa9\x7f\xff";
    static const char unit_escaped[] = "ab\\\"\\u0001\xc3\xa9\\u007f\\ufffd";
    enum { UNITS = 3001 }; /* 72 KB escaped: longer than the buffer */
    char *in = malloc(UNITS * 8 + 1);
    CHECK(in);
    for (size_t i = 0; i < UNITS; i++)
        memcpy(in + i * 8, unit, 8);
    enum { PLAIN = 200000 }; /* plain text longer than the buffer */
    char *plain = malloc(PLAIN);
    CHECK(plain);
    memset(plain, 'x', PLAIN);

    struct text want = {0};
    w = doc_begin(&d);
    json_begin_object(w);
    TEXT_ADD(&want, "{");
    char key[40];
    for (int k = 0; k < 24; k++) { /* keys of 1 to 24 characters move the buffer's edge through the unit */
        memset(key, 'k', (size_t)k + 1);
        key[k + 1] = 0;
        json_key(w, key);
        json_string_n(w, in, UNITS * 8);
        if (k)
            TEXT_ADD(&want, ",");
        TEXT_ADD(&want, "\n  \"");
        text_add(&want, key, (size_t)k + 1);
        TEXT_ADD(&want, "\": \"");
        for (size_t i = 0; i < UNITS; i++)
            TEXT_ADD(&want, unit_escaped);
        TEXT_ADD(&want, "\"");
    }
    json_key(w, "plain");
    json_string_n(w, plain, PLAIN);
    TEXT_ADD(&want, ",\n  \"plain\": \"");
    text_add(&want, plain, PLAIN);
    TEXT_ADD(&want, "\"");
    json_end_object(w);
    TEXT_ADD(&want, "\n}\n");
    out = doc_end(&d);
    CHECKF(d.size == want.len && memcmp(out, want.s, want.len) == 0, "long strings: %zu bytes, expected %zu",
           d.size, want.len);
    free(out);

    /* The same through the FILE-level escaping (its own smaller buffer). */
    want.len = 0;
    TEXT_ADD(&want, "\"");
    for (size_t i = 0; i < UNITS; i++)
        TEXT_ADD(&want, unit_escaped);
    TEXT_ADD(&want, "\"");
    out = escaped(in, UNITS * 8);
    CHECKF(strcmp(out, want.s) == 0, "json_write_escaped of a long string: %zu bytes, expected %zu", strlen(out),
           want.len);
    free(out);
    free(want.s);
    free(plain);
    free(in);
    return 0;
}
