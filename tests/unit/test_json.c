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
