/*
 * A small streaming JSON writer: commas and indentation are tracked here, and
 * strings are escaped (quotes, backslashes, control characters) with invalid
 * UTF-8 replaced by U+FFFD, so any bytes from a trace give valid JSON.
 *
 * The writer gathers its text in its own buffer and hands it to the FILE a full buffer at a
 * time (one fwrite, not a locked stdio call per character or number); json_finish and json_flush
 * put what is left on the FILE, so a write error shows in the FILE's ferror/fclose as before.
 */
#ifndef WSLSHIM_JSON_WRITER_H
#define WSLSHIM_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32
#define JSON_BUFFER_SIZE 65536

/* Text on its way to a FILE: len bytes of buf (cap bytes) not yet written. */
struct json_sink {
    FILE *out;
    char *buf;
    size_t len, cap;
};

/* Big (the buffer is inside): one a document, on the stack or static; not to be copied. */
struct json_writer {
    struct json_sink sink;          /* sink.buf is space */
    int depth;
    bool has_items[JSON_MAX_DEPTH]; /* the container at this depth has an item already */
    bool after_key;                 /* a key was written: the value follows on the same line */
    char space[JSON_BUFFER_SIZE];
};

void json_init(struct json_writer *w, FILE *out);
void json_begin_object(struct json_writer *w);
void json_end_object(struct json_writer *w);
void json_begin_array(struct json_writer *w);
void json_end_array(struct json_writer *w);
void json_key(struct json_writer *w, const char *key);
void json_string(struct json_writer *w, const char *s);
void json_string_n(struct json_writer *w, const char *s, size_t n);
void json_u64(struct json_writer *w, uint64_t v);
void json_i64(struct json_writer *w, int64_t v);
void json_double(struct json_writer *w, double v);  /* non-finite values as null */
void json_bool(struct json_writer *w, bool v);
void json_null(struct json_writer *w);

/* A key and its value, the line a report's field takes. json_key_string writes NULL as null. */
void json_key_u64(struct json_writer *w, const char *key, uint64_t v);
void json_key_i64(struct json_writer *w, const char *key, int64_t v);
void json_key_double(struct json_writer *w, const char *key, double v);
void json_key_bool(struct json_writer *w, const char *key, bool v);
void json_key_string(struct json_writer *w, const char *key, const char *s);
/* The value where known holds, else null. */
void json_key_u64_or_null(struct json_writer *w, const char *key, bool known, uint64_t v);
void json_key_i64_or_null(struct json_writer *w, const char *key, bool known, int64_t v);
void json_key_double_or_null(struct json_writer *w, const char *key, bool known, double v);

/*
 * A table of a struct's uint64_t counters, one row a key: a section whose fields are plain
 * counters is written from it, so that adding one is adding a row.
 *
 *     static const struct json_u64_field fields[] = {
 *         JSON_U64_FIELD(struct wsl_io_counts, "read_ns", read_time), ...
 *     };
 *     JSON_U64_FIELDS(w, counts, fields);
 *
 * JSON_U64_FIELD does not compile unless the member is a uint64_t.
 */
struct json_u64_field {
    const char *key;
    size_t offset;
};
#define JSON_U64_FIELD(type, key, member) {(key), _Generic(((type *)0)->member, uint64_t: offsetof(type, member))}
/* The counter a row names in base. */
static inline uint64_t json_u64_field_get(const void *base, const struct json_u64_field *field)
{
    return *(const uint64_t *)(const void *)((const char *)base + field->offset);
}
/* Each row's key and its counter in base, in the table's order. */
void json_u64_fields(struct json_writer *w, const void *base, const struct json_u64_field *fields, size_t count);
#define JSON_U64_FIELDS(w, base, table) json_u64_fields((w), (base), (table), sizeof(table) / sizeof((table)[0]))

/* Ends the document with a newline, and writes it all to the FILE (json_flush). */
void json_finish(struct json_writer *w);
/* Hands what the writer holds to its FILE (one fwrite), before the FILE is used otherwise. */
void json_flush(struct json_writer *w);

/* Writes s as a quoted, escaped JSON string (no layout) straight to a FILE, for writers that
 * format the rest themselves (the Chrome timeline): the same text json_string_n gives. */
void json_write_escaped(FILE *out, const char *s, size_t n);

#endif /* WSLSHIM_JSON_WRITER_H */
